#pragma once
// What the simulator reports for one DCP decode step. Every time is in seconds relative to the step's start
// (the moment the CPUs begin issuing its kernels), so results do not depend on where the step sits on
// SimGrid's clock.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dcpsim/models/cost_collectives.h"
#include "dcpsim/models/cost_kernels.h"
#include "dcpsim/models/scenario.h"

namespace dcpsim::sim {

// Phase names, in the order a step runs them. Which ones a rank has depends on the strategy:
//   every strategy (N > 1)  query_gather, attention
//   ag-rs, ag-ar            lse_gather, correction, collective (reduce-scatter / all-reduce)
//   a2a                     pack, collective (all-to-all), combine (unpack + combine)
//   direct, row-stream      push, wait, combine
// N = 1 runs attention only.
inline constexpr std::string_view kPhaseQueryGather = "query_gather";
inline constexpr std::string_view kPhaseAttention = "attention";  // includes the split-KV combine kernel
inline constexpr std::string_view kPhaseLseGather = "lse_gather";
inline constexpr std::string_view kPhaseCorrection = "correction";
inline constexpr std::string_view kPhaseCollective = "collective";
inline constexpr std::string_view kPhaseLseCollective = "lse_collective";  // a2a-2call's second all-to-all
inline constexpr std::string_view kPhasePack = "pack";
inline constexpr std::string_view kPhasePush = "push";
inline constexpr std::string_view kPhaseWait = "wait";
inline constexpr std::string_view kPhaseCombine = "combine";

struct PhaseSpan {
  std::string name;
  double begin_s = 0.0;
  double end_s = 0.0;
  double duration_s() const { return end_s - begin_s; }
};

struct RankTimeline {
  int rank = 0;
  std::vector<PhaseSpan> phases;  // in the order the rank runs them
  double attention_end_s = 0.0;   // its attention (and split-KV combine) is done
  double done_s = 0.0;            // its last kernel ends
  std::int64_t kv_tokens = 0;     // KV tokens it holds over all rows (SPEC sharding)
  std::int64_t kv_bytes = 0;      // bytes of those tokens (one layer; models::kv_bytes_per_token)
  // Per row: when this rank's partial (O_r, L_r) of the row exists (its attention, or split-KV combine, is
  // done).
  std::vector<double> partial_ready_s;
  // Per row: when the row's merged LSE can be formed on this rank (every rank's partial LSE is there), and
  // when the row's merged output for this rank's heads is final. With N = 1 both are the row's attention
  // result.
  std::vector<double> lse_ready_s;
  std::vector<double> output_ready_s;
};

// A NCCL collective the step ran, with the plan it was realised from.
struct PlannedCollective {
  std::string phase;            // kPhaseQueryGather, kPhaseLseGather or kPhaseCollective
  models::CollectivePlan plan;  // as realised: its analytic time is the priced one
  // Where the price came from (a measured communication table, or NCCL's model: extrapolated), the model's
  // own time for the same plan, and what being issued inside the step added.
  models::FigureSource source = models::FigureSource::kAnalytic;
  double model_s = 0.0;
  double in_step_s = 0.0;
};

// Where one kernel time of the step came from: a measured table of the profile, or the analytic model
// (outside every table: extrapolated from bytes, FLOPs, bandwidth and tensor-core rate).
struct KernelFigure {
  int rank = 0;
  std::string kernel;  // "attention" (with its split-KV combine), "correction", "a2a_pack", ...
  models::FigureSource source = models::FigureSource::kAnalytic;
};

struct StepResult {
  models::Scenario scenario;
  std::string profile;
  // The profile's attention is vLLM's Triton MLA kernel (attention.triton_mla), priced by its grid.
  bool triton_mla_attention = false;
  std::vector<RankTimeline> ranks;
  std::vector<PlannedCollective> collectives;
  double step_latency_s = 0.0;      // the last rank's last kernel
  double attention_end_s = 0.0;     // the last rank's attention
  double merge_latency_s = 0.0;     // step_latency_s − attention_end_s: what the merge adds after attention
  std::int64_t activities = 0;      // SimGrid activities (communications and executions) the step used
  std::int64_t pipe_transfers = 0;  // transfers timed as pipe transfers instead (SimOptions::pipes)
  std::int64_t graph_nodes = 0;     // nodes of the step's activity graph (every kind, joins included)
  std::int64_t graph_edges = 0;     // their dependencies
  bool bundled_flows = false;  // all-pairs sends and single-domain rings went as bundles (SimOptions::flows)

  std::vector<KernelFigure> kernel_figures;  // one per kernel time the step used, rank by rank
  int kernel_figures_from(models::FigureSource source) const;
  // "4 table, 4 analytic (correction)": counts and the kernels priced analytically, for summaries and CSVs.
  std::string kernel_figures_text() const;
  // The named phase of a rank, or nullptr when that rank has no such phase.
  const PhaseSpan* phase(int rank, std::string_view name) const;
};

}  // namespace dcpsim::sim
