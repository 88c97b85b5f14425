#pragma once
// Enqueueing one rank's share of a step: the prologue (row-stamp origin, direct-merge epoch) and each phase
// of the plan, with CUDA events around every phase (external event nodes when the stream is being captured).
#include "exchange.h"
#include "plan.h"
#include "rank_state.h"

namespace dcpsim::hw {

// Sizes the attention workspace; call once per rank before the first step.
void prepare_rank(const StepPlan& p, RankState& r);

// The rank's local attention over its shard (whole batch, its own O and LSE).
ops::AttentionArgs attention_args(const StepPlan& p, RankState& r);

void enqueue_prologue(const StepPlan& p, const RunConfig& c, RankState& r, bool capturing);
void enqueue_phase(const StepPlan& p, const RunConfig& c, std::size_t phase_index, RankState& r, Exchange& ex,
                   bool capturing);

// What a rank holds at the end of the step, for the check (see rank_state.h for the layouts).
struct FinalOutput {
  const DeviceBuffer* out = nullptr;
  int head_begin = 0, heads = 0;  // heads [head_begin, head_begin + heads) of every row, dense [B'][heads][D]
  const DeviceBuffer* lse = nullptr;
  int lse_offset = 0,
      lse_row_stride = 0;  // merged LSE of kept head j of row b at [b·lse_row_stride + lse_offset + j]
};
FinalOutput final_output(const StepPlan& p, const RankState& r);

}  // namespace dcpsim::hw
