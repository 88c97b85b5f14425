#include "platform.h"

#include <string>

#include <simgrid/s4u.hpp>

namespace dcpsim::sim::detail {
namespace {

namespace sg4 = simgrid::s4u;
using Direction = sg4::LinkInRoute::Direction;

// Real values replace these before any scenario runs (configure()).
constexpr double kPlaceholderBandwidth = 1e9;

}  // namespace

Platform::Platform(int domain_size, int gpus) : domain_size_(domain_size) {
  const std::string prefix = "d" + std::to_string(domain_size) + ".";
  auto* zone = sg4::create_full_zone(prefix + "zone");
  zone->set_parent(sg4::Engine::get_instance()->get_netzone_root());

  const int domains = (gpus + domain_size - 1) / domain_size;
  for (int i = 0; i < gpus; ++i) {
    const std::string id = std::to_string(i);
    // Many cores: the CPU's launch work and the stream's kernels on one GPU host never slow each other down.
    gpus_.push_back(zone->create_host(prefix + "gpu" + id, kHostSpeed)->set_core_count(64));
    nvlink_.push_back(zone->create_split_duplex_link(prefix + "nvlink" + id, kPlaceholderBandwidth));
    nic_.push_back(zone->create_split_duplex_link(prefix + "nic" + id, kPlaceholderBandwidth));
    // The GPU's own ports into its NVSwitch and into the fabric: FATPIPE, so they never limit the sum of
    // flows; one per GPU, so SimGrid's max-min system splits into one part per GPU for switch-bound flows.
    switch_ports_.push_back(zone->create_link(prefix + "nvswitch-port" + id, kPlaceholderBandwidth)
                                ->set_sharing_policy(sg4::Link::SharingPolicy::FATPIPE));
    fabric_ports_.push_back(zone->create_link(prefix + "fabric-port" + id, kPlaceholderBandwidth)
                                ->set_sharing_policy(sg4::Link::SharingPolicy::FATPIPE));
  }
  for (int d = 0; d < domains; ++d) {
    const std::string id = std::to_string(d);
    switches_.push_back(zone->create_host(prefix + "nvswitch" + id, kHostSpeed));
  }
  for (int a = 0; a < gpus; ++a) {
    for (int b = 0; b < gpus; ++b) {
      if (a == b) continue;
      auto* from = same_domain(a, b) ? nvlink_[a] : nic_[a];
      auto* to = same_domain(a, b) ? nvlink_[b] : nic_[b];
      zone->add_route(gpus_[a]->get_netpoint(), gpus_[b]->get_netpoint(), nullptr, nullptr,
                      {sg4::LinkInRoute(from, Direction::UP), sg4::LinkInRoute(to, Direction::DOWN)}, false);
    }
    auto* sw = switches_[domain_of(a)];
    auto* port = switch_ports_[a];
    zone->add_route(gpus_[a]->get_netpoint(), sw->get_netpoint(), nullptr, nullptr,
                    {sg4::LinkInRoute(nvlink_[a], Direction::UP), sg4::LinkInRoute(port)}, false);
    zone->add_route(sw->get_netpoint(), gpus_[a]->get_netpoint(), nullptr, nullptr,
                    {sg4::LinkInRoute(port), sg4::LinkInRoute(nvlink_[a], Direction::DOWN)}, false);
    // Bundled sends to another domain leave through the NIC and end at that domain's NVSwitch.
    for (int d = 0; d < domains; ++d) {
      if (d == domain_of(a)) continue;
      zone->add_route(gpus_[a]->get_netpoint(), switches_[d]->get_netpoint(), nullptr, nullptr,
                      {sg4::LinkInRoute(nic_[a], Direction::UP), sg4::LinkInRoute(fabric_ports_[a])}, false);
    }
  }
  zone->seal();
}

void Platform::configure(const models::HardwareProfile& profile, int ranks) {
  const double nvlink_bw = profile.nvlink.measured_bandwidth.si();
  const double hop_s = profile.nvlink.hop_latency.si();
  const double net_bw = profile.internode.bandwidth.si();
  const double net_s = profile.internode.latency.si();
  if (nvlink_bw != nvlink_bw_ || hop_s != nvlink_hop_s_ || net_bw != internode_bw_ || net_s != internode_s_) {
    nvlink_bw_ = nvlink_bw;
    nvlink_hop_s_ = hop_s;
    internode_bw_ = net_bw;
    internode_s_ = net_s;
    configured_ranks_ = 0;
  }
  // Each route has two links, so each carries half of the route's latency.
  for (int i = configured_ranks_; i < ranks; ++i) {
    for (auto* link : {nvlink_[i]->get_link_up(), nvlink_[i]->get_link_down()}) {
      link->set_bandwidth(nvlink_bw_);
      link->set_latency(nvlink_hop_s_ / 2);
    }
    // A profile without an inter-node fabric never routes over the NICs (Simulator refuses such groups).
    for (auto* link : {nic_[i]->get_link_up(), nic_[i]->get_link_down()}) {
      link->set_bandwidth(internode_bw_ > 0 ? internode_bw_ : kPlaceholderBandwidth);
      link->set_latency(internode_s_ / 2);
    }
    switch_ports_[i]->set_bandwidth(nvlink_bw_);
    switch_ports_[i]->set_latency(nvlink_hop_s_ / 2);
    fabric_ports_[i]->set_bandwidth(internode_bw_ > 0 ? internode_bw_ : kPlaceholderBandwidth);
    fabric_ports_[i]->set_latency(internode_s_ / 2);
  }
  if (ranks > configured_ranks_) configured_ranks_ = ranks;
}

}  // namespace dcpsim::sim::detail
