#include "fanout.h"

#include <algorithm>

namespace dcpsim::sim::detail {
namespace {

constexpr double kFlagBytes = 8.0;

}  // namespace

FanOut::FanOut(StepGraph& step, int from, std::string_view what, int step_index)
    : step_(step), from_(from), what_(what), step_index_(step_index), bundle_(step.bundle_flows) {}

NodeId FanOut::transfer(int to, double bytes, double payload, bool inter, int peers) {
  Platform& pf = step_.platform;
  auto* dst = to >= 0 ? pf.gpu(to) : pf.nvswitch(-1 - to);
  const NodeId t = step_.graph.transfer(pf.gpu(from_), dst, bytes);
  step_.transfers.push_back({t, from_, to >= 0 ? to : -1, step_index_, what_, payload, inter, peers});
  transfers_.push_back(t);
  return t;
}

NodeId FanOut::flag(NodeId data, int to, double bytes, bool inter) {
  ActivityGraph& g = step_.graph;
  Platform& pf = step_.platform;
  // A release fence, then the flag store; its route's own latency is part of the flag transfer.
  const double fence = std::max(0.0, models::flag_write_latency(step_.profile) - pf.route_latency(inter));
  if (bundle_) {
    // A bundle's flag stands for one 8-byte store per peer behind kilobytes of data each: its share of the
    // uplink is negligible (under a nanosecond at W = 16), so it is a latency: fence, route, bytes at the
    // link's bandwidth.
    const double bandwidth = inter ? pf.internode_bandwidth() : pf.nvlink_bandwidth();
    const NodeId f = g.latency(fence + pf.route_latency(inter) + bytes / bandwidth);
    g.after(data, f);
    transfers_.push_back(f);
    return f;
  }
  auto* dst = to >= 0 ? pf.gpu(to) : pf.nvswitch(-1 - to);
  const NodeId f = g.transfer(pf.gpu(from_), dst, bytes);
  g.after(g.after_latency(data, fence), f);
  transfers_.push_back(f);
  return f;
}

FanOut::Sent FanOut::send(const Send& s) {
  ActivityGraph& g = step_.graph;
  Platform& pf = step_.platform;
  const int width = step_.peers_in_flight;
  const std::size_t count = s.peers.size();
  Sent out;
  out.data.assign(count, -1);
  if (s.flags) {
    out.flag.assign(count, -1);
    out.flag_span.assign(count, -1);
  }
  auto add_flag_span = [&](NodeId f, bool inter, std::string name, double bytes) {
    return step_.add_span({from_, inter ? "net" : "nvlink", traces::v1::EVENT_KIND_SIGNAL, std::move(name), f,
                           f, bytes, s.rows_begin, s.rows_end});
  };

  // Transfer k of this rank (counting every send) waits for transfer k − W.
  const std::size_t base = carried_.size();
  carried_.resize(base + count, -1);
  auto wait_window = [&](NodeId node, const std::vector<std::size_t>& members) {
    std::vector<NodeId> before;
    for (std::size_t i : members) {
      const std::size_t k = base + i;
      if (k >= static_cast<std::size_t>(width)) before.push_back(carried_[k - width]);
    }
    std::sort(before.begin(), before.end());
    before.erase(std::unique(before.begin(), before.end()), before.end());
    for (NodeId b : before) g.after(b, node);
  };

  if (!bundle_) {
    for (std::size_t i = 0; i < count; ++i) {
      const int to = s.peers[i];
      const bool inter = !pf.same_domain(from_, to);
      const NodeId data = transfer(to, s.bytes, s.payload, inter, 0);
      g.after(s.gate(to), data);
      wait_window(data, {i});
      carried_[base + i] = data;
      out.data[i] = data;
      if (s.flags) {
        out.flag[i] = flag(data, to, kFlagBytes, inter);
        out.flag_span[i] =
            add_flag_span(out.flag[i], inter, "flag to rank " + std::to_string(to), kFlagBytes);
      }
    }
    return out;
  }

  // Bundles: the peers of this send that fall in one window of W (counting every send), per destination
  // domain.
  for (std::size_t w0 = 0; w0 < count;) {
    const std::size_t k0 = base + w0;
    const std::size_t w1 = std::min(count, w0 + (width - k0 % width));
    std::vector<std::pair<int, std::vector<std::size_t>>> by_domain;  // in order of first appearance
    for (std::size_t i = w0; i < w1; ++i) {
      const int d = pf.domain_of(s.peers[i]);
      auto it = std::find_if(by_domain.begin(), by_domain.end(), [d](const auto& e) { return e.first == d; });
      if (it == by_domain.end()) {
        by_domain.push_back({d, {}});
        it = by_domain.end() - 1;
      }
      it->second.push_back(i);
    }
    for (const auto& [domain, members] : by_domain) {
      const int first = s.peers[members.front()];
      const bool inter = !pf.same_domain(from_, first);
      const double k = static_cast<double>(members.size());
      const NodeId data =
          transfer(-1 - domain, k * s.bytes, k * s.payload, inter, static_cast<int>(members.size()));
      g.after(s.gate(first), data);
      wait_window(data, members);
      NodeId f = -1;
      int span = -1;
      if (s.flags) {
        f = flag(data, -1 - domain, k * kFlagBytes, inter);
        const int last = s.peers[members.back()];
        span = add_flag_span(f, inter,
                             members.size() == 1
                                 ? "flag to rank " + std::to_string(first)
                                 : "flags to " + std::to_string(members.size()) + " ranks (" +
                                       std::to_string(first) + " … " + std::to_string(last) + ")",
                             k * kFlagBytes);
      }
      for (std::size_t i : members) {
        carried_[base + i] = data;
        out.data[i] = data;
        if (s.flags) {
          out.flag[i] = f;
          out.flag_span[i] = span;
        }
      }
    }
    w0 = w1;
  }
  return out;
}

}  // namespace dcpsim::sim::detail
