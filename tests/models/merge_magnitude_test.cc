// The merge stays exact for any finite LSE: weights are normalised by their max-shifted sum (SPEC step 4).
// With w_i = exp(L_i − L) instead, two LSEs of 1e8 in fp32 give L = 1e8 (log 2 is lost to rounding) and w = 1
// each: the merge of two outputs of 1.0 returned 2.0; an LSE of 1e308 returned NaN.
#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "dcpsim/models/merge.h"

namespace dcpsim::models {
namespace {

std::vector<Partial> two_ranks(double lse0, double lse1, double out0, double out1) {
  std::vector<Partial> parts;
  for (auto [lse, out] : {std::pair{lse0, out0}, std::pair{lse1, out1}}) {
    Partial p{OutLayout::dense(1, 2, 1), {out, out}, LseLayout::dense(1, 2), {lse, lse}};
    parts.push_back(std::move(p));
  }
  return parts;
}

MergeResult run(const std::vector<Partial>& parts, DType acc, LseBase base, Strategy strategy) {
  MergeOptions o;
  o.strategy = strategy;
  o.base = base;
  o.out_dtype = DType::kF32;
  o.accumulate = acc;
  return merge(parts, o);
}

class MergeMagnitude : public ::testing::TestWithParam<std::tuple<DType, LseBase, Strategy>> {};

TEST_P(MergeMagnitude, EqualLargeLsesAverageTheOutputs) {
  const auto [acc, base, strategy] = GetParam();
  // The packed all-to-all carries the LSE as an fp32 bit pattern (SPEC): its range is fp32's.
  const std::vector<double> lses = strategy == Strategy::kA2a
                                       ? std::vector<double>{1e8, -1e8, 3e37, 3e38, -3e38}
                                       : std::vector<double>{1e8, -1e8, 3e37, 1e300, 1e308, -1e308};
  for (double l : lses) {
    const MergeResult r = run(two_ranks(l, l, 1.0, 3.0), acc, base, strategy);
    for (double o : r.out) EXPECT_NEAR(o, 2.0, 1e-6) << "LSE " << l;
  }
}

TEST_P(MergeMagnitude, ALargeGapGivesAllWeightToTheLargerLse) {
  const auto [acc, base, strategy] = GetParam();
  const MergeResult r = run(two_ranks(1e8, 1e8 - 1000.0, 1.0, 5.0), acc, base, strategy);
  for (double o : r.out) EXPECT_NEAR(o, 1.0, 1e-6);
  const double big = strategy == Strategy::kA2a ? 3e38 : 1e308;
  const MergeResult huge = run(two_ranks(big, -big, 4.0, 9.0), acc, base, strategy);
  for (double o : huge.out) EXPECT_NEAR(o, 4.0, 1e-6);
}

TEST_P(MergeMagnitude, TheMergedLseIsTheMaxPlusTheLogOfTheShiftedSum) {
  const auto [acc, base, strategy] = GetParam();
  const double l = 1000.0;  // exact in fp32, and L − M = log 2 is visible at this magnitude
  const MergeResult r = run(two_ranks(l, l, 1.0, 1.0), acc, base, strategy);
  const double expected = l + (base == LseBase::k2 ? 1.0 : std::log(2.0));
  for (double x : r.lse) EXPECT_NEAR(x, expected, 1e-3);
}

INSTANTIATE_TEST_SUITE_P(AllBasesAndAccumulators, MergeMagnitude,
                         ::testing::Combine(::testing::Values(DType::kF32, DType::kF64),
                                            ::testing::Values(LseBase::kE, LseBase::k2),
                                            ::testing::Values(Strategy::kAgRs, Strategy::kA2a,
                                                              Strategy::kDirect)));

}  // namespace
}  // namespace dcpsim::models
