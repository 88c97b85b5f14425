// Strategy semantics beyond the numbers: sentinels, base equivalence, rank permutation, strided inputs,
// padding rows, N = 1, output placement, each strategy's rounding order, and impossible requests.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "dcp_cases.h"
#include "dcpsim/error.h"
#include "dcpsim/models/merge.h"

namespace dcpsim::models {
namespace {

using ::testing::HasSubstr;
using testing::kInf;
using testing::kNaN;
using testing::merge_options;

struct RankPartials {
  Problem problem;
  std::vector<Partial> parts;
};

// 6 ranks, 12 heads, contexts with empty shards (2 < N), an empty row and long rows; bf16 partials.
RankPartials bf16_setup(DType out = DType::kBF16, LseBase base = LseBase::kE) {
  RankPartials s{generate_problem(12, 3, 64, 64, {2, 0, 500, 41}, GenerateOptions{5, DType::kBF16, 2.0}), {}};
  AttentionOptions o;
  o.base = base;
  o.out_dtype = out;
  o.lse_dtype = DType::kF32;
  s.parts = rank_partials(s.problem, 6, 2, o);
  return s;
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!(a[i] == b[i]) || std::signbit(a[i]) != std::signbit(b[i])) return false;
  }
  return true;
}

TEST(MergeSemantics, NaNAndPosInfLsesAreEmptyShardsWhoseOutputIsNeverRead) {
  const RankPartials s = bf16_setup();
  std::vector<Partial> marked = s.parts;
  for (std::size_t r = 0; r < marked.size(); ++r) {
    Partial& p = marked[r];
    for (int b = 0; b < p.lse_layout.rows; ++b) {
      for (int h = 0; h < p.lse_layout.heads; ++h) {
        double& l = p.lse[p.lse_layout.index(b, h)];
        if (l != -kInf) continue;
        l = (r + b + h) % 2 ? kInf : kNaN;  // FlashAttention marker or NaN instead of −inf
        for (int d = 0; d < p.out_layout.dim; ++d) p.out[p.out_layout.index(b, h, d)] = (d % 2) ? kNaN : kInf;
      }
    }
  }
  for (Strategy st : all_strategies()) {
    const MergeResult a = merge(s.parts, merge_options(st, DType::kBF16, DType::kF32));
    const MergeResult b = merge(marked, merge_options(st, DType::kBF16, DType::kF32));
    EXPECT_TRUE(same_bits(a.out, b.out)) << to_string(st);
    EXPECT_TRUE(same_bits(a.lse, b.lse)) << to_string(st);
    for (int h = 0; h < 12; ++h) EXPECT_EQ(b.lse[12 + h], -kInf);  // row 1 is empty everywhere
    EXPECT_TRUE(
        std::all_of(b.out.begin() + 12 * 64, b.out.begin() + 24 * 64, [](double x) { return x == 0.0; }));
  }
}

TEST(MergeSemantics, ANaNLseDropsThatRanksContribution) {
  // Rank 2's LSE made NaN everywhere: the result equals the merge of the other ranks alone.
  const RankPartials s = bf16_setup(DType::kF32);
  std::vector<Partial> poisoned = s.parts;
  std::fill(poisoned[2].lse.begin(), poisoned[2].lse.end(), kNaN);
  std::fill(poisoned[2].out.begin(), poisoned[2].out.end(), kNaN);
  std::vector<Partial> without = s.parts;
  std::fill(without[2].lse.begin(), without[2].lse.end(), -kInf);
  for (Strategy st : all_strategies()) {
    const MergeResult a = merge(poisoned, merge_options(st, DType::kF32, DType::kF32));
    const MergeResult b = merge(without, merge_options(st, DType::kF32, DType::kF32));
    EXPECT_TRUE(same_bits(a.out, b.out));
    EXPECT_TRUE(std::none_of(a.out.begin(), a.out.end(), [](double x) { return std::isnan(x); }));
  }
}

