// NCCL collectives realised from their plans (models/cost_collectives.h) as SimGrid transfers, so that what
// the plan predicts in isolation is what the simulation gives uncontended, and concurrent flows share the
// links.
//
// Per plan: the base latency once per rank, then `steps` communication steps. A step's latency is the plan's
// (protocol) latency for the link class it crosses; the route's physical latency is part of the transfer, so
// only the difference is added as a latency node (a negative difference comes off the base latency).
// Transfers carry bytes / efficiency, the efficiency being the plan's protocol-effective bandwidth over the
// physical one, so an uncontended transfer takes bytes / link_bandwidth_Bps as the plan says.
//   ring, tree  each step every rank sends to its ring successor once it has entered the collective, started
//               the previous step and received what it brought (tree plans keep NCCL's step count and bytes
//               on the same links); a rank is done when all its sends and receives are. With bundled flows
//               and hops of one kind, consecutive steps go as one transfer per rank, at most kRingRounds
//               per collective
//   NVLS        each step every rank sends to its domain's NVSwitch, which sends to every rank as soon as all
//               have entered the step (multicast and reduction pipelined through the switch)
//   p2p         one step: every rank sends a block to every peer at once (at most SimOptions::peers_in_flight
//               outstanding)
#include <algorithm>
#include <string>

#include "dcpsim/error.h"
#include "fanout.h"
#include "step_graph.h"

namespace dcpsim::sim::detail {
namespace {

using models::Algorithm;
using models::CollectivePlan;

// Ring and tree plans as bundled flows: at most this many transfers per rank (sim/src/fanout.h).
constexpr int kRingRounds = 16;

struct Realisation {
  StepGraph& step;
  const CollectivePlan& plan;
  std::string_view what;
  int n = 0;
  double efficiency = 1.0;

