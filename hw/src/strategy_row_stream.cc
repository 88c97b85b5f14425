// The row-streaming merge as a strategy of the runner (the step itself: row_stream.h). Its ranks run
// concurrently on streams of their own, so in emulation it enqueues the whole step (enqueue_step); its one
// phase after attention, the owners' combine, is never enqueued alone.
#include <string>
#include <vector>

#include "dcpsim/error.h"
#include "row_stream.h"
#include "strategy.h"

namespace dcpsim::hw {
namespace {

class RowStreamStrategy final : public HwStrategy {
 public:
  std::vector<Phase> phases() const override { return {Phase::kRowCombine}; }

  void check(const StepPlan&, const RunConfig& c) const override {
    if (c.mode != ProcessMode::kEmulate)
      throw InputError(
          "--strategy row-stream runs with --emulate only (N ranks on one GPU); on several GPUs it waits for "
          "NCCL device-API windows");
  }

  void allocate(const StepPlan&, RankState&) const override {}  // in connect(), once every rank exists

  void connect(const StepPlan& p, const RunConfig& c, Ranks& ranks, const StrategyLink&) const override {
    setup_row_stream(p, c, ranks);
  }

  bool enqueue_step(const StepPlan& p, const RunConfig& c, Ranks& ranks, Exchange& ex,
                    bool capturing) const override {
    enqueue_row_stream_step(p, c, ranks, ex, capturing);
    return true;
  }

  void enqueue(Phase phase, const StepPlan&, const RunConfig&, RankState&, Exchange&) const override {
    throw RuntimeError(std::string(phase_name(phase)) + " is enqueued with the whole row-stream step");
  }

  FinalOutput final_output(const StepPlan& p, const RankState& r) const override {
    return {&r.out, r.rank * p.J, p.J, 1, &r.merged_lse, 0, p.J};
  }
};

}  // namespace

const HwStrategy& row_stream_strategy() {
  static const RowStreamStrategy s;
  return s;
}

}  // namespace dcpsim::hw
