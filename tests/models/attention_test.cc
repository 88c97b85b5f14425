// Local attention: a hand-computed case, base e vs base 2, GQA head mapping, empty-row markers, layouts.
#include "dcpsim/models/attention.h"

#include <cmath>
#include <numbers>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "dcpsim/error.h"
#include "dcpsim/models/dtype.h"

namespace dcpsim::models {
namespace {

// One row, one head, D_qk = D = 1, two keys with scores ln 1 and ln 3 (scale 1): weights 1/4 and 3/4.
Problem two_key_problem() {
  Problem p;
  p.rows = 1;
  p.heads = 1;
  p.qk_dim = 1;
  p.dim = 1;
  p.contexts = {2};
  p.q = {1.0};
  p.k = {{0.0, std::log(3.0)}};
  p.v = {{4.0, 8.0}};
  return p;
}

TEST(Attention, HandComputedTwoKeys) {
  AttentionOptions o;
  o.scale = 1.0;
  const Partial r = full_attention(two_key_problem(), o);
  EXPECT_NEAR(r.o(0, 0, 0), 0.25 * 4 + 0.75 * 8, 1e-15);
  EXPECT_NEAR(r.l(0, 0), std::log(4.0), 1e-15);
  o.base = LseBase::k2;
  const Partial r2 = full_attention(two_key_problem(), o);
  EXPECT_NEAR(r2.o(0, 0, 0), 7.0, 1e-15);
  EXPECT_NEAR(r2.l(0, 0), 2.0, 1e-15);  // log2(4)
}

TEST(Attention, BaseTwoLseIsBaseELseOverLn2AndSameOutput) {
  const Problem p = generate_problem(8, 2, 24, 16, {1, 5, 300}, GenerateOptions{3, DType::kF64, 2.0});
  AttentionOptions e, two;
  two.base = LseBase::k2;
  const Partial pe = full_attention(p, e), p2 = full_attention(p, two);
  for (int b = 0; b < p.rows; ++b) {
    for (int h = 0; h < p.heads; ++h) {
      EXPECT_NEAR(p2.l(b, h), pe.l(b, h) / std::numbers::ln2, 1e-12 * (1 + std::fabs(p2.l(b, h))));
      for (int d = 0; d < p.dim; ++d) EXPECT_NEAR(p2.o(b, h, d), pe.o(b, h, d), 1e-13);
    }
  }
}

TEST(Attention, GqaQueryHeadReadsKvHeadHOverGroup) {
  // 4 query heads, 2 kv heads: heads 0,1 read kv head 0 and heads 2,3 read kv head 1. With one key the output
  // is that key's value row, which identifies the kv head.
  Problem p;
  p.rows = 1;
  p.heads = 4;
  p.kv_heads = 2;
  p.qk_dim = 2;
  p.dim = 2;
  p.contexts = {1};
  p.q.assign(8, 0.5);
  p.k = {{1, 2, 3, 4}};
  p.v = {{10, 11, 20, 21}};
  const Partial r = full_attention(p, AttentionOptions{});
  EXPECT_EQ(r.o(0, 0, 0), 10);
  EXPECT_EQ(r.o(0, 1, 1), 11);
  EXPECT_EQ(r.o(0, 2, 0), 20);
  EXPECT_EQ(r.o(0, 3, 1), 21);
  EXPECT_NEAR(r.l(0, 0), 0.5 * (1 + 2) / std::sqrt(2.0), 1e-15);  // one key: L = its score
  EXPECT_NEAR(r.l(0, 3), 0.5 * (3 + 4) / std::sqrt(2.0), 1e-15);
}

TEST(Attention, EmptyAndPaddingRowsCarryTheChosenMarker) {
  const Problem p = generate_problem(2, 1, 4, 4, {0, 3, 3}, GenerateOptions{});
  AttentionOptions o;
  o.valid_rows = 2;  // row 2 is CUDA-graph padding
  const Partial nan_marker = full_attention(p, o);
  for (int b : {0, 2}) {
    EXPECT_EQ(nan_marker.l(b, 1), -INFINITY);
    EXPECT_TRUE(std::isnan(nan_marker.o(b, 1, 3)));
  }
  EXPECT_TRUE(std::isfinite(nan_marker.l(1, 1)));
  o.empty = EmptyRowMarker::kPosInfZero;
  const Partial fa = full_attention(p, o);
  EXPECT_EQ(fa.l(0, 0), INFINITY);
  EXPECT_EQ(fa.o(0, 0, 0), 0.0);
  o.empty = EmptyRowMarker::kNegInfZero;
  EXPECT_EQ(full_attention(p, o).o(2, 1, 2), 0.0);
}

TEST(Attention, Fp32ComputeIsCloseToFp64AndRoundingIsApplied) {
  const Problem p = generate_problem(4, 4, 32, 32, {64, 200}, GenerateOptions{11, DType::kBF16});
  AttentionOptions f64, f32;
  f32.compute = DType::kF32;
  f32.out_dtype = DType::kBF16;
  f32.lse_dtype = DType::kF32;
  const Partial a = full_attention(p, f64), b = full_attention(p, f32);
  for (int r = 0; r < p.rows; ++r) {
    for (int h = 0; h < p.heads; ++h) {
      EXPECT_NEAR(b.l(r, h), a.l(r, h), 1e-5 * (1 + std::fabs(a.l(r, h))));
      EXPECT_EQ(b.l(r, h), round_to(DType::kF32, b.l(r, h)));
      for (int d = 0; d < p.dim; ++d) {
        EXPECT_NEAR(b.o(r, h, d), a.o(r, h, d), std::ldexp(1.0, -8) * std::fabs(a.o(r, h, d)) + 1e-5);
        EXPECT_EQ(b.o(r, h, d), round_to(DType::kBF16, b.o(r, h, d)));
      }
    }
  }
}

TEST(Attention, PaddedOutputAndTransposedLseHoldTheSameValues) {
  const Problem p = generate_problem(3, 1, 8, 6, {5, 0, 9}, GenerateOptions{5});
  AttentionOptions dense, strided;
  strided.transposed_lse = true;
  strided.out_row_pad = 7;
  const Partial a = full_attention(p, dense), b = full_attention(p, strided);
  EXPECT_EQ(b.out_layout.row_stride, 3 * 6 + 7);
  EXPECT_EQ(b.lse_layout.head_stride, 3);
  for (int r = 0; r < p.rows; ++r) {
    for (int h = 0; h < p.heads; ++h) {
      EXPECT_EQ(std::isnan(a.l(r, h)), std::isnan(b.l(r, h)));
      if (!std::isnan(a.l(r, h))) {
        EXPECT_EQ(a.l(r, h), b.l(r, h));
      }
      for (int d = 0; d < p.dim; ++d) {
        EXPECT_EQ(std::isnan(a.o(r, h, d)), std::isnan(b.o(r, h, d)));
        if (!std::isnan(a.o(r, h, d))) {
          EXPECT_EQ(a.o(r, h, d), b.o(r, h, d));
        }
      }
    }
  }
  EXPECT_TRUE(std::isnan(b.out[3 * 6]));  // the padding itself is poisoned
}

TEST(Attention, ImpossibleRequestsThrow) {
  const Problem p = generate_problem(2, 1, 4, 4, {3}, GenerateOptions{});
  AttentionOptions o;
  o.compute = DType::kBF16;
  EXPECT_THROW(full_attention(p, o), InputError);
  o = AttentionOptions{};
  o.scale = -1;
  EXPECT_THROW(full_attention(p, o), InputError);
  KvShard s = whole_kv(p);
  s.lengths[0] = 2;
  EXPECT_THROW(local_attention(p, s, AttentionOptions{}), InputError);
  EXPECT_THROW(rank_partials(p, 0, 1, AttentionOptions{}), InputError);
  EXPECT_THROW(generate_problem(6, 4, 4, 4, {3}, GenerateOptions{}), InputError);  // 4 does not divide 6
  EXPECT_THROW(generate_problem(4, 4, 4, 8, {3}, GenerateOptions{}), InputError);  // qk_dim < dim
}

TEST(Problem, GenerationIsDeterministicAndRounded) {
  const Problem a = generate_problem(4, 1, 16, 8, {10, 3}, GenerateOptions{42, DType::kBF16});
  const Problem b = generate_problem(4, 1, 16, 8, {10, 3}, GenerateOptions{42, DType::kBF16});
  const Problem c = generate_problem(4, 1, 16, 8, {10, 3}, GenerateOptions{43, DType::kBF16});
  EXPECT_EQ(a.q, b.q);
  EXPECT_EQ(a.k, b.k);
  EXPECT_NE(a.q, c.q);
  EXPECT_TRUE(representable(DType::kBF16, a.q.data(), static_cast<std::int64_t>(a.q.size())));
  EXPECT_TRUE(representable(DType::kBF16, a.v[0].data(), static_cast<std::int64_t>(a.v[0].size())));
  double sum2 = 0;
  for (double x : a.k[0]) sum2 += x * x;
  EXPECT_NEAR(sum2 / static_cast<double>(a.k[0].size()), 1.0, 0.3);  // unit variance
}

}  // namespace
}  // namespace dcpsim::models
