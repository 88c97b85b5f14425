// The end-to-end reference for one scenario and the error measures shared by every exactness check.
#include "dcpsim/models/reference.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "dcpsim/error.h"

namespace dcpsim::models {

ErrorStats compare(std::span<const double> out, std::span<const double> ref) {
  if (out.size() != ref.size()) {
    throw InputError("compare: output has " + std::to_string(out.size()) + " values but the reference has " +
                     std::to_string(ref.size()));
  }
  ErrorStats e;
  e.count = static_cast<std::int64_t>(out.size());
  double diff2 = 0.0, ref2 = 0.0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const double o = out[i], r = ref[i];
    if (std::isnan(o) || std::isnan(r)) {
      ++e.mismatched_nonfinite;
      continue;
    }
    if (std::isinf(o) || std::isinf(r)) {
      if (o != r) ++e.mismatched_nonfinite;
      continue;
    }
    const double d = o - r;
    diff2 += d * d;
    ref2 += r * r;
    e.max_abs = std::max(e.max_abs, std::fabs(d));
  }
  if (ref2 > 0.0) {
    e.rel_l2 = std::sqrt(diff2 / ref2);
  } else {
    e.rel_l2 = diff2 > 0.0 ? std::numeric_limits<double>::infinity() : 0.0;
  }
  return e;
}

ReferenceRun run_reference(const Scenario& scenario, std::uint64_t seed, DType accumulate) {
  scenario.validate();
  ReferenceRun run;
  run.problem = generate_problem(scenario, GenerateOptions{seed, scenario.kv_dtype});
  run.partials = rank_partials(run.problem, scenario.dcp, scenario.interleave, attention_options(scenario));
  MergeOptions merge_options;
  merge_options.strategy = scenario.strategy;
  merge_options.base = scenario.lse_base;
  merge_options.out_dtype = scenario.out_dtype;
  merge_options.accumulate = accumulate;
  run.merged = merge(run.partials, merge_options);

  AttentionOptions truth_options = attention_options(scenario);
  truth_options.out_dtype = DType::kF64;
  truth_options.lse_dtype = DType::kF64;
  truth_options.empty = EmptyRowMarker::kNegInfZero;  // what the merge gives a row that is empty everywhere
  run.truth = full_attention(run.problem, truth_options);
  run.out_error = compare(run.merged.out, run.truth.out);
  run.lse_error = compare(run.merged.lse, run.truth.lse);
  return run;
}

}  // namespace dcpsim::models
