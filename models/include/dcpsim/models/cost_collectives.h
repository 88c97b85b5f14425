#pragma once
// NCCL collectives as plans the simulator can realise step by step (so concurrent flows share bandwidth in
// SimGrid) and as an analytic time. The model is NCCL's own (src/graph/tuning.cc): time = base latency +
// Σ step latencies + bytes / (bandwidth × protocol efficiency); the tuner picks the fastest predicted plan.
//
// Sizes are always BYTES PER RANK, never nccl-tests' "size":
//   all-gather      bytes_per_rank = the shard each rank contributes (it receives N × that)
//   reduce-scatter  bytes_per_rank = the shard each rank ends with (it starts with N × that)
//   all-reduce      bytes_per_rank = the whole buffer, present on every rank
//   all-to-all      bytes_per_rank = a rank's whole send buffer: N equal blocks, one per destination
// nccl_tests_size_bytes() (cost_metrics.h) converts to nccl-tests' convention.
#include <optional>
#include <string_view>
#include <vector>

#include "dcpsim/models/collective.h"
#include "dcpsim/models/profile.h"

namespace dcpsim::models {

// How N ranks sit on the hardware: consecutive ranks fill one NVLink domain before the next.
struct GroupLayout {
  int ranks = 1;
  int domains = 1;           // NVLink domains spanned (1: everything over NVLink)
  int ranks_per_domain = 1;  // ranks in the fullest domain
};
GroupLayout group_layout(const HardwareProfile& p, int ranks);

// Force an algorithm and/or protocol (like NCCL_ALGO / NCCL_PROTO); unset fields are chosen by the tuner.
struct CollectiveOptions {
  std::optional<Algorithm> algorithm;
  std::optional<Protocol> protocol;
};

// A collective as a sequence of `steps` identical communication steps. In every step each rank sends
// bytes_per_step_per_rank to its successor (ring), its parent/children (tree), the switch (NVLS), or spread
// over all peers at once (p2p: one step, the whole send buffer minus the self block). Steps are sequential;
// step k costs its latency plus bytes_per_step_per_rank / link_bandwidth_Bps. The first (steps −
// inter_domain_steps) steps run over NVLink at per_step_latency_s; the rest cross the inter-node fabric at
// inter_domain_step_latency_s. The bandwidth is the slowest link's, times the protocol efficiency, so an
// inter-node ring is bounded by its NIC.
// analytic_time_s = base_latency_s + (steps − inter_domain_steps) × per_step_latency_s
//                   + inter_domain_steps × inter_domain_step_latency_s
//                   + steps × bytes_per_step_per_rank / link_bandwidth_Bps
// For N = 1 or 0 bytes every plan has zero steps and zero time (NCCL launches nothing).
struct CollectivePlan {
  Collective collective = Collective::kAllGather;
  Algorithm algorithm = Algorithm::kRing;
  Protocol protocol = Protocol::kSimple;
  int ranks = 1;
  GroupLayout layout;
  double bytes_per_rank = 0.0;  // the argument, as defined above
  int steps = 0;  // ring: N−1 (AG/RS), 2(N−1) (AR); tree: 2(ranks_per_domain−1)+2⌊log2 domains⌋;
                  // NVLS: 1 (AG/RS) or 2 (AR); p2p: 1; 0 for N = 1 or 0 bytes
  int inter_domain_steps = 0;
  double bytes_per_step_per_rank = 0.0;
  double per_step_latency_s = 0.0;
  double inter_domain_step_latency_s = 0.0;
  double base_latency_s = 0.0;
  double link_bandwidth_Bps = 0.0;  // protocol-effective bandwidth of the slowest link a step crosses
  double analytic_time_s = 0.0;
  // Set by plan_with_time (cost_collectives_price.h) when a measured time is faster than the plan's terms:
  // the factor every transfer's bandwidth was multiplied by (p2p plans apply it per block).
  double bandwidth_scale = 1.0;

  // Bytes each rank sends in the whole collective: steps × bytes_per_step_per_rank.
  double bytes_sent_per_rank() const { return steps * bytes_per_step_per_rank; }
};

// Every algorithm × protocol NCCL would consider for this collective on this profile (tree only for
// all-reduce, NVLS only when enabled and inside one NVLink domain, p2p only for all-to-all), each with its
// analytic time.
std::vector<CollectivePlan> candidate_plans(const HardwareProfile& p, Collective c, int ranks,
                                            double bytes_per_rank);
// The fastest candidate that matches the options (ties keep the order ring, tree, NVLS; LL, LL128, Simple).
// Throws InputError when nothing matches (e.g. tree forced for an all-gather), naming what is allowed.
CollectivePlan plan_collective(const HardwareProfile& p, Collective c, int ranks, double bytes_per_rank,
                               const CollectiveOptions& options = {});
inline double collective_time(const HardwareProfile& p, Collective c, int ranks, double bytes_per_rank,
                              const CollectiveOptions& options = {}) {
  return plan_collective(p, c, ranks, bytes_per_rank, options).analytic_time_s;
}

// One point-to-point write of `bytes` over NVLink (direct strategy data): hop latency + bytes / measured
// NVLink bandwidth.
double nvlink_transfer_time(const HardwareProfile& p, double bytes);

}  // namespace dcpsim::models
