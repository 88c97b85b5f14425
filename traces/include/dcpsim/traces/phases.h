#pragma once
// The step vocabulary: one name per kernel or collective call of a DCP decode step, written by the simulator
// and the hardware runner alike — as event names, phase summaries and GPU activities' phases — so that a
// simulated and a measured trace of one scenario overlay in Perfetto and compare name by name (docs/SPEC.md,
// "Step phases"). Older traces wrote other names for some of them (the hardware runner's "q_allgather",
// "correct"; the simulator's "direct_push", "unpack_combine"); TraceReader renames those on read, so
// everything downstream sees the current names.
#include <string>
#include <string_view>
#include <vector>

#include "dcpsim/traces/schema.h"

namespace dcpsim::traces {

struct StepPhase {
  std::string_view name;        // as traces write it
  std::string_view strategies;  // where it occurs: "all", "ag-rs, ag-ar", ...
  std::string_view what;        // one line for people
  bool measured = true;         // false: only the simulator writes it (no such kernel in the runner)
};

// Every name of the vocabulary, in the order a step runs them; "step" and "merge" (aggregates over a rank's
// phases, in measured phase summaries) last.
const std::vector<StepPhase>& step_phases();

// Whether `name` is a name of the vocabulary.
bool is_step_phase(std::string_view name);

// The current name of a phase an older trace called `name` ("q_allgather" -> "query_all_gather"); `name`
// itself when it is no such legacy name.
std::string_view current_phase_name(std::string_view name);

// Renames the legacy phase names a record carries: event names of kernels, collectives and launches, phase
// summaries, GPU activities' phases, and the "gap_before.<phase>_ns" summary values.
void rename_legacy_phases(v1::Record& record);

}  // namespace dcpsim::traces
