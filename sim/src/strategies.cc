// The collective strategies after attention (SPEC "delivery strategies"): AG+RS, AG+AR, packed A2A and the
// all-to-all in two calls (outputs, then LSEs). Each
// is a short sequence of kernels on every rank's stream: NCCL collectives realised transfer by transfer,
// merge kernels as analytic executions.
#include "dcpsim/models/types.h"
#include "step_graph.h"

namespace dcpsim::sim::detail {
namespace {

using models::Collective;

// nccl-tests' name of an element type (the key of communication tables).
std::string dtype_name(models::DType d) {
  switch (d) {
    case models::DType::kBF16:
      return "bfloat16";
    case models::DType::kF16:
      return "half";
    case models::DType::kF32:
      return "float";
    case models::DType::kF64:
      return "double";
    case models::DType::kFP8E4M3:
      return "fp8_e4m3";
  }
  return "bfloat16";
}

struct CollectiveSpans {
  std::vector<NodeId> begin;
  std::vector<NodeId> end;
};

// A NCCL collective kernel on every rank's stream; returns each rank's (start, end). Priced as
// models::price_collective prices one call inside a step (a measured table where the profile has one, else
// NCCL's model; plus the in-step term of the launch mode) and realised from a plan of that time, so that
// concurrent flows still share the links. Eager: each NCCL call costs the host its own issue time, and the
// phase runs from when the stream reached the call (as the runner's events time it), so a GPU left idle
// waiting for the host (the step's first collective) shows in the phase.
CollectiveSpans collective_kernel(StepGraph& step, std::vector<RankStream>& streams, std::string_view phase,
                                  std::string_view kernel, Collective c, double bytes_per_rank,
                                  const models::CollectiveOptions& options, std::string_view dtype) {
  const int n = static_cast<int>(streams.size());
  const models::LaunchMode launch = step.scenario.launch;
  const models::CollectivePrice price = models::price_collective(step.profile, c, n, bytes_per_rank, options,
                                                                 {true, launch, std::string(dtype), false});
  const models::CollectivePlan plan = models::plan_with_time(price.plan, price.time_s);
  step.collectives.push_back(
      {std::string(phase), plan, price.source, price.plan.analytic_time_s, price.in_step_s});
  const bool eager = launch == models::LaunchMode::kEager;
  const std::optional<double> issue =
      eager ? std::optional<double>(models::eager_collective_issue(step.profile)) : std::nullopt;
  CollectiveSpans spans;
  std::vector<NodeId> phase_begin;
  for (RankStream& s : streams) {
    if (eager) phase_begin.push_back(s.reached());
    spans.begin.push_back(s.begin(kernel, std::nullopt, issue));
  }
  spans.end = add_collective(step, plan, spans.begin, phase);
  for (int r = 0; r < n; ++r) {
    streams[r].finish(spans.end[r], traces::v1::EVENT_KIND_COLLECTIVE, plan.bytes_sent_per_rank());
  }
  if (eager) spans.begin = phase_begin;
  return spans;
}

void set_rows(RankNodes& rank, int rows, NodeId lse, NodeId output) {
  rank.lse_ready.assign(rows, RowRef{lse, 0.0});
  rank.output_ready.assign(rows, RowRef{output, 0.0});
}

}  // namespace

void add_query_gather(StepGraph& step, std::vector<RankStream>& streams,
                      const models::CollectiveOptions& options) {
  const models::Scenario& s = step.scenario;
  const int n = s.dcp;
  // Each rank contributes the query heads of its TP rank: ⌈H/N⌉ heads of every row.
  const double heads_per_rank = (s.heads + n - 1) / n;
  const double bytes = double(s.merge_rows()) * heads_per_rank * s.qk_dim *
                       double(models::dtype_bytes(models::query_dtype(s.kv_dtype)));
  const CollectiveSpans q =
      collective_kernel(step, streams, kPhaseQueryGather, "query_all_gather", Collective::kAllGather, bytes,
                        options, dtype_name(models::query_dtype(s.kv_dtype)));
  for (int r = 0; r < n; ++r) step.ranks[r].phases.push_back({kPhaseQueryGather, q.begin[r], q.end[r]});
}

void add_gather_merge(StepGraph& step, std::vector<RankStream>& streams,
                      const models::CollectiveOptions& options) {
  const models::Scenario& s = step.scenario;
  const int n = s.dcp;
  const models::MergeShape m = models::merge_shape(s);
  const double out_bytes = double(models::dtype_bytes(s.out_dtype));

  const CollectiveSpans lse =
      collective_kernel(step, streams, kPhaseLseGather, "lse_all_gather", Collective::kAllGather,
                        s.merge_rows() * double(s.heads) * kLseBytes, options, "float");
  std::vector<NodeId> corr(n);
  for (int r = 0; r < n; ++r) {
    corr[r] = streams[r].kernel("correction", step.price(r, models::MemoryKernel::kCorrection, m, true),
                                models::correction_bytes(m));
  }
  const bool rs = s.strategy == models::Strategy::kAgRs;
  const double heads_out = rs ? double(s.heads) / n : double(s.heads);
  const CollectiveSpans out = collective_kernel(
      step, streams, kPhaseCollective, rs ? "reduce_scatter" : "all_reduce",
      rs ? Collective::kReduceScatter : Collective::kAllReduce,
      s.merge_rows() * heads_out * s.head_dim * out_bytes, options, dtype_name(s.out_dtype));
  for (int r = 0; r < n; ++r) {
    RankNodes& rank = step.ranks[r];
    rank.phases.push_back({kPhaseLseGather, lse.begin[r], lse.end[r]});
    rank.phases.push_back({kPhaseCorrection, corr[r], corr[r]});
    rank.phases.push_back({kPhaseCollective, out.begin[r], out.end[r]});
    set_rows(rank, s.rows(), lse.end[r], out.end[r]);
    rank.done = out.end[r];
  }
}

void add_a2a_merge(StepGraph& step, std::vector<RankStream>& streams,
                   const models::CollectiveOptions& options) {
  const models::Scenario& s = step.scenario;
  const int n = s.dcp;
  const models::MergeShape m = models::merge_shape(s);
  const double send_bytes = models::a2a_buffer_bytes(m);  // all of the packed buffer goes out

  std::vector<NodeId> pack(n), combine(n);
  for (int r = 0; r < n; ++r) {
    pack[r] = streams[r].kernel("a2a_pack", step.price(r, models::MemoryKernel::kA2aPack, m),
                                models::a2a_pack_bytes(m));
  }
  const CollectiveSpans a2a =
      collective_kernel(step, streams, kPhaseCollective, "all_to_all", Collective::kAllToAll, send_bytes,
                        options, dtype_name(s.out_dtype));
  for (int r = 0; r < n; ++r) {
    combine[r] = streams[r].kernel("a2a_combine", step.price(r, models::MemoryKernel::kA2aCombine, m, true),
                                   models::unpack_combine_bytes(m));
    RankNodes& rank = step.ranks[r];
    rank.phases.push_back({kPhasePack, pack[r], pack[r]});
    rank.phases.push_back({kPhaseCollective, a2a.begin[r], a2a.end[r]});
    rank.phases.push_back({kPhaseCombine, combine[r], combine[r]});
    set_rows(rank, s.rows(), a2a.end[r], combine[r]);
    rank.done = combine[r];
  }
}

void add_a2a_two_call_merge(StepGraph& step, std::vector<RankStream>& streams,
                            const models::CollectiveOptions& options) {
  const models::Scenario& s = step.scenario;
  const int n = s.dcp;
  const models::MergeShape m = models::merge_shape(s);
  const double rows = s.merge_rows();
  std::vector<NodeId> split(n), combine(n);
  for (int r = 0; r < n; ++r) {  // the same kernel as the packed pack, writing O and LSE to two buffers
    split[r] = streams[r].kernel("a2a_pack", step.price(r, models::MemoryKernel::kA2aPack, m),
                                 models::a2a_pack_bytes(m));
  }
  const CollectiveSpans out =
      collective_kernel(step, streams, kPhaseCollective, "all_to_all", Collective::kAllToAll,
                        rows * s.heads * s.head_dim * double(models::dtype_bytes(s.out_dtype)), options,
                        dtype_name(s.out_dtype));
  const CollectiveSpans lse =
      collective_kernel(step, streams, kPhaseLseCollective, "all_to_all_lse", Collective::kAllToAll,
                        rows * s.heads * kLseBytes, options, "float");
  for (int r = 0; r < n; ++r) {
    combine[r] = streams[r].kernel("a2a_combine", step.price(r, models::MemoryKernel::kA2aCombine, m, true),
                                   models::unpack_combine_bytes(m));
    RankNodes& rank = step.ranks[r];
    rank.phases.push_back({kPhasePack, split[r], split[r]});
    rank.phases.push_back({kPhaseCollective, out.begin[r], out.end[r]});
    rank.phases.push_back({kPhaseLseCollective, lse.begin[r], lse.end[r]});
    rank.phases.push_back({kPhaseCombine, combine[r], combine[r]});
    set_rows(rank, s.rows(), lse.end[r], combine[r]);
    rank.done = combine[r];
  }
}

}  // namespace dcpsim::sim::detail
