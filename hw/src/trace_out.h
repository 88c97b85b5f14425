#pragma once
// From samples to figures: phase statistics, step and merge medians, and the measured trace section.
#include <vector>

#include "check.h"
#include "dcpsim/hw/runner.h"
#include "dcpsim/traces/trace_sink.h"
#include "plan.h"
#include "timing.h"

namespace dcpsim::hw {

RunResult summarize(const StepPlan& p, const RunConfig& c, const Samples& s);
void emit_section(traces::TraceSink& sink, const StepPlan& p, const RunConfig& c, const Samples& s,
                  const RunResult& result);

// One process per GPU under MPI (mpi_runner.cc): this process's rank only; outputs are this rank's.
void run_mpi(const StepPlan& p, const RunConfig& c, Samples& samples, std::vector<RankOutputs>& outputs,
             GpuTimeline* timeline);

}  // namespace dcpsim::hw
