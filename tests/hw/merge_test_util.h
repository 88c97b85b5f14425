#pragma once
// Shared by the merge-kernel tests: N ranks' partials from the models/ reference for a small problem, in the
// layouts a test asks for, optionally with FlashAttention's sentinels planted.
#include <cmath>
#include <cstdint>
#include <vector>

#include "dcpsim/models/attention.h"
#include "dcpsim/models/problem.h"
#include "dcpsim/models/tensor.h"

namespace dcpsim::hw::testing {

struct MergeSetup {
  int dcp, heads, dim;
  std::vector<std::int64_t> contexts;
  models::LseBase base = models::LseBase::kE;
  models::DType out = models::DType::kBF16;
  bool transposed = false;
  std::int64_t pad = 0;
};

// Every rank's partial from the reference (O rounded to the output type, fp32 LSE, NaN in empty rows), with
// FlashAttention's +inf marker and a NaN LSE planted on some rows to prove they are never read.
inline std::vector<models::Partial> partials_for(const MergeSetup& s, std::uint64_t seed,
                                                 bool plant_sentinels) {
  models::GenerateOptions g;
  g.seed = seed;
  const models::Problem p = models::generate_problem(s.heads, 1, s.dim, s.dim, s.contexts, g);
  models::AttentionOptions o;
  o.base = s.base;
  o.compute = models::DType::kF32;
  o.out_dtype = s.out;
  o.lse_dtype = models::DType::kF32;
  std::vector<models::Partial> parts = models::rank_partials(p, s.dcp, 1, o);
  for (auto& part : parts) {
    const auto ol = models::OutLayout::padded(p.rows, s.heads, s.dim, s.pad);
    const auto ll = s.transposed ? models::LseLayout::transposed(p.rows, s.heads)
                                 : models::LseLayout::dense(p.rows, s.heads);
    part = models::relayout(part, ol, ll, std::nan(""));
  }
  if (plant_sentinels && s.dcp > 1) {
    auto& victim = parts[s.dcp - 1];
    for (int h = 0; h < s.heads; h += 3) {
      victim.lse[victim.lse_layout.index(0, h)] = h % 2 ? INFINITY : NAN;
      for (int d = 0; d < s.dim; ++d) victim.out[victim.out_layout.index(0, h, d)] = NAN;
    }
  }
  return parts;
}

}  // namespace dcpsim::hw::testing
