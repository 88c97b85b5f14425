// Trace phase name -> simulator phase groups. Add a row when a producer writes a new name; never map by
// pattern.
#include "dcpsim/analysis/phase_map.h"

#include <algorithm>
#include <cctype>

#include "dcpsim/error.h"
#include "dcpsim/traces/phases.h"

namespace dcpsim::analysis {
namespace {

std::string normalise(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  std::replace(out.begin(), out.end(), '-', '_');
  return out;
}

}  // namespace

const std::vector<PhaseMapping>& phase_mappings() {
  // Left: what a trace may write. Right: the simulator phases it measures (sim/step_result.h kPhase*, spelled
  // out so that builds without SimGrid still read traces; a test checks the two agree).
  static const std::vector<PhaseMapping> table = {
      // The step vocabulary (traces/phases.h): what the hardware runner and the simulator write.
      {"query_all_gather", {"query_gather"}, {}},
      {"attention", {"attention"}, {}},
      {"lse_all_gather", {"lse_gather"}, {}},
      {"correction", {"correction"}, {}},
      {"reduce_scatter", {"collective"}, {}},
      {"all_reduce", {"collective"}, {}},
      {"a2a_pack", {"pack"}, {}},
      {"all_to_all", {"collective"}, {}},
      {"a2a_combine", {"combine"}, {}},
      {"all_to_all_lse", {"lse_collective"}, {}},  // a2a-2call's second all-to-all
      // Traces of the two-kernel direct merge (before the one-kernel protocol).
      {"direct_write", {"push"}, {}},
      // The owner's combine kernel polls the N flags before combining, so on real GPUs (and in the
      // simulator) it spans the wait and the combine; emulation writes every logical rank's blocks and flags
      // before any owner's combine runs, so there it never waits and measures the combine alone.
      {"direct_combine", {"wait", "combine"}, {"combine"}},
      // The one-kernel direct merge and FlashInfer's fused merge: stores, flags, wait and combine in one
      // kernel per rank. Emulation runs every logical rank in one launch, which has no simulator
      // counterpart; measures_faithfully() keeps it out of fits and comparisons.
      {"direct_merge", {"push", "wait", "combine"}, {}},
      {"flashinfer_merge", {"push", "wait", "combine"}, {}},
      // Row-stream: the attention pushes from its epilogue (inside "attention"); the owner's combine waits
      // beside the attention for the rows it merges (in emulation too: there the ranks run concurrently), so
      // it is never the combine alone.
      {"row_stream_push", {"push"}, {}},
      {"row_stream_combine", {"wait", "combine"}, {}},
      // The simulator's phase groups themselves: how simulated traces named their phase summaries before the
      // step vocabulary.
      {"query_gather", {"query_gather"}, {}},
      {"lse_gather", {"lse_gather"}, {}},
      {"collective", {"collective"}, {}},
      {"lse_collective", {"lse_collective"}, {}},
      {"pack", {"pack"}, {}},
      {"push", {"push"}, {}},
      {"wait", {"wait"}, {}},
      {"combine", {"combine"}, {}},
      // Aggregates over several phases: known, compared with nothing (the step through the Summary record).
      {"step", {}, {}},
      {"merge", {}, {}},
      {"total", {}, {}},
  };
  return table;
}

std::optional<std::vector<std::string>> map_phase(std::string_view measured, traces::v1::Source source,
                                                  std::string_view where) {
  // Older runner traces' names ("q_allgather") as the vocabulary names them now (TraceReader does the same).
  const std::string key(traces::current_phase_name(normalise(measured)));
  for (const PhaseMapping& m : phase_mappings()) {
    if (m.measured != key) continue;
    const auto& sim =
        source == traces::v1::SOURCE_EMULATED && !m.sim_emulated.empty() ? m.sim_emulated : m.sim;
    if (sim.empty()) return std::nullopt;
    return std::vector<std::string>(sim.begin(), sim.end());
  }
  std::string known;
  for (const PhaseMapping& m : phase_mappings())
    known += (known.empty() ? "" : ", ") + std::string(m.measured);
  throw InputError(std::string(where) + ": phase '" + std::string(measured) +
                   "' has no simulator counterpart (known phases: " + known + ")");
}

std::string figure_name(const std::vector<std::string>& sim_phases) {
  std::string out;
  for (const std::string& p : sim_phases) out += (out.empty() ? "" : "+") + p;
  return out;
}

bool is_kernel_phase(std::string_view sim_phase) {
  return sim_phase == "attention" || sim_phase == "correction" || sim_phase == "pack" ||
         sim_phase == "combine";
}

bool measures_faithfully(traces::v1::Source source, std::string_view sim_phase) {
  if (source == traces::v1::SOURCE_EMULATED) return is_kernel_phase(sim_phase);
  return true;
}

bool measures_faithfully(traces::v1::Source source, const std::vector<std::string>& sim_phases) {
  return std::all_of(sim_phases.begin(), sim_phases.end(),
                     [&](const std::string& p) { return measures_faithfully(source, p); });
}

bool step_is_faithful(traces::v1::Source source) {
  return source != traces::v1::SOURCE_EMULATED;
}

}  // namespace dcpsim::analysis
