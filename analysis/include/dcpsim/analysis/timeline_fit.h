#pragma once
// Launch numbers read off measured GPU timelines (the GpuActivity records `hw run` keeps with CUPTI), where a
// fit of step figures cannot separate them (DESIGN.md "One clock, the GPU's"):
//   - the gap from a kernel's end to the start of the next, already queued kernel, per launch mode
//     (launch.dependent_gap graph-replayed, launch.dependent_gap_eager): consecutive kernels of a
//     repetition, no copy or memset between them, the first at least `min_first_s` long so that the host had
//     queued the second before the first ended. PDL sections give none (the next kernel starts before the
//     previous ends), nor do row-stream ones (its ranks' kernels share the GPU at once);
//   - the query repack ahead of FlashInfer's MLA kernel (kernel.q_repack): a least-squares line
//     floor + bytes / bandwidth over the repacks of emulated ranks after the first (their query is cold:
//     the ranks' attention before them evicted it), bytes = the query read and written.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "dcpsim/models/profile.h"

namespace dcpsim::analysis {

struct GapStats {
  int pairs = 0;
  double median_s = 0.0, p10_s = 0.0, p90_s = 0.0;
};

struct LineFit {
  int points = 0;
  int sizes = 0;  // distinct byte counts
  double floor_s = 0.0;
  double bandwidth = 0.0;  // B/s
};

struct TimelineFit {
  GapStats graph, eager;
  std::optional<LineFit> q_repack;  // with two sizes or more
  int sections = 0;                 // sections that had a GPU timeline
};

// Reads every section of `traces` (measured traces with GPU activities).
TimelineFit fit_timelines(const std::vector<std::filesystem::path>& traces, double min_first_s = 10e-6);

// `profile` with the fitted numbers written (dependent_gap and dependent_gap_eager from at least 20 pairs
// each, q_repack's floor and efficiency from a line over two sizes or more), each source naming the fit and
// `what` (the traces, device, date). Returns one line per number written.
std::vector<std::string> apply_timeline_fit(const TimelineFit& fit, models::HardwareProfile& profile,
                                            const std::string& what);

}  // namespace dcpsim::analysis
