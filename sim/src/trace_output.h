#pragma once
// Emits a simulated step as one trace section (dcpsim.trace.v1) into a TraceSink.
#include "dcpsim/sim/step_result.h"
#include "dcpsim/traces/trace_sink.h"
#include "step_graph.h"

namespace dcpsim::sim::detail {

void emit_trace(const StepGraph& step, const StepResult& result, traces::TraceSink& sink);

}  // namespace dcpsim::sim::detail
