// The exact merge: the scalar LSE step by hand, and the DCP result against attention over the whole KV on
// randomised shapes: fp64 to 1e-12, bf16/fp16 within a bound derived from each strategy's roundings.
#include "dcpsim/models/merge.h"

#include <cmath>
#include <limits>
#include <numbers>

#include <gtest/gtest.h>

#include "dcp_cases.h"
#include "dcpsim/error.h"
#include "dcpsim/models/reference.h"

namespace dcpsim::models {
namespace {

using testing::DcpCase;
using testing::kInf;
using testing::kNaN;
using testing::merge_options;

TEST(MergeLse, HandComputedBaseE) {
  const std::vector<double> l = {0.0, std::log(3.0)};
  const LseMerge m = merge_lse(l, LseBase::kE, DType::kF64);
  EXPECT_NEAR(m.lse, std::log(4.0), 1e-15);
  EXPECT_NEAR(m.weights[0], 0.25, 1e-15);
  EXPECT_NEAR(m.weights[1], 0.75, 1e-15);
}

TEST(MergeLse, HandComputedBaseTwoIsExactInFp32) {
  const std::vector<double> l = {2.0, 2.0, -kInf};
  const LseMerge m = merge_lse(l, LseBase::k2, DType::kF32);
  EXPECT_EQ(m.lse, 3.0);
  EXPECT_EQ(m.weights, (std::vector<double>{0.5, 0.5, 0.0}));
}

TEST(MergeLse, SentinelsAreEmptyPartials) {
  for (DType acc : {DType::kF32, DType::kF64}) {
    const std::vector<double> l = {kNaN, 1.5, kInf, -kInf};
    const LseMerge m = merge_lse(l, LseBase::kE, acc);
    EXPECT_EQ(m.lse, 1.5);
    EXPECT_EQ(m.weights, (std::vector<double>{0.0, 1.0, 0.0, 0.0}));
    const std::vector<double> empty = {kNaN, kInf, -kInf};
    const LseMerge e = merge_lse(empty, LseBase::k2, acc);
    EXPECT_EQ(e.lse, -kInf);
    EXPECT_EQ(e.weights, (std::vector<double>{0.0, 0.0, 0.0}));
  }
}

TEST(MergeLse, LargeAndTinyLsesStayFinite) {
  const std::vector<double> l = {1e4, 1e4 - 200.0, -1e4};
  const LseMerge m = merge_lse(l, LseBase::kE, DType::kF64);
  EXPECT_NEAR(m.lse, 1e4 + std::log1p(std::exp(-200.0)), 1e-9);
  EXPECT_EQ(m.weights[2], 0.0);  // underflows to exactly 0
  EXPECT_NEAR(m.weights[0] + m.weights[1], 1.0, 1e-15);
}

TEST(MergeLse, RejectsOtherAccumulateTypes) {
  EXPECT_THROW(merge_lse({}, LseBase::kE, DType::kBF16), InputError);
}

// Rows empty on every rank must come out exactly O = 0, L = −inf.
void expect_empty_rows_zero(const DcpCase& c, const MergeResult& m) {
  for (int b = 0; b < m.rows; ++b) {
    if (c.contexts[b] != 0) continue;
    for (int h = 0; h < m.heads; ++h) {
      ASSERT_EQ(m.lse[static_cast<std::size_t>(b) * m.heads + h], -kInf);
      for (int d = 0; d < m.dim; ++d)
        ASSERT_EQ(m.out[(static_cast<std::size_t>(b) * m.heads + h) * m.dim + d], 0.0);
    }
  }
}

TEST(MergeExactness, Fp64EqualsAttentionOverTheWholeKv) {
  std::vector<DcpCase> cases = testing::edge_cases();
  for (const DcpCase& c : testing::random_cases(45, 2024)) cases.push_back(c);
  for (const DcpCase& c : cases) {
    SCOPED_TRACE(c.describe());
    const Problem p = c.problem();
    for (LseBase base : {LseBase::kE, LseBase::k2}) {
      // Empty shards leave NaN in O (kNegInfNaN): any read of them would poison the result.
      const std::vector<Partial> parts = rank_partials(p, c.dcp, c.interleave, testing::exact_options(base));
      AttentionOptions truth_options = testing::exact_options(base);
      truth_options.empty = EmptyRowMarker::kNegInfZero;
      const Partial truth = full_attention(p, truth_options);
      for (Strategy s : all_strategies()) {
        if (scatters_heads(s) && c.heads % c.dcp != 0) continue;
        SCOPED_TRACE(std::string(to_string(s)) + " base " + std::string(to_string(base)));
        const MergeResult m = merge(parts, merge_options(s, DType::kF64, DType::kF64, base));
        const ErrorStats eo = compare(m.out, truth.out), el = compare(m.lse, truth.lse);
        EXPECT_LE(eo.rel_l2, 1e-12);
        EXPECT_LE(el.rel_l2, 1e-12);
        EXPECT_EQ(eo.mismatched_nonfinite, 0);
        EXPECT_EQ(el.mismatched_nonfinite, 0);
        expect_empty_rows_zero(c, m);
      }
    }
  }
}

// Checks every element of a 16-bit merge against testing::element_bound.
void expect_within_rounding_bound(const DcpCase& c, DType out, Strategy s, const std::vector<Partial>& exact,
                                  const Partial& truth, const MergeResult& m) {
  std::int64_t violations = 0;
  for (int b = 0; b < m.rows; ++b) {
    for (int h = 0; h < m.heads; ++h) {
      const double lse = truth.l(b, h);
      double max_abs_lse = 0.0;
      for (const Partial& e : exact)
        max_abs_lse = std::max(max_abs_lse, std::isfinite(e.l(b, h)) ? std::fabs(e.l(b, h)) : 0.0);
      const std::size_t cell = static_cast<std::size_t>(b) * m.heads + h;
      if (lse == -kInf) {
        violations += m.lse[cell] != -kInf;
        continue;
      }
      violations += std::fabs(m.lse[cell] - lse) > std::ldexp(1.0, -24) * (4 * max_abs_lse + 16);
      for (int d = 0; d < m.dim; ++d) {
        double s_abs = 0.0;  // Σ w_i·|O*_i| with exact weights
        for (const Partial& e : exact) {
          if (e.l(b, h) != -kInf) s_abs += std::exp(e.l(b, h) - lse) * std::fabs(e.o(b, h, d));
        }
        const double ref = truth.o(b, h, d), got = m.out[cell * m.dim + d];
        const double bound = testing::element_bound(out, s, ref, s_abs, max_abs_lse, c.dcp);
        if (!(std::fabs(got - ref) <= bound)) {
          if (violations < 5)
            ADD_FAILURE() << "b=" << b << " h=" << h << " d=" << d << " got " << got << " ref " << ref
                          << " bound " << bound;
          ++violations;
        }
      }
    }
  }
  EXPECT_EQ(violations, 0);
}

TEST(MergeExactness, SixteenBitOutputsWithinTheirRoundingBound) {
  std::vector<DcpCase> cases = testing::edge_cases();
  for (const DcpCase& c : testing::random_cases(27, 77, 1.5e5)) cases.push_back(c);
  for (const DcpCase& c : cases) {
    SCOPED_TRACE(c.describe());
    const Problem p = c.problem();
    const std::vector<Partial> exact = rank_partials(p, c.dcp, c.interleave, testing::exact_options());
    AttentionOptions truth_options = testing::exact_options();
    truth_options.empty = EmptyRowMarker::kNegInfZero;
    const Partial truth = full_attention(p, truth_options);
    for (DType out : {DType::kBF16, DType::kF16}) {
      AttentionOptions o = testing::exact_options();
      o.out_dtype = out;
      o.lse_dtype = DType::kF32;
      const std::vector<Partial> parts = rank_partials(p, c.dcp, c.interleave, o);
      for (Strategy s : all_strategies()) {
        if (scatters_heads(s) && c.heads % c.dcp != 0) continue;
        SCOPED_TRACE(std::string(to_string(s)) + " " + std::string(to_string(out)));
        const MergeResult m = merge(parts, merge_options(s, out, DType::kF32));
        expect_within_rounding_bound(c, out, s, exact, truth, m);
        expect_empty_rows_zero(c, m);
        EXPECT_TRUE(representable(out, m.out.data(), static_cast<std::int64_t>(m.out.size())));
      }
    }
  }
}

TEST(MergeExactness, ScenarioReferenceRun) {
  Scenario s;
  s.dcp = 4;
  s.heads = 8;
  s.contexts = {0, 3, 700};
  s.strategy = Strategy::kDirect;
  s.out_dtype = DType::kF64;
  s.kv_dtype = DType::kF64;
  const ReferenceRun run = run_reference(s, 9, DType::kF64);
  EXPECT_EQ(run.partials.size(), 4u);
  EXPECT_LE(run.out_error.rel_l2, 1e-12);
  EXPECT_LE(run.lse_error.rel_l2, 1e-12);
  EXPECT_EQ(run.out_error.mismatched_nonfinite, 0);
  s.out_dtype = DType::kBF16;
  s.strategy = Strategy::kAgRs;
  const ReferenceRun bf16 = run_reference(s, 9);
  EXPECT_GT(bf16.out_error.rel_l2, 1e-5);  // bf16 storage is visible...
  EXPECT_LT(bf16.out_error.rel_l2, 1e-2);  // ...and bounded
}

TEST(Compare, RelativeAndAbsoluteErrorAndNonFinite) {
  const std::vector<double> ref = {3.0, 4.0, -kInf, 0.0};
  const std::vector<double> out = {3.0, 4.5, -kInf, kNaN};
  const ErrorStats e = compare(out, ref);
  EXPECT_DOUBLE_EQ(e.rel_l2, 0.5 / 5.0);
  EXPECT_DOUBLE_EQ(e.max_abs, 0.5);
  EXPECT_EQ(e.mismatched_nonfinite, 1);
  EXPECT_EQ(compare(std::vector<double>{kInf}, std::vector<double>{-kInf}).mismatched_nonfinite, 1);
  EXPECT_EQ(compare(std::vector<double>{0.0}, std::vector<double>{0.0}).rel_l2, 0.0);
  EXPECT_THROW(compare(out, std::vector<double>{1.0}), InputError);
}

}  // namespace
}  // namespace dcpsim::models