TEST(MergeSemantics, BaseTwoGivesTheSameOutputAndLseOverLn2) {
  const RankPartials e = bf16_setup(DType::kF64, LseBase::kE), two = bf16_setup(DType::kF64, LseBase::k2);
  for (Strategy st : all_strategies()) {
    const MergeResult me = merge(e.parts, merge_options(st, DType::kF64, DType::kF64, LseBase::kE));
    const MergeResult m2 = merge(two.parts, merge_options(st, DType::kF64, DType::kF64, LseBase::k2));
    for (std::size_t i = 0; i < me.out.size(); ++i)
      ASSERT_NEAR(m2.out[i], me.out[i], 1e-6) << i;  // fp32 LSE inputs
    for (std::size_t i = 0; i < me.lse.size(); ++i) {
      if (me.lse[i] == -kInf) {
        ASSERT_EQ(m2.lse[i], -kInf);
      } else {
        ASSERT_NEAR(m2.lse[i], me.lse[i] / std::numbers::ln2, 1e-6 * (1 + std::fabs(m2.lse[i])));
      }
    }
  }
}

TEST(MergeSemantics, PermutingRanksChangesOnlyRounding) {
  const RankPartials s = bf16_setup(DType::kF64);
  std::vector<Partial> permuted(s.parts.rbegin(), s.parts.rend());
  std::rotate(permuted.begin(), permuted.begin() + 2, permuted.end());
  for (Strategy st : all_strategies()) {
    const MergeResult a = merge(s.parts, merge_options(st, DType::kF64, DType::kF64));
    const MergeResult b = merge(permuted, merge_options(st, DType::kF64, DType::kF64));
    for (std::size_t i = 0; i < a.out.size(); ++i) ASSERT_NEAR(a.out[i], b.out[i], 1e-14) << to_string(st);
    const MergeResult a16 = merge(s.parts, merge_options(st, DType::kBF16, DType::kF32));
    const MergeResult b16 = merge(permuted, merge_options(st, DType::kBF16, DType::kF32));
    for (std::size_t i = 0; i < a16.out.size(); ++i) {
      ASSERT_NEAR(a16.out[i], b16.out[i], std::ldexp(1.0, -7) * std::fabs(a16.out[i]) + 1e-6)
          << to_string(st);
    }
  }
}

TEST(MergeSemantics, StridedOutputAndTransposedLseGiveTheSameResult) {
  const RankPartials s = bf16_setup();
  std::vector<Partial> strided;
  for (std::size_t r = 0; r < s.parts.size(); ++r) {
    const OutLayout& d = s.parts[r].out_layout;
    const LseLayout lse =
        r % 2 ? LseLayout::transposed(d.rows, d.heads) : LseLayout{d.rows, d.heads, d.heads + 3, 1};
    strided.push_back(relayout(
        s.parts[r], OutLayout{d.rows, d.heads, d.dim, d.heads * (d.dim + 5) + 11, d.dim + 5}, lse, kNaN));
  }
  for (Strategy st : all_strategies()) {
    const MergeResult a = merge(s.parts, merge_options(st, DType::kBF16, DType::kF32));
    const MergeResult b = merge(strided, merge_options(st, DType::kBF16, DType::kF32));
    EXPECT_TRUE(same_bits(a.out, b.out)) << to_string(st);
    EXPECT_TRUE(same_bits(a.lse, b.lse)) << to_string(st);
  }
}

TEST(MergeSemantics, PaddingRowsAreMaskedLikeEmptyShards) {
  const RankPartials s = bf16_setup();
  for (Strategy st : all_strategies()) {
    MergeOptions o = merge_options(st, DType::kBF16, DType::kF32);
    const MergeResult full = merge(s.parts, o);
    o.valid_rows = 2;
    const MergeResult masked = merge(s.parts, o);
    const std::size_t split = 2 * 12 * 64;
    EXPECT_TRUE(std::equal(full.out.begin(), full.out.begin() + split, masked.out.begin()));
    EXPECT_TRUE(std::all_of(masked.out.begin() + split, masked.out.end(), [](double x) { return x == 0.0; }));
    EXPECT_TRUE(std::all_of(masked.lse.begin() + 24, masked.lse.end(), [](double x) { return x == -kInf; }));
    EXPECT_NE(full.out[split + 5], 0.0);
  }
}

