#pragma once
// A delivery strategy on hardware, in one shape: the phases it adds after attention, what it can run on,
// the buffers each rank needs, the one-time connection once every rank of the process exists (pointer
// tables, NCCL windows), how each of its phases is enqueued, and where its result lands. The step runner
// (step.cc, runner.cc, mpi_runner.cc) knows strategies only through this interface; find_hw_strategy() in
// step.cc lists them. Adding one: a class implementing HwStrategy in its own strategy_<name>.cc, its phases
// in plan.h's Phase (and phase_name), one line in find_hw_strategy().
#include <nccl.h>

#include <vector>

#include "dcpsim/models/types.h"
#include "exchange.h"
#include "plan.h"
#include "rank_state.h"

namespace dcpsim::hw {

class NcclWindows;

// What a strategy's connect() may use: in emulation the ranks share one device and there is no
// communicator; otherwise comms[i] belongs to ranks[i] (threads: every rank; MPI: this process's one), and
// `windows` (owned by the runner, destroyed before the communicators) is where NCCL windows go.
struct StrategyLink {
  bool emulated = false;
  std::vector<ncclComm_t> comms;
  NcclWindows* windows = nullptr;
};

// What a rank holds at the end of the step, for the check (see rank_state.h for the layouts).
struct FinalOutput {
  const DeviceBuffer* out = nullptr;
  // Kept head k of every row is head head_begin + k·head_stride, stored dense as [B'][heads][D].
  int head_begin = 0, heads = 0, head_stride = 1;
  const DeviceBuffer* lse = nullptr;  // null: the strategy returns no merged LSE
  int lse_offset = 0,
      lse_row_stride = 0;  // merged LSE of kept head k of row b at [b·lse_row_stride + lse_offset + k]
};

class HwStrategy {
 public:
  virtual ~HwStrategy() = default;
  // The phases after attention (N > 1).
  virtual std::vector<Phase> phases() const = 0;
  // InputError (one line) when this run cannot use the strategy (process mode, dtype, build).
  virtual void check(const StepPlan& p, const RunConfig& c) const;
  // Rank r's buffers; the rank's stream may be used.
  virtual void allocate(const StepPlan& p, RankState& r) const = 0;
  virtual void connect(const StepPlan& p, const RunConfig& c, Ranks& ranks, const StrategyLink& link) const;
  // Emulation only: true when the strategy enqueued the whole step of every rank itself (its ranks run
  // concurrently on streams of their own: row-stream); false (the default) to be enqueued phase by phase.
  virtual bool enqueue_step(const StepPlan& p, const RunConfig& c, Ranks& ranks, Exchange& ex,
                            bool capturing) const;
  // Enqueues one of phases() for rank r.
  virtual void enqueue(Phase phase, const StepPlan& p, const RunConfig& c, RankState& r,
                       Exchange& ex) const = 0;
  virtual FinalOutput final_output(const StepPlan& p, const RankState& r) const = 0;
};

// The strategy the runner uses for s, or null when hardware does not run it.
const HwStrategy* find_hw_strategy(models::Strategy s);
// The same, InputError naming the strategies hw run runs when there is none.
const HwStrategy& hw_strategy(models::Strategy s);

// The strategies, one per file.
const HwStrategy& ag_rs_strategy();         // strategy_collective.cc
const HwStrategy& ag_ar_strategy();         // strategy_collective.cc
const HwStrategy& a2a_strategy();           // strategy_collective.cc
const HwStrategy& a2a_two_call_strategy();  // strategy_collective.cc
const HwStrategy& direct_strategy();        // strategy_direct.cc
const HwStrategy& flashinfer_strategy();    // strategy_flashinfer.cc
const HwStrategy& row_stream_strategy();    // strategy_row_stream.cc (the step itself: row_stream.cc)

// Shared by the strategies' kernels: row stamps of rank r (output: the merged output's, else the LSE's).
ops::RowStamps row_stamps(const StepPlan& p, RankState& r, bool output);
// A row-stamp kernel marking "every row's data arrived" after a collective.
void enqueue_collective_done(RankState& r);

}  // namespace dcpsim::hw
