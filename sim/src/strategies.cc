// The collective strategies after attention (SPEC "delivery strategies"): AG+RS, AG+AR and packed A2A. Each
// is a short sequence of kernels on every rank's stream: NCCL collectives realised transfer by transfer,
// merge kernels as analytic executions.
#include "dcpsim/models/types.h"
#include "step_graph.h"

namespace dcpsim::sim::detail {
namespace {

using models::Collective;

// A NCCL collective kernel on every rank's stream; returns each rank's (start, end).
struct CollectiveSpans {
  std::vector<NodeId> begin;
  std::vector<NodeId> end;
};
CollectiveSpans collective_kernel(StepGraph& step, std::vector<RankStream>& streams, std::string_view phase,
                                  std::string_view kernel, Collective c, double bytes_per_rank,
                                  const models::CollectiveOptions& options) {
  const int n = static_cast<int>(streams.size());
  const models::CollectivePlan plan = models::plan_collective(step.profile, c, n, bytes_per_rank, options);
  step.collectives.push_back({std::string(phase), plan});
  CollectiveSpans spans;
  for (RankStream& s : streams) spans.begin.push_back(s.begin(kernel));
  spans.end = add_collective(step, plan, spans.begin, phase);
  for (int r = 0; r < n; ++r) {
    streams[r].finish(spans.end[r], traces::v1::EVENT_KIND_COLLECTIVE, plan.bytes_sent_per_rank());
  }
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
  const CollectiveSpans q = collective_kernel(step, streams, kPhaseQueryGather, "query_all_gather",
                                              Collective::kAllGather, bytes, options);
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
                        s.merge_rows() * double(s.heads) * kLseBytes, options);
  std::vector<NodeId> corr(n);
  for (int r = 0; r < n; ++r) {
    corr[r] = streams[r].kernel("correction", step.price(r, models::MemoryKernel::kCorrection, m, true),
                                models::correction_bytes(m));
  }
  const bool rs = s.strategy == models::Strategy::kAgRs;
  const double heads_out = rs ? double(s.heads) / n : double(s.heads);
  const CollectiveSpans out =
      collective_kernel(step, streams, kPhaseCollective, rs ? "reduce_scatter" : "all_reduce",
                        rs ? Collective::kReduceScatter : Collective::kAllReduce,
                        s.merge_rows() * heads_out * s.head_dim * out_bytes, options);
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
  const CollectiveSpans a2a = collective_kernel(step, streams, kPhaseCollective, "all_to_all",
                                                Collective::kAllToAll, send_bytes, options);
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

}  // namespace dcpsim::sim::detail