  bool inter(int a, int b) const { return !step.platform.same_domain(a, b); }
  double step_latency(int a, int b) const {
    return inter(a, b) ? plan.inter_domain_step_latency_s : plan.per_step_latency_s;
  }
  double extra_latency(int a, int b) const {
    return std::max(0.0, step_latency(a, b) - step.platform.gpu_latency(a, b));
  }
  // Transfer from GPU a to GPU b (b = -1: a's NVSwitch; a = -1: b's NVSwitch to b).
  // Transfer from GPU a to GPU b over a's pipe (activity_graph.h): how ring and tree steps go when the
  // simulator uses pipes.
  NodeId pipe_transfer(int a, int b, double bytes, int index, double delay_s) {
    Platform& pf = step.platform;
    const bool across = inter(a, b);
    const int pipe = step.graph.pipe(a, across, across ? pf.internode_bandwidth() : pf.nvlink_bandwidth(),
                                     pf.route_latency(across));
    const NodeId t = step.graph.pipe_transfer(pipe, bytes / efficiency, b, delay_s);
    step.transfers.push_back({t, a, b, index, what, bytes, across});
    return t;
  }
  NodeId transfer(int a, int b, double bytes, int index) {
    Platform& pf = step.platform;
    auto* from = a >= 0 ? pf.gpu(a) : pf.nvswitch(pf.domain_of(b));
    auto* to = b >= 0 ? pf.gpu(b) : pf.nvswitch(pf.domain_of(a));
    const NodeId t = step.graph.transfer(from, to, bytes / efficiency, a, b);
    step.transfers.push_back({t, a, b, index, what, bytes, a >= 0 && b >= 0 && inter(a, b)});
    return t;
  }
};

double efficiency_of(const StepGraph& step, const CollectivePlan& plan) {
  const models::HardwareProfile& p = step.profile;
  const double nvlink = p.nvlink.measured_bandwidth.si();
  switch (plan.algorithm) {
    case Algorithm::kP2p:
      return p.nccl.protocol_efficiency[static_cast<std::size_t>(plan.protocol)].si() * plan.bandwidth_scale;
    case Algorithm::kNvls:
      return plan.link_bandwidth_Bps / nvlink;
    case Algorithm::kRing:
    case Algorithm::kTree:
      break;
  }
  const double slowest = plan.layout.domains > 1 ? std::min(nvlink, p.internode.bandwidth.si()) : nvlink;
  return plan.link_bandwidth_Bps / slowest;
}

// The base latency, less what the routes' physical latency already adds beyond the plan's step latencies.
double base_latency(const Realisation& r, double route_excess_per_step) {
  return std::max(0.0, r.plan.base_latency_s - r.plan.steps * route_excess_per_step);
}

std::vector<NodeId> ring(Realisation& r, const std::vector<NodeId>& begin) {
  ActivityGraph& g = r.step.graph;
  const int n = r.n;
  double excess = 0.0;
  for (int a = 0; a < n; ++a) {
    const int b = (a + 1) % n;
    excess = std::max(excess, r.step.platform.gpu_latency(a, b) - r.step_latency(a, b));
  }
  std::vector<NodeId> gate(n), received(n);
  std::vector<std::vector<NodeId>> touching(n);
  for (int a = 0; a < n; ++a) gate[a] = g.after_latency(begin[a], base_latency(r, excess));
  // Bundled flows carry up to kRingRounds rounds of `per` steps each: one transfer of their bytes after the
  // latency of the steps it stands for, which gives the same times when the ranks move in step over links of
  // one kind. A ring with NVLink and NIC hops is not bundled: there the slow hops pace a pipeline in which
  // each step's dependency matters (bundling it moved step times by up to 27%).
  const int steps = r.plan.steps;
  bool one_kind = true;
  for (int a = 0; a + 1 < n; ++a) one_kind = one_kind && r.inter(a, a + 1) == r.inter(n - 1, 0);
  const int per = r.step.bundle_flows && one_kind ? (steps + kRingRounds - 1) / kRingRounds : 1;
  for (int s = 0; s < steps; s += per) {
    const int k = std::min(per, steps - s);
    std::vector<NodeId> sent(n);
    for (int a = 0; a < n; ++a) {
      const int b = (a + 1) % n;
      // Steps start in order (NCCL's FIFO slots), each once step s − 1 has brought its data; several may be
      // in flight at once, which is how the ring pipelines.
      if (s > 0) gate[a] = g.join_of({gate[a], received[a]});
      const double step_s = std::max(r.step_latency(a, b), r.step.platform.gpu_latency(a, b));
      const double delay = r.extra_latency(a, b) + (k - 1) * step_s;
      const double bytes = k * r.plan.bytes_per_step_per_rank;
      if (r.step.pipes) {
        sent[a] = r.pipe_transfer(a, b, bytes, s, delay);
        g.after(gate[a], sent[a]);
      } else {
        sent[a] = r.transfer(a, b, bytes, s);
        g.after(g.after_latency(gate[a], delay), sent[a]);
      }
      touching[a].push_back(sent[a]);
      touching[b].push_back(sent[a]);
    }
    for (int a = 0; a < n; ++a) received[(a + 1) % n] = sent[a];
  }
  std::vector<NodeId> end(n);
  for (int a = 0; a < n; ++a) {
    touching[a].push_back(gate[a]);
    end[a] = g.join_of(touching[a]);
  }
  return end;
}

std::vector<NodeId> nvls(Realisation& r, const std::vector<NodeId>& begin) {
  ActivityGraph& g = r.step.graph;
  const int n = r.n;
  const double hop = r.step.platform.switch_latency();
  const double extra = std::max(0.0, r.plan.per_step_latency_s - hop);
  std::vector<NodeId> at(n);
  for (int a = 0; a < n; ++a) {
    at[a] = g.after_latency(begin[a], base_latency(r, std::max(0.0, hop - r.plan.per_step_latency_s)));
  }
  for (int s = 0; s < r.plan.steps; ++s) {
    const NodeId all_in = g.join_of(at);
    for (int a = 0; a < n; ++a) {
      const NodeId up = r.transfer(a, -1, r.plan.bytes_per_step_per_rank, s);
      g.after(g.after_latency(at[a], extra), up);
      const NodeId down = r.transfer(-1, a, r.plan.bytes_per_step_per_rank, s);
      g.after(g.after_latency(all_in, extra), down);
      at[a] = g.join_of({up, down});
    }
  }
  return at;
}

std::vector<NodeId> p2p(Realisation& r, const std::vector<NodeId>& begin) {
  ActivityGraph& g = r.step.graph;
  const int n = r.n;
  const double block_of_all = n > 1 ? r.plan.bytes_per_step_per_rank / (n - 1) : 0.0;
  // Send-recv: each rank's whole buffer to the next rank only.
  const bool pair = r.plan.collective == models::Collective::kSendRecv;
  std::vector<std::vector<NodeId>> touching(n);
  for (int a = 0; a < n; ++a) {
    const NodeId entered = g.after_latency(begin[a], r.plan.base_latency_s);
    touching[a].push_back(entered);
    if (r.plan.steps == 0) continue;
    // Staggered peer order (a+1, a+2, ...), as NCCL schedules send/recv rounds.
    FanOut out(r.step, a, r.what);
    FanOut::Send send;
    for (int k = 1; k < (pair ? 2 : n); ++k) send.peers.push_back((a + k) % n);
    const double block = pair ? r.plan.bytes_per_step_per_rank : block_of_all;
    send.payload = block;
    send.bytes = block / r.efficiency;
    // One latency node per link class: the step latency beyond the route's own.
    NodeId gate[2] = {-1, -1};
    send.gate = [&](int b) {
      NodeId& slot = gate[r.inter(a, b) ? 1 : 0];
      if (slot < 0) slot = g.after_latency(entered, r.extra_latency(a, b));
      return slot;
    };
    const FanOut::Sent sent = out.send(send);
    for (std::size_t i = 0; i < send.peers.size(); ++i) {
      if (i == 0 || sent.data[i] != sent.data[i - 1]) touching[a].push_back(sent.data[i]);  // a bundle once
      touching[send.peers[i]].push_back(sent.data[i]);
    }
  }
  std::vector<NodeId> end(n);
  for (int a = 0; a < n; ++a) end[a] = g.join_of(touching[a]);
  return end;
}

}  // namespace

std::vector<NodeId> add_collective(StepGraph& step, const models::CollectivePlan& plan,
                                   const std::vector<NodeId>& begin, std::string_view what) {
  // NCCL returns without launching anything for one rank or no bytes.
  if (plan.steps == 0) return begin;
  Realisation r{step, plan, what, static_cast<int>(begin.size()), efficiency_of(step, plan)};
  if (!(r.efficiency > 0)) {
    throw RuntimeError(std::string(what) + ": collective plan has no usable bandwidth");
  }
  switch (plan.algorithm) {
    case Algorithm::kNvls:
      return nvls(r, begin);
    case Algorithm::kP2p:
      return p2p(r, begin);
    case Algorithm::kRing:
    case Algorithm::kTree:
      break;
  }
  return ring(r, begin);
}

}  // namespace dcpsim::sim::detail
