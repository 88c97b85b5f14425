#pragma once
// The whole DCP functional reference for one scenario in one call, and the error measures used to compare any
// merged output (CPU or GPU) against the no-DCP ground truth.
#include <cstdint>
#include <span>
#include <vector>

#include "dcpsim/models/attention.h"
#include "dcpsim/models/merge.h"
#include "dcpsim/models/problem.h"
#include "dcpsim/models/scenario.h"

namespace dcpsim::models {

// ‖out − ref‖₂ / ‖ref‖₂ (0 when both are zero) and max |out − ref|. Positions where both are the same
// infinity count as equal; a NaN, or an infinity not matched in the reference, is counted in
// `mismatched_nonfinite`.
struct ErrorStats {
  double rel_l2 = 0.0;
  double max_abs = 0.0;
  std::int64_t mismatched_nonfinite = 0;
  std::int64_t count = 0;
};
ErrorStats compare(std::span<const double> out, std::span<const double> ref);

struct ReferenceRun {
  Problem problem;
  std::vector<Partial> partials;  // per rank
  MergeResult merged;
  Partial truth;         // fp64 attention over the whole KV, dense layouts
  ErrorStats out_error;  // merged.out vs truth.out
  ErrorStats lse_error;  // merged.lse vs truth.lse
};

// Generates the scenario's problem from `seed`, runs every rank's local attention
// (attention_options(scenario)), merges with the scenario's strategy (accumulating in `accumulate`) and the
// fp64 ground truth.
ReferenceRun run_reference(const Scenario& scenario, std::uint64_t seed, DType accumulate = DType::kF32);

}  // namespace dcpsim::models
