#include "fanout.h"

#include <algorithm>

namespace dcpsim::sim::detail {

const models::HardwareProfile& FanOut::profile() const {
  return step_.profile;
}

namespace {

constexpr double kFlagBytes = 8.0;

}  // namespace

FanOut::FanOut(StepGraph& step, int from, std::string_view what, int step_index)
    : step_(step), from_(from), what_(what), step_index_(step_index), bundle_(step.bundle_flows) {}

NodeId FanOut::transfer(int to, double bytes, double payload, bool inter, int peers) {
  Platform& pf = step_.platform;
  NodeId t = -1;
  if (to < 0 && step_.pipes) {
    // A bundle into a switch port contends for the sender's uplink alone: a pipe (activity_graph.h).
    const int pipe = step_.graph.pipe(from_, inter, inter ? pf.internode_bandwidth() : pf.nvlink_bandwidth(),
                                      pf.route_latency(inter));
    t = step_.graph.pipe_transfer(pipe, bytes, -1);
  } else {
    auto* dst = to >= 0 ? pf.gpu(to) : pf.nvswitch(-1 - to);
    t = step_.graph.transfer(pf.gpu(from_), dst, bytes, from_, to >= 0 ? to : -1);
  }
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
  const NodeId f = g.transfer(pf.gpu(from_), dst, bytes, from_, to >= 0 ? to : -1);
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
  // Flag spans are named when the trace is written (trace_output.cc): most steps are never traced.
  auto add_flag_span = [&](NodeId f, bool inter, int first, int last, int peers, double bytes) {
    Span span{
        from_,     inter ? "net" : "nvlink", traces::v1::EVENT_KIND_SIGNAL, {}, f, f, bytes, s.rows_begin,
        s.rows_end};
    span.flag_first = first;
    span.flag_last = last;
    span.flag_peers = peers;
    return step_.add_span(std::move(span));
  };

  // Transfer k of this rank (counting every send) waits for transfer k − W.
  const std::size_t base = carried_.size();
  carried_.resize(base + count, -1);
  auto wait_window = [&](NodeId node, const std::vector<std::size_t>& members) {
    std::vector<NodeId>& before = scratch_before_;
    before.clear();
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
      scratch_one_.assign(1, i);
      wait_window(data, scratch_one_);
      carried_[base + i] = data;
      out.data[i] = data;
      if (s.flags) {
        out.flag[i] = flag(data, to, kFlagBytes, inter);
        out.flag_span[i] = add_flag_span(out.flag[i], inter, to, to, 1, kFlagBytes);
      }
    }
    return out;
  }

  // Bundles: the peers of this send that fall in one window of W (counting every send), per destination
  // domain.
  for (std::size_t w0 = 0; w0 < count;) {
    const std::size_t k0 = base + w0;
    const std::size_t w1 = std::min(count, w0 + (width - k0 % width));
    // Peers by destination domain, in order of first appearance (scratch vectors reused across calls).
    std::size_t domains = 0;
    for (std::size_t i = w0; i < w1; ++i) {
      const int d = pf.domain_of(s.peers[i]);
      std::size_t j = 0;
      while (j < domains && scratch_domains_[j].first != d) ++j;
      if (j == domains) {
        if (scratch_domains_.size() == domains) scratch_domains_.emplace_back();
        scratch_domains_[j].first = d;
        scratch_domains_[j].second.clear();
        ++domains;
      }
      scratch_domains_[j].second.push_back(i);
    }
    for (std::size_t j = 0; j < domains; ++j) {
      const int domain = scratch_domains_[j].first;
      const std::vector<std::size_t>& members = scratch_domains_[j].second;
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
        span = add_flag_span(f, inter, first, s.peers[members.back()], static_cast<int>(members.size()),
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