TEST(MergeSemantics, SingleRankIsTheLocalResult) {
  const Problem p = generate_problem(4, 1, 32, 32, {0, 9}, GenerateOptions{});
  AttentionOptions o;
  o.out_dtype = DType::kBF16;
  o.lse_dtype = DType::kF32;
  const std::vector<Partial> one = rank_partials(p, 1, 1, o);
  for (Strategy st : all_strategies()) {
    const MergeResult m = merge(one, merge_options(st, DType::kBF16, DType::kF32));
    ASSERT_EQ(m.ranks.size(), 1u);
    EXPECT_EQ(m.ranks[0].head_end, 4);
    for (int h = 0; h < 4; ++h) {
      EXPECT_EQ(m.lse[h], -kInf);
      EXPECT_EQ(m.lse[4 + h], one[0].l(1, h));
      for (int d = 0; d < 32; ++d) {
        EXPECT_EQ(m.out[h * 32 + d], 0.0);  // the NaN of the empty row is replaced
        EXPECT_EQ(m.out[(4 + h) * 32 + d], one[0].o(1, h, d));
      }
    }
  }
}

TEST(MergeSemantics, OutputPlacementPerStrategy) {
  const RankPartials s = bf16_setup();
  for (Strategy st : all_strategies()) {
    const MergeResult m = merge(s.parts, merge_options(st, DType::kBF16, DType::kF32));
    ASSERT_EQ(m.ranks.size(), 6u);
    for (int r = 0; r < 6; ++r) {
      const RankOutput& ro = m.ranks[r];
      EXPECT_EQ(ro.rank, r);
      // Blocks of H/N heads, all heads (AG+AR), or heads r, r + N (flashinfer-a2a).
      std::vector<int> heads;
      if (!scatters_heads(st))
        for (int h = 0; h < 12; ++h) heads.push_back(h);
      else if (interleaves_heads(st))
        heads = {r, r + 6};
      else
        heads = {2 * r, 2 * r + 1};
      const int kept = static_cast<int>(heads.size());
      ASSERT_EQ(ro.kept(), kept);
      for (int k = 0; k < kept; ++k) ASSERT_EQ(ro.head(k), heads[k]);
      ASSERT_EQ(ro.out.size(), static_cast<std::size_t>(4 * kept * 64));
      for (int b = 0; b < 4; ++b) {
        for (int k = 0; k < kept; ++k) {
          const int h = heads[k];
          EXPECT_TRUE(same_bits({ro.lse[b * kept + k]}, {m.lse[b * 12 + h]}));
          for (int d = 0; d < 64; ++d)
            ASSERT_EQ(ro.out[(b * kept + k) * 64 + d], m.out[(b * 12 + h) * 64 + d]);
        }
      }
    }
    MergeOptions no_lse = merge_options(st, DType::kBF16, DType::kF32);
    no_lse.return_lse = false;
    EXPECT_TRUE(merge(s.parts, no_lse).ranks[3].lse.empty());
  }
}

