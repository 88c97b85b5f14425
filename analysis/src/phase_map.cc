// Measured phase name -> simulator phase. Add a row when a producer writes a new name; never map by pattern.
#include "dcpsim/analysis/phase_map.h"

#include <algorithm>
#include <cctype>

#include "dcpsim/error.h"

namespace dcpsim::analysis {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

}  // namespace

const std::vector<PhaseMapping>& phase_mappings() {
  // Left: what a trace may write (simulator names first, then the hardware runner's spellings, then
  // aggregates). Right: the simulator phase it is compared with (sim/step_result.h kPhase*; spelled out so
  // that builds without SimGrid still read traces; a test checks the two agree).
  static const std::vector<PhaseMapping> table = {
      {"query_gather", "query_gather"},
      {"attention", "attention"},
      {"lse_gather", "lse_gather"},
      {"correction", "correction"},
      {"collective", "collective"},
      {"pack", "pack"},
      {"push", "push"},
      {"wait", "wait"},
      {"combine", "combine"},
      // hw/: the operation names of hw/ops (bench.h) and the collective each strategy runs.
      {"query_allgather", "query_gather"},
      {"attn", "attention"},
      {"decode_attention", "attention"},
      {"lse_allgather", "lse_gather"},
      {"correct", "correction"},
      {"lse_correct", "correction"},
      {"reduce_scatter", "collective"},
      {"all_reduce", "collective"},
      {"all_to_all", "collective"},
      {"a2a", "collective"},
      {"a2a_pack", "pack"},
      {"a2a_combine", "combine"},
      {"unpack_combine", "combine"},
      {"direct_push", "push"},
      {"flag_wait", "wait"},
      {"direct_combine", "combine"},
      // Aggregates over several phases: known, compared with nothing.
      {"step", ""},
      {"merge", ""},
      {"total", ""},
  };
  return table;
}

std::optional<std::string> map_phase(std::string_view measured, std::string_view where) {
  // Hyphens and case vary between producers ("a2a-pack", "A2A_PACK"); the words do not.
  std::string key = lower(measured);
  std::replace(key.begin(), key.end(), '-', '_');
  for (const PhaseMapping& m : phase_mappings()) {
    if (m.measured != key) continue;
    if (m.sim.empty()) return std::nullopt;
    return std::string(m.sim);
  }
  std::string known;
  for (const PhaseMapping& m : phase_mappings()) known += (known.empty() ? "" : ", ") + std::string(m.measured);
  throw InputError(std::string(where) + ": phase '" + std::string(measured) +
                   "' has no simulator counterpart (known phases: " + known + ")");
}

bool is_kernel_phase(std::string_view sim_phase) {
  return sim_phase == "attention" || sim_phase == "correction" || sim_phase == "pack" ||
         sim_phase == "combine";
}

bool measures_faithfully(traces::v1::Source source, std::string_view sim_phase) {
  if (source == traces::v1::SOURCE_EMULATED) return is_kernel_phase(sim_phase);
  return true;
}

bool step_is_faithful(traces::v1::Source source) { return source != traces::v1::SOURCE_EMULATED; }

}  // namespace dcpsim::analysis
