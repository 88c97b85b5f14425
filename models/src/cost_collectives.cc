// NCCL collective plans: NCCL's own latency model (src/graph/tuning.cc) over the profile's numbers, and its
// tuner rule (take the fastest predicted algorithm × protocol).
#include "dcpsim/models/cost_collectives.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "dcpsim/error.h"

namespace dcpsim::models {
namespace {

std::string describe(Collective c, int ranks) {
  return std::string(to_string(c)) + " on " + std::to_string(ranks) + " ranks";
}

int floor_log2(int x) {
  int r = 0;
  while (x > 1) {
    x >>= 1;
    ++r;
  }
  return r;
}

// The slowest link a step crosses: NVLink inside a domain, the NIC as soon as the group spans domains.
double link_bandwidth(const HardwareProfile& p, const GroupLayout& g) {
  const double nvlink = p.nvlink.measured_bandwidth.si();
  return g.domains > 1 ? std::min(nvlink, p.internode.bandwidth.si()) : nvlink;
}

double protocol_bandwidth(const HardwareProfile& p, const GroupLayout& g, Protocol proto) {
  const double bw = link_bandwidth(p, g) * p.nccl.protocol_efficiency[static_cast<std::size_t>(proto)].si();
  return proto == Protocol::kLL ? std::min(bw, p.nccl.ll_max_bus_bandwidth.si()) : bw;
}

// NCCL charges the network latency twice for Simple (the extra flush before the receiver may read).
double net_step_latency(const HardwareProfile& p, const NcclLatency& lat, Protocol proto) {
  const double net = p.internode.latency.si();
  return lat.net_hop_latency.si() + (proto == Protocol::kSimple ? 2.0 : 1.0) * net;
}

double analytic_time(const CollectivePlan& plan) {
  if (plan.steps == 0) return 0.0;
  return plan.base_latency_s + (plan.steps - plan.inter_domain_steps) * plan.per_step_latency_s +
         plan.inter_domain_steps * plan.inter_domain_step_latency_s +
         plan.steps * plan.bytes_per_step_per_rank / plan.link_bandwidth_Bps;
}

CollectivePlan start_plan(const HardwareProfile& p, Collective c, Algorithm a, Protocol proto, int ranks,
                          double bytes) {
  CollectivePlan plan;
  plan.collective = c;
  plan.algorithm = a;
  plan.protocol = proto;
  plan.ranks = ranks;
  plan.layout = group_layout(p, ranks);
  plan.bytes_per_rank = bytes;
  plan.link_bandwidth_Bps = protocol_bandwidth(p, plan.layout, proto);
  return plan;
}

// Ring: N−1 steps (AG/RS: one shard per step) or 2(N−1) (AR: reduce-scatter then all-gather of N chunks).
CollectivePlan ring_plan(const HardwareProfile& p, Collective c, Protocol proto, int ranks, double bytes) {
  CollectivePlan plan = start_plan(p, c, Algorithm::kRing, proto, ranks, bytes);
  const bool ar = c == Collective::kAllReduce;
  const int domains = plan.layout.domains;
  plan.steps = ar ? 2 * (ranks - 1) : ranks - 1;
  plan.inter_domain_steps = domains == 1 ? 0 : (ar ? 2 * (domains - 1) : domains - 1);
  plan.bytes_per_step_per_rank = ar ? bytes / ranks : bytes;
  const NcclLatency& lat = nccl_latency(p, Algorithm::kRing, proto);
  plan.base_latency_s = lat.base_latency.si();
  plan.per_step_latency_s = lat.nvlink_hop_latency.si();
  plan.inter_domain_step_latency_s = net_step_latency(p, lat, proto);
  plan.analytic_time_s = analytic_time(plan);
  return plan;
}

// Tree (all-reduce only): up and down a chain inside each domain and a binary tree across domains. The data
// is pipelined through it, so each rank sends the buffer up and down once: the 2·bytes are spread evenly over
// the steps to keep steps × bytes_per_step = NCCL's 2·bytes / busBw.
CollectivePlan tree_plan(const HardwareProfile& p, Protocol proto, int ranks, double bytes) {
  CollectivePlan plan = start_plan(p, Collective::kAllReduce, Algorithm::kTree, proto, ranks, bytes);
  const int inter = 2 * floor_log2(plan.layout.domains);
  plan.steps = 2 * (plan.layout.ranks_per_domain - 1) + inter;
  plan.inter_domain_steps = inter;
  plan.bytes_per_step_per_rank = plan.steps > 0 ? 2.0 * bytes / plan.steps : 0.0;
  const NcclLatency& lat = nccl_latency(p, Algorithm::kTree, proto);
  plan.base_latency_s = lat.base_latency.si();
  plan.per_step_latency_s = lat.nvlink_hop_latency.si();
  plan.inter_domain_step_latency_s = net_step_latency(p, lat, proto);
  plan.analytic_time_s = analytic_time(plan);
  return plan;
}

// NVLS (NVLink SHARP, Simple only, one NVLink domain): AG/RS move the N−1 remote shards through the switch in
// one step; AR's reduce and multicast phases overlap on the two link directions (NCCL: bytes / (bw · 5/6)).
CollectivePlan nvls_plan(const HardwareProfile& p, Collective c, int ranks, double bytes) {
  CollectivePlan plan = start_plan(p, c, Algorithm::kNvls, Protocol::kSimple, ranks, bytes);
  const bool ar = c == Collective::kAllReduce;
  plan.steps = ar ? 2 : 1;
  plan.bytes_per_step_per_rank = ar ? bytes / 2.0 : (ranks - 1) * bytes;
  plan.base_latency_s = p.nccl.nvls_latency.si();
  plan.link_bandwidth_Bps = p.nvlink.measured_bandwidth.si() * p.nccl.nvls_bandwidth_efficiency.si();
  plan.analytic_time_s = analytic_time(plan);
  return plan;
}

// All-to-all as concurrent send/recv: every rank sends N−1 blocks at once, NVLink peers and remote peers in
// parallel, so the step lasts as long as the busier of its NVLink port and its NIC. Send-recv (nccl-tests'
// sendrecv_perf): every rank sends its whole buffer to the next rank, one block over one link.
CollectivePlan p2p_plan(const HardwareProfile& p, Collective c, Protocol proto, int ranks, double bytes) {
  CollectivePlan plan = start_plan(p, c, Algorithm::kP2p, proto, ranks, bytes);
  const GroupLayout& g = plan.layout;
  const bool pair = c == Collective::kSendRecv;
  const double block = pair ? bytes : bytes / ranks;
  const double eff = p.nccl.protocol_efficiency[static_cast<std::size_t>(proto)].si();
  plan.steps = 1;
  plan.inter_domain_steps = g.domains > 1 ? 1 : 0;
  const int nvlink_peers = pair ? (g.domains > 1 ? 0 : 1) : g.ranks_per_domain - 1;
  const int nic_peers = pair ? (g.domains > 1 ? 1 : 0) : ranks - g.ranks_per_domain;
  plan.bytes_per_step_per_rank = pair ? block : (ranks - 1) * block;
  const double nvlink_s = nvlink_peers * block / (p.nvlink.measured_bandwidth.si() * eff);
  const double nic_s = nic_peers * block / (p.internode.bandwidth.si() * eff);
  const double busiest_s = std::max(nvlink_s, nic_s);
  plan.link_bandwidth_Bps =
      busiest_s > 0 ? plan.bytes_per_step_per_rank / busiest_s : p.nvlink.measured_bandwidth.si() * eff;
  plan.base_latency_s = proto == Protocol::kSimple && p.nccl.p2p_simple_base_latency
                            ? p.nccl.p2p_simple_base_latency->si()
                            : p.nccl.p2p_base_latency.si();
  plan.per_step_latency_s = p.nvlink.hop_latency.si();
  plan.inter_domain_step_latency_s = net_step_latency(p, nccl_latency(p, Algorithm::kRing, proto), proto);
  plan.analytic_time_s = analytic_time(plan);
  return plan;
}

// NCCL send/recv uses LL up to NCCL_P2P_LL_THRESHOLD bytes per peer, Simple above; LL128 is not a p2p
// protocol.
Protocol p2p_protocol(const HardwareProfile& p, Collective c, int ranks, double bytes) {
  const double per_peer = c == Collective::kSendRecv ? bytes : bytes / ranks;
  return per_peer <= p.nccl.p2p_ll_threshold.si() ? Protocol::kLL : Protocol::kSimple;
}

bool is_p2p(Collective c) {
  return c == Collective::kAllToAll || c == Collective::kSendRecv;
}

}  // namespace

std::string_view to_string(Collective c) {
  switch (c) {
    case Collective::kAllGather:
      return "all-gather";
    case Collective::kReduceScatter:
      return "reduce-scatter";
    case Collective::kAllReduce:
      return "all-reduce";
    case Collective::kAllToAll:
      return "all-to-all";
    case Collective::kSendRecv:
      return "send-recv";
  }
  return "?";
}

Collective parse_collective(std::string_view s) {
  // dcpsim's spelling, nccl-tests' binary names (all_gather_perf -> all_gather) and NCCL's (AllGather): the
  // letters alone, case and separators aside.
  std::string key;
  for (char ch : s) {
    if (std::isalnum(static_cast<unsigned char>(ch))) key += static_cast<char>(std::tolower(ch));
  }
  if (key.size() > 4 && key.ends_with("perf")) key.resize(key.size() - 4);
  for (Collective c : kAllCollectives) {
    std::string name;
    for (char ch : to_string(c)) {
      if (ch != '-') name += ch;
    }
    if (name == key) return c;
  }
  throw InputError("unknown collective \"" + std::string(s) +
                   "\" (allowed: all-gather, reduce-scatter, all-reduce, all-to-all, send-recv)");
}

GroupLayout group_layout(const HardwareProfile& p, int ranks) {
  if (ranks < 1) throw InputError("collective: ranks must be >= 1, got " + std::to_string(ranks));
  const int domain = static_cast<int>(p.topology.gpus_per_nvlink_domain.si());
  return {ranks, (ranks + domain - 1) / domain, std::min(ranks, domain)};
}

std::vector<CollectivePlan> candidate_plans(const HardwareProfile& p, Collective c, int ranks,
                                            double bytes_per_rank) {
  const GroupLayout g = group_layout(p, ranks);
  if (!(bytes_per_rank >= 0)) {
    throw InputError(describe(c, ranks) + ": bytes per rank must be >= 0, got " +
                     std::to_string(bytes_per_rank));
  }
  std::vector<CollectivePlan> out;
  if (is_p2p(c)) {
    for (Protocol proto : {Protocol::kLL, Protocol::kSimple})
      out.push_back(p2p_plan(p, c, proto, ranks, bytes_per_rank));
  } else {
    for (Protocol proto : kAllProtocols) out.push_back(ring_plan(p, c, proto, ranks, bytes_per_rank));
    if (c == Collective::kAllReduce) {
      for (Protocol proto : kAllProtocols) out.push_back(tree_plan(p, proto, ranks, bytes_per_rank));
    }
    if (p.nccl.nvls_enabled.value && g.domains == 1 && ranks > 1) {
      out.push_back(nvls_plan(p, c, ranks, bytes_per_rank));
    }
  }
  // Nothing moves for one rank or zero bytes: NCCL returns without launching a kernel.
  if (ranks == 1 || bytes_per_rank == 0) {
    for (CollectivePlan& plan : out) {
      plan.steps = 0;
      plan.inter_domain_steps = 0;
      plan.bytes_per_step_per_rank = 0.0;
      plan.analytic_time_s = 0.0;
    }
  }
  return out;
}

CollectivePlan plan_collective(const HardwareProfile& p, Collective c, int ranks, double bytes_per_rank,
                               const CollectiveOptions& options) {
  const std::vector<CollectivePlan> candidates = candidate_plans(p, c, ranks, bytes_per_rank);
  // send/recv picks its protocol by size, not by the tuner.
  std::optional<Protocol> protocol = options.protocol;
  if (is_p2p(c) && !protocol) protocol = p2p_protocol(p, c, ranks, bytes_per_rank);

  const CollectivePlan* best = nullptr;
  std::string allowed;
  for (const CollectivePlan& plan : candidates) {
    allowed += (allowed.empty() ? "" : ", ") + std::string(to_string(plan.algorithm)) + "/" +
               std::string(to_string(plan.protocol));
    if (options.algorithm && plan.algorithm != *options.algorithm) continue;
    if (protocol && plan.protocol != *protocol) continue;
    if (best == nullptr || plan.analytic_time_s < best->analytic_time_s) best = &plan;
  }
  if (best == nullptr) {
    const std::string forced = std::string(options.algorithm ? to_string(*options.algorithm) : "any") + "/" +
                               std::string(protocol ? to_string(*protocol) : "any");
    throw InputError(describe(c, ranks) + " on " + p.name + ": no plan for algorithm/protocol " + forced +
                     " (allowed: " + allowed + ")");
  }
  return *best;
}

double nvlink_transfer_time(const HardwareProfile& p, double bytes) {
  if (!(bytes >= 0)) throw InputError("NVLink transfer: bytes must be >= 0, got " + std::to_string(bytes));
  return p.nvlink.hop_latency.si() + bytes / p.nvlink.measured_bandwidth.si();
}

}  // namespace dcpsim::models