// Recomputes elements the way each strategy rounds: AG rounds every scaled partial, the others only once.
TEST(MergeSemantics, EachStrategyRoundsWhereItsKernelsDo) {
  const RankPartials s = bf16_setup();
  const MergeResult rs = merge(s.parts, merge_options(Strategy::kAgRs, DType::kBF16, DType::kF32));
  const MergeResult ar = merge(s.parts, merge_options(Strategy::kAgAr, DType::kBF16, DType::kF32));
  const MergeResult a2a = merge(s.parts, merge_options(Strategy::kA2a, DType::kBF16, DType::kF32));
  const MergeResult direct = merge(s.parts, merge_options(Strategy::kDirect, DType::kBF16, DType::kF32));
  const MergeResult two = merge(s.parts, merge_options(Strategy::kA2aTwoCall, DType::kBF16, DType::kF32));
  EXPECT_TRUE(same_bits(rs.out, ar.out));
  EXPECT_TRUE(same_bits(a2a.out, direct.out));  // packing bf16 values and fp32 LSEs is lossless
  EXPECT_TRUE(same_bits(two.out, a2a.out));     // so is sending them in two calls
  EXPECT_TRUE(same_bits(two.lse, a2a.lse));
  for (int r = 0; r < 4; ++r) EXPECT_EQ(two.ranks[r].head_begin, a2a.ranks[r].head_begin);
  int differing = 0;
  for (int b : {2, 3}) {
    for (int h = 0; h < 12; ++h) {
      std::vector<double> lses;
      for (const Partial& p : s.parts) lses.push_back(p.l(b, h));
      const LseMerge w = merge_lse(lses, LseBase::kE, DType::kF32);
      for (int d = 0; d < 64; ++d) {
        float ag = 0, once = 0;
        for (std::size_t r = 0; r < s.parts.size(); ++r) {
          if (w.weights[r] == 0) continue;
          const float term = static_cast<float>(w.weights[r]) * static_cast<float>(s.parts[r].o(b, h, d));
          ag += static_cast<float>(round_to(DType::kBF16, term));
          once += term;
        }
        const std::size_t i = (static_cast<std::size_t>(b) * 12 + h) * 64 + d;
        ASSERT_EQ(rs.out[i], round_to(DType::kBF16, ag));
        ASSERT_EQ(direct.out[i], round_to(DType::kBF16, once));
        differing += rs.out[i] != direct.out[i];
      }
    }
  }
  EXPECT_GT(differing, 0);  // the two rounding orders are distinguishable on real data
}

std::string merge_error(std::vector<Partial> parts, const MergeOptions& o) {
  try {
    merge(parts, o);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(MergeSemantics, ImpossibleRequestsNameTheValue) {
  const RankPartials s = bf16_setup();
  std::vector<Partial> five(s.parts.begin(), s.parts.begin() + 5);  // 12 heads, 5 ranks
  for (Strategy st : {Strategy::kAgRs, Strategy::kA2a, Strategy::kDirect, Strategy::kRowStream}) {
    EXPECT_THAT(merge_error(five, merge_options(st, DType::kBF16, DType::kF32)),
                HasSubstr("heads = 12 is not divisible by the 5 ranks"));
  }
  EXPECT_EQ(merge_error(five, merge_options(Strategy::kAgAr, DType::kBF16, DType::kF32)), "no error");
  EXPECT_THAT(merge_error({}, MergeOptions{}), HasSubstr("got none"));
  std::vector<Partial> mismatched = s.parts;
  mismatched[4] =
      full_attention(generate_problem(12, 3, 64, 32, {2, 0, 5, 4}, GenerateOptions{}), AttentionOptions{});
  EXPECT_THAT(merge_error(mismatched, MergeOptions{}), HasSubstr("rank 4 partial is [4][12][32]"));
  EXPECT_THAT(merge_error(s.parts, merge_options(Strategy::kAgRs, DType::kBF16, DType::kF16)),
              HasSubstr("accumulate type fp16"));
  MergeOptions rows = MergeOptions{};
  rows.valid_rows = 9;
  EXPECT_THAT(merge_error(s.parts, rows), HasSubstr("valid_rows = 9"));
  std::vector<Partial> bad_stride = s.parts;
  bad_stride[1].out_layout.row_stride = 100;
  EXPECT_THAT(merge_error(bad_stride, MergeOptions{}), HasSubstr("row stride 100"));
  bad_stride = s.parts;
  bad_stride[1].lse_layout.head_stride = 2;
  EXPECT_THAT(merge_error(bad_stride, MergeOptions{}), HasSubstr("LSE layout: strides (row 12, head 2)"));
  std::vector<Partial> short_buffer = s.parts;
  short_buffer[0].out.pop_back();
  EXPECT_THAT(merge_error(short_buffer, MergeOptions{}), HasSubstr("output buffer holds"));
}

}  // namespace
}  // namespace dcpsim::models
