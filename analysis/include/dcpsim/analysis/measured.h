#pragma once
// Measured (or simulated) traces as calibrate and validate read them: per section the scenario it ran, the
// per-rank phase medians mapped to simulator phases (phase_map.h), the step latency and per-row ready times.
// Anything calibration cannot use is an InputError naming the file: not a trace, truncated, no header, no
// scenario, a section without phase summaries, a phase name with no simulator counterpart.
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "dcpsim/models/scenario.h"
#include "dcpsim/traces/schema.h"

namespace dcpsim::analysis {

// One phase of one rank, in seconds. rank -1: a statistic over all ranks.
struct MeasuredPhase {
  int rank = 0;
  std::string measured_name;  // as the trace spells it
  std::string phase;          // the figure: the simulator phase it maps to ("wait+combine" for several)
  std::vector<std::string> sim_phases;  // the simulator phases whose summed duration it measures
  double median_s = 0.0;
  double min_s = 0.0;
  double max_s = 0.0;
  int repetitions = 0;
  // From the GPU timeline (the trace's GPU activities; 0 without them): the median over repetitions of the
  // longest time the GPU sat idle between two consecutive activities of this rank's phase. Queued kernels
  // follow each other within ~2 µs even when launched eagerly; much more means the GPU waited for the host.
  double largest_inner_gap_s = 0.0;
};

// When a row's merged LSE and output were ready on a rank, relative to the section's first event.
struct MeasuredRow {
  int row = 0;
  int rank = 0;
  double lse_ready_s = 0.0;
  double output_ready_s = 0.0;
};

struct MeasuredSection {
  std::filesystem::path trace;  // the file it came from
  int index = 0;                // its position in that file (0-based)
  traces::v1::Source source = traces::v1::SOURCE_UNSPECIFIED;
  models::Scenario scenario;
  std::string label;  // Scenario::label(), e.g. "dcp8 h128 d512/576 kv1 b64 ctx131072 ag-rs graph"
  std::vector<MeasuredPhase> phases;
  std::vector<MeasuredRow> rows;
  std::optional<double> step_s;  // Summary.step_latency_ns, when present
  // The runner stamped rows (`hw run --row-stamps`, scenario param row_stamps=on): its correction and
  // combine kernels were the instrumented ones (models::MergeShape::row_stamps).
  bool row_stamps = false;
  // Imported from a profiler trace (`dcpsim import`): phase -> the implementation its kernels belong to
  // (scenario params "impl.<phase>", import_phases.h); empty for the runner's own traces.
  std::map<std::string, std::string> implementations;
  // Timed with a CUDA event pair around every phase (`hw run --timing events`, and every real multi-GPU trace
  // made before the runner recorded its timing): each phase then holds the pair's cost (profile
  // launch.event_pair), which validate and calibrate add to the prediction.
  bool event_timed = false;
  // "file.pb#3 (label)", the prefix of every message about this section.
  std::string where() const;
};

struct MeasuredTrace {
  std::filesystem::path path;
  traces::v1::Header header;
  std::vector<MeasuredSection> sections;
};

// Reads one trace. Phases that map to no simulator phase (aggregates) are left out; rank -1 summaries are
// kept only for phases no rank reports on its own.
MeasuredTrace load_measured(const std::filesystem::path& path);

// Every section of every file, in order.
std::vector<MeasuredSection> all_sections(const std::vector<MeasuredTrace>& traces);

}  // namespace dcpsim::analysis
