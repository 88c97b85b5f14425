#pragma once
// The simulated machine: GPUs in NVLink domains behind an NVSwitch, one NVLink port and one NIC per GPU.
//
// Each GPU has a split-duplex NVLink port (one link per direction) to its domain's NVSwitch and a
// split-duplex NIC into the inter-node fabric. A transfer between GPUs of one domain crosses the sender's
// NVLink uplink and the receiver's downlink; between domains, the two NICs (rail-optimised fabric, no
// oversubscription). Each domain also has an NVSwitch host for NVLS collectives, reached through the GPU's
// NVLink port plus the GPU's own switch port, which never limits the sum of flows (FATPIPE); it keeps every
// route two links long, so with network/weight-S large every flow on a link gets an equal share whatever its
// route's latency. Bundled all-pairs sends (sim/src/fanout.h) end at a domain's NVSwitch: from a GPU of that
// domain through its NVLink uplink and switch port, from another domain through its NIC uplink and its fabric
// port (FATPIPE, half the inter-node latency), so a bundle crosses the sender's uplink with the latency of a
// GPU-to-GPU route. The ports are per GPU, not per switch, so that flows into a switch from different GPUs
// share no SimGrid constraint: max-min then re-solves only the part of the system an event touched.
//
// The structure is fixed when built (SimGrid cannot change routes after sealing); bandwidths and latencies
// are set from the profile before every scenario.
#include <vector>

#include <simgrid/forward.h>

#include "dcpsim/models/profile.h"

namespace dcpsim::sim::detail {

class Platform {
 public:
  // Builds the zone under SimGrid's root zone; only before the engine is sealed.
  Platform(int domain_size, int gpus);

  int gpus() const { return static_cast<int>(gpus_.size()); }
  int domain_size() const { return domain_size_; }
  int domain_of(int gpu) const { return gpu / domain_size_; }
  bool same_domain(int a, int b) const { return domain_of(a) == domain_of(b); }

  simgrid::s4u::Host* gpu(int index) const { return gpus_[index]; }
  simgrid::s4u::Host* nvswitch(int domain) const { return switches_[domain]; }

  // Sets the links of the first `ranks` GPUs (and their switches) from the profile.
  void configure(const models::HardwareProfile& profile, int ranks);

  // One-way latency of a route between two GPUs (or a GPU and its switch) as configured.
  double gpu_latency(int a, int b) const { return same_domain(a, b) ? nvlink_hop_s_ : internode_s_; }
  double route_latency(bool inter_node) const { return inter_node ? internode_s_ : nvlink_hop_s_; }
  double switch_latency() const { return nvlink_hop_s_; }
  double nvlink_bandwidth() const { return nvlink_bw_; }
  double internode_bandwidth() const { return internode_bw_; }

 private:
  int domain_size_ = 1;
  std::vector<simgrid::s4u::Host*> gpus_;
  std::vector<simgrid::s4u::Host*> switches_;
  std::vector<simgrid::s4u::SplitDuplexLink*> nvlink_;
  std::vector<simgrid::s4u::SplitDuplexLink*> nic_;
  std::vector<simgrid::s4u::Link*> switch_ports_;
  std::vector<simgrid::s4u::Link*> fabric_ports_;
  int configured_ranks_ = 0;
  double nvlink_bw_ = -1.0;
  double nvlink_hop_s_ = -1.0;
  double internode_bw_ = -1.0;
  double internode_s_ = -1.0;
};

// Host speed in flop/s: a power of two, so that seconds × speed and back are exact.
inline constexpr double kHostSpeed = 1099511627776.0;  // 2^40

}  // namespace dcpsim::sim::detail
