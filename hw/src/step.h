#pragma once
// Enqueueing one rank's share of a step: the prologue (row-stamp origin) and each phase of the plan, with
// CUDA events around every phase (external event nodes when the stream is being captured). The merge phases
// belong to the run's strategy (strategy.h).
#include "exchange.h"
#include "plan.h"
#include "rank_state.h"
#include "strategy.h"

namespace dcpsim::hw {

// Sizes the attention workspace; call once per rank before the first step.
void prepare_rank(const StepPlan& p, RankState& r);

// The rank's local attention over its shard (whole batch, its own O and LSE).
ops::AttentionArgs attention_args(const StepPlan& p, RankState& r);
// After every rank of this process exists and before the first step: the strategy's connection.
void connect_ranks(const StepPlan& p, const RunConfig& c, Ranks& ranks, const StrategyLink& link);

// Emulation: a strategy whose ranks run concurrently enqueues the whole step of every rank itself
// (row-stream); false when the step is enqueued phase by phase.
bool enqueue_whole_step(const StepPlan& p, const RunConfig& c, Ranks& ranks, Exchange& ex, bool capturing);

void enqueue_prologue(const StepPlan& p, const RunConfig& c, RankState& r, bool capturing);
void enqueue_phase(const StepPlan& p, const RunConfig& c, std::size_t phase_index, RankState& r, Exchange& ex,
                   bool capturing);

FinalOutput final_output(const StepPlan& p, const RankState& r);

}  // namespace dcpsim::hw
