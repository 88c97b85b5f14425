#pragma once
// The one table that says which simulator phase (sim/step_result.h) a measured phase name stands for, and
// which phases a trace of a given source measures faithfully.
//
// Traces name a step's phases in the step vocabulary (traces/phases.h: one name per kernel or collective,
// the same for `dcpsim hw run` and the simulator; older names are renamed on read); the simulator's
// StepResult groups them (query_gather, collective, push, wait, combine, ...). Every name a trace may carry
// is listed in phase_map.cc with the groups it is compared with. Aggregates that span several phases ("step",
// "merge", "total") are known but compared with nothing (the step is compared through the Summary record).
// Any other name is an InputError: a phase that cannot be mapped is never silently dropped. A phase may span
// several groups (the direct_combine kernel polls the flags, so it measures the simulator's wait + combine);
// it is then compared with their sum.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dcpsim/traces/schema.h"

namespace dcpsim::analysis {

struct PhaseMapping {
  std::string_view measured;  // the name as a trace writes it
  // The simulator phases whose summed duration it measures; empty for an aggregate compared with nothing.
  std::vector<std::string_view> sim;
  // The same for emulated traces, when emulation measures less (empty: as `sim`).
  std::vector<std::string_view> sim_emulated;
};

// Every known measured name, in the table's order.
const std::vector<PhaseMapping>& phase_mappings();

// The simulator phases a measured name stands for in a trace of `source`: nullopt for a known aggregate;
// InputError naming the phase and the known names otherwise. `where` prefixes the message (a file and
// section). Case and '-' vs '_' do not matter.
std::optional<std::vector<std::string>> map_phase(std::string_view measured, traces::v1::Source source,
                                                  std::string_view where);

// "wait+combine": the figure name of a measured phase that stands for several simulator phases.
std::string figure_name(const std::vector<std::string>& sim_phases);

// Kernel phases: attention (with its split-KV combine), correction, pack, combine. Their durations depend
// only on the GPU, so a single-device emulation measures them as the real step would.
bool is_kernel_phase(std::string_view sim_phase);

// Whether a trace of `source` measures `sim_phase` as the real multi-GPU step would. Simulated and real
// traces measure every phase; emulated ones only the kernel phases (their collectives, pushes and waits are
// device-local stand-ins).
bool measures_faithfully(traces::v1::Source source, std::string_view sim_phase);
bool measures_faithfully(traces::v1::Source source, const std::vector<std::string>& sim_phases);

// Whether step latency and per-row ready times of a trace of `source` are comparable with the simulator's
// (not for emulation: there the step is a sum of phases run one rank after another).
bool step_is_faithful(traces::v1::Source source);

}  // namespace dcpsim::analysis
