// The merge kernels against the models/ reference: the AG strategies' LSE correction (in place and into the
// reduce-scatter layout), the packed all-to-all (pack bit-exact, unpack-combine), the direct merge with
// its flags and the row-streaming merge with its per-row flags — random N (not only powers of two), empty
// shards, sentinel LSEs with NaN garbage, strided O, transposed LSE, padding rows, both bases.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "dcpsim/hw/kernels.h"
#include "dcpsim/models/a2a_pack.h"
#include "dcpsim/models/attention.h"
#include "dcpsim/models/merge.h"
#include "dcpsim/models/tensor.h"
#include "gpu_test_util.h"
#include "merge_test_util.h"

namespace dcpsim::hw {
namespace {

using models::DType;
using testing::MergeSetup;
using testing::partials_for;

double lse_of(const models::Partial& p, int b, int h) {
  return p.l(b, h);
}

TEST(Correct, MatchesTheReferenceScaling) {
  DCPSIM_REQUIRE_GPU(gpu_lse_correct({}, 0, {}));
  std::mt19937 rng(3);
  for (int i = 0; i < 10; ++i) {
    MergeSetup s{1 + int(rng() % 7), 0, std::vector<int>{128, 512, 100, 7}[i % 4], {}};
    s.heads = s.dcp * (1 + int(rng() % 4));
    for (int b = 0; b < 3; ++b) s.contexts.push_back(std::vector<int>{0, 1, 2, 5, 90}[rng() % 5]);
    s.base = i % 2 ? models::LseBase::k2 : models::LseBase::kE;
    s.out = std::vector<DType>{DType::kBF16, DType::kF16, DType::kF32}[i % 3];
    s.transposed = i % 3 == 1;
    s.pad = i % 4 == 3 ? 24 : 0;
    const auto parts = partials_for(s, 50 + i, true);
    const double u = models::unit_roundoff(s.out);
    for (int r = 0; r < s.dcp; ++r)
      for (bool blocks : {false, true}) {
        SCOPED_TRACE("case " + std::to_string(i) + " rank " + std::to_string(r) +
                     (blocks ? " blocks" : " in place"));
        GpuCorrectOptions o{s.base, s.out, -1, blocks};
        const GpuCorrectResult g = gpu_lse_correct(parts, r, o);
        const int B = int(s.contexts.size()), H = s.heads, J = H / s.dcp;
        for (int b = 0; b < B; ++b)
          for (int h = 0; h < H; ++h) {
            std::vector<double> l;
            for (const auto& part : parts) l.push_back(lse_of(part, b, h));
            const models::LseMerge m = models::merge_lse(l, s.base, DType::kF64);
            const double gl = g.lse[std::size_t(b) * H + h];
            if (std::isinf(m.lse))
              ASSERT_EQ(gl, m.lse);
            else
              ASSERT_NEAR(gl, m.lse, 1e-5 * std::max(1.0, std::fabs(m.lse)));
            for (int d = 0; d < s.dim; ++d) {
              const double w = m.weights[r];
              const double want = w == 0 ? 0.0 : models::round_to(s.out, w * parts[r].o(b, h, d));
              const std::size_t at = blocks ? ((std::size_t(h / J) * B + b) * J + h % J) * s.dim + d
                                            : std::size_t(parts[r].out_layout.index(b, h, d));
              const double got = g.out[at];
              ASSERT_FALSE(std::isnan(got)) << "row " << b << " head " << h;
              // The weight is an fp32 exp2: a few ulp of fp32 on top of the output rounding.
              ASSERT_LE(std::fabs(got - want), (4 * u + 16 * std::ldexp(1.0, -24)) * std::fabs(want) + 1e-30)
                  << "row " << b << " head " << h;
            }
          }
      }
  }
}

TEST(Correct, PaddingRowsComeOutEmpty) {
  DCPSIM_REQUIRE_GPU(gpu_lse_correct({}, 0, {}));
  MergeSetup s{3, 6, 128, {40, 40, 40}};
  const auto parts = partials_for(s, 9, false);
  const GpuCorrectResult g = gpu_lse_correct(parts, 1, GpuCorrectOptions{s.base, s.out, 2, false});
  for (int h = 0; h < 6; ++h) {
    EXPECT_EQ(g.lse[2 * 6 + h], -INFINITY);
    for (int d = 0; d < 128; ++d) EXPECT_EQ(g.out[parts[1].out_layout.index(2, h, d)], 0.0);
  }
}

void expect_block_matches(const GpuMergedBlock& g, const models::RankOutput& ref, DType out,
                          const std::string& what) {
  const double u = models::unit_roundoff(out);
  ASSERT_EQ(g.out.size(), ref.out.size()) << what;
  for (std::size_t i = 0; i < g.out.size(); ++i)
    ASSERT_LE(std::fabs(g.out[i] - ref.out[i]), 4 * u * std::fabs(ref.out[i]) + 1e-6) << what << " at " << i;
  for (std::size_t i = 0; i < g.lse.size(); ++i) {
    if (std::isinf(ref.lse[i]))
      ASSERT_EQ(g.lse[i], ref.lse[i]) << what;
    else
      ASSERT_NEAR(g.lse[i], ref.lse[i], 1e-5 * std::max(1.0, std::fabs(ref.lse[i]))) << what;
  }
}

TEST(A2a, PackIsBitExactAndCombineMatchesTheReference) {
  DCPSIM_REQUIRE_GPU(gpu_a2a_pack(models::Partial{}, 1, DType::kBF16));
  std::mt19937 rng(5);
  for (int i = 0; i < 8; ++i) {
    // D = 100: no 16-byte pieces, the general pack kernel; fp32: the same; the rest the short path.
    MergeSetup s{
        std::vector<int>{2, 3, 5, 7, 8, 1, 4, 6}[i], 0, std::vector<int>{128, 512, 64, 100}[i % 4], {}};
    s.heads = s.dcp * (1 + int(rng() % 3));
    for (int b = 0; b < 2 + i % 2; ++b) s.contexts.push_back(std::vector<int>{0, 1, 3, 60}[rng() % 4]);
    s.base = i % 2 ? models::LseBase::k2 : models::LseBase::kE;
    s.out = i % 4 == 2 ? DType::kF32 : i % 4 == 1 ? DType::kF16 : DType::kBF16;
    s.transposed = i % 2 == 0;
    s.pad = i % 3 == 0 ? 8 : 0;
    SCOPED_TRACE("case " + std::to_string(i));
    const auto parts = partials_for(s, 70 + i, true);
    std::vector<models::A2aBuffer> sent;
    for (int r = 0; r < s.dcp; ++r) {
      const models::A2aBuffer gb = gpu_a2a_pack(parts[r], s.dcp, s.out);
      const models::A2aBuffer rb = models::pack_a2a(parts[r], s.dcp, s.out);
      ASSERT_EQ(gb.bytes.size(), rb.bytes.size());
      for (int n = 0; n < s.dcp; ++n)
        for (int b = 0; b < gb.rows; ++b)
          for (int j = 0; j < gb.heads_per_block; ++j) {
            const double rl = models::a2a_lse(rb, n, b, j), gl = models::a2a_lse(gb, n, b, j);
            ASSERT_TRUE(std::memcmp(&rl, &gl, sizeof rl) == 0 || (std::isnan(rl) && std::isnan(gl)))
                << "LSE bits differ at block " << n << " row " << b << " head " << j;
            if (!std::isfinite(rl)) continue;
            for (int d = 0; d < gb.dim; ++d)
              ASSERT_EQ(models::a2a_value(gb, n, b, j, d), models::a2a_value(rb, n, b, j, d));
          }
      sent.push_back(gb);
    }
    const std::vector<models::A2aBuffer> received = models::all_to_all(sent);
    models::MergeOptions mo;
    mo.strategy = models::Strategy::kA2a;
    mo.base = s.base;
    mo.out_dtype = s.out;
    const models::MergeResult ref = models::merge(parts, mo);
    for (int r = 0; r < s.dcp; ++r)
      expect_block_matches(gpu_a2a_combine(received[r], s.base, s.out), ref.ranks[r], s.out,
                           "rank " + std::to_string(r));
  }
}

// a2a-2call's send buffers hold exactly the packed buffer's values: O rows without LSE lanes, and the LSEs
// (bit for bit) in their own fp32 buffer; both kernels (D = 100: general, D = 128/512: short path).
TEST(A2a, SplitPackHoldsThePackedValuesInTwoBuffers) {
  DCPSIM_REQUIRE_GPU(gpu_a2a_split_pack(models::Partial{}, 1, DType::kBF16));
  for (int i = 0; i < 4; ++i) {
    MergeSetup s{std::vector<int>{2, 3, 5, 4}[i], 0, std::vector<int>{128, 512, 100, 128}[i], {0, 3, 60}};
    s.heads = s.dcp * (1 + i % 2);
    s.out = i == 3 ? DType::kF32 : i == 1 ? DType::kF16 : DType::kBF16;
    s.transposed = i % 2 == 0;
    SCOPED_TRACE("case " + std::to_string(i));
    const auto parts = partials_for(s, 90 + i, true);
    const int valid = i == 2 ? 2 : -1;  // a padding row
    const GpuSplitPack g = gpu_a2a_split_pack(parts[0], s.dcp, s.out, valid);
    const models::A2aBuffer rb = models::pack_a2a(parts[0], s.dcp, s.out);
    for (int n = 0; n < s.dcp; ++n)
      for (int b = 0; b < g.rows; ++b)
        for (int j = 0; j < g.heads_per_block; ++j) {
          const std::size_t slot = (std::size_t(n) * g.rows + b) * g.heads_per_block + j;
          const double gl = g.lse[slot];
          const double rl = valid >= 0 && b >= valid ? -INFINITY : models::a2a_lse(rb, n, b, j);
          ASSERT_TRUE(std::memcmp(&rl, &gl, sizeof rl) == 0 || (std::isnan(rl) && std::isnan(gl)))
              << "LSE differs at block " << n << " row " << b << " head " << j;
          for (int d = 0; d < g.dim; ++d) {
            const double want = std::isfinite(rl) ? models::a2a_value(rb, n, b, j, d) : 0.0;
            ASSERT_EQ(g.out[slot * g.dim + d], want) << n << " " << b << " " << j << " " << d;
          }
        }
  }
}

TEST(A2a, PackMasksPaddingRows) {
  DCPSIM_REQUIRE_GPU(gpu_a2a_pack(models::Partial{}, 1, DType::kBF16));
  MergeSetup s{2, 4, 128, {30, 30}};
  const auto parts = partials_for(s, 12, false);
  const models::A2aBuffer b = gpu_a2a_pack(parts[0], 2, s.out, 1);
  for (int n = 0; n < 2; ++n)
    for (int j = 0; j < 2; ++j) {
      EXPECT_EQ(models::a2a_lse(b, n, 1, j), -INFINITY);
      for (int d = 0; d < 128; ++d) EXPECT_EQ(models::a2a_value(b, n, 1, j, d), 0.0);
    }
}

TEST(Direct, MatchesTheReferenceOverSeveralEpochs) {
  DCPSIM_REQUIRE_GPU(gpu_direct_merge({}, {}));
  for (int i = 0; i < 6; ++i) {
    MergeSetup s{std::vector<int>{2, 3, 5, 8, 1, 6}[i], 0, i % 2 ? 512 : 128, {0, 2, 7, 150}};
    s.heads = s.dcp * (1 + i % 3);
    s.base = i % 2 ? models::LseBase::k2 : models::LseBase::kE;
    s.transposed = i % 3 == 0;
    s.pad = i == 2 ? 16 : 0;
    SCOPED_TRACE("case " + std::to_string(i));
    const auto parts = partials_for(s, 90 + i, true);
    GpuDirectOptions o;
    o.base = s.base;
    o.out_dtype = s.out;
    o.steps = 3;
    const auto got = gpu_direct_merge(parts, o);
    models::MergeOptions mo;
    mo.strategy = models::Strategy::kDirect;
    mo.base = s.base;
    mo.out_dtype = s.out;
    const models::MergeResult ref = models::merge(parts, mo);
    for (int r = 0; r < s.dcp; ++r)
      expect_block_matches(got[r], ref.ranks[r], s.out, "owner " + std::to_string(r));
  }
}

TEST(Direct, AMissingFlagEndsInAClearError) {
  DCPSIM_REQUIRE_GPU(gpu_direct_merge({}, {}));
  MergeSetup s{3, 6, 128, {10, 20}};
  const auto parts = partials_for(s, 5, false);
  GpuDirectOptions o;
  o.skip_writer = 1;
  o.timeout_ns = 20'000'000;
  o.steps = 1;
  try {
    gpu_direct_merge(parts, o);
    FAIL() << "no error";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("flag of rank 1"), std::string::npos) << e.what();
  }
}

TEST(Direct, RejectsHeadsNotDivisibleByN) {
  DCPSIM_REQUIRE_GPU(gpu_direct_merge({}, {}));
  MergeSetup s{3, 4, 128, {10}};
  s.dcp = 2;
  s.heads = 4;
  auto parts = partials_for(s, 1, false);
  parts.push_back(parts[0]);
  EXPECT_THROW(gpu_direct_merge(parts, {}), InputError);
}

// Row-stream: the post-kernel push and the owners' combine over several steps (both window parities, the
// counters' epoch targets): N = 1, 3, 4, 6, 8, 12, B = 17, H = 64 to 128, D = 128, 192, 256 and 512, empty
// shards, NaN and +inf LSEs over NaN O, head-padded O, transposed LSE, both bases, bf16, fp16 and fp32.
// `combine_first`: the owners' combines are launched first and spin until the pushes land. `staged`: the
// combine through its shared-memory stages also where an item fits the registers (D = 512 and N ≤ 8 here).
void check_row_stream_cases(bool combine_first, bool staged = false,
                            GpuRowStreamOptions::Early early = GpuRowStreamOptions::Early::kNone) {
  struct Case {
    int dcp, heads, dim;
    models::LseBase base;
    DType out;
    bool transposed;
    std::int64_t pad;
  };
  const std::vector<Case> cases = {
      {3, 96, 512, models::LseBase::kE, DType::kBF16, false, 0},
      {6, 96, 128, models::LseBase::k2, DType::kBF16, true, 16},
      {6, 96, 512, models::LseBase::kE, DType::kF16, false, 8},
      {3, 96, 128, models::LseBase::k2, DType::kF32, true, 4},
      {8, 128, 512, models::LseBase::k2, DType::kBF16, false, 0},
      {1, 8, 128, models::LseBase::kE, DType::kBF16, false, 0},
      // Twelve owners, and heads of 24 16-byte pieces (D = 192).
      {12, 96, 128, models::LseBase::kE, DType::kBF16, false, 0},
      {4, 64, 192, models::LseBase::k2, DType::kF16, true, 8},
      // D = 256: four heads an item (the register combine's other form).
      {4, 64, 256, models::LseBase::kE, DType::kBF16, false, 0},
  };
  const std::vector<std::int64_t> contexts = {0, 1, 2, 3, 5, 7, 11, 40, 100, 0, 2, 150, 1, 9, 17, 64, 33};
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    MergeSetup s{c.dcp, c.heads, c.dim, contexts};
    s.base = c.base;
    s.out = c.out;
    s.transposed = c.transposed;
    s.pad = c.pad;
    SCOPED_TRACE("case " + std::to_string(i));
    const auto parts = partials_for(s, 300 + i, true);
    GpuRowStreamOptions o;
    o.base = s.base;
    o.out_dtype = s.out;
    o.steps = 3;
    o.combine_first = combine_first;
    o.staged = staged;
    o.early = early;
    const auto got = gpu_row_stream_merge(parts, o);
    models::MergeOptions mo;
    mo.strategy = models::Strategy::kRowStream;
    mo.base = s.base;
    mo.out_dtype = s.out;
    const models::MergeResult ref = models::merge(parts, mo);
    for (int r = 0; r < s.dcp; ++r)
      expect_block_matches(got[r], ref.ranks[r], s.out, "owner " + std::to_string(r));
  }
}

TEST(RowStream, MatchesTheReferenceOverSeveralSteps) {
  DCPSIM_REQUIRE_GPU(gpu_row_stream_merge({}, {}));
  check_row_stream_cases(false);
}

TEST(RowStream, StagedCombineMatchesTheReference) {
  DCPSIM_REQUIRE_GPU(gpu_row_stream_merge({}, {}));
  check_row_stream_cases(false, true);
}

// Needs the device to run kernels concurrently (compute-sanitizer may serialise them: not run there).
TEST(RowStream, CombinesLaunchedFirstWaitForThePushes) {
  DCPSIM_REQUIRE_GPU(gpu_row_stream_merge({}, {}));
  check_row_stream_cases(true);
}

// The early tail behind the pushes, its gate open (its blocks take items once every push block has begun) or
// closed (every block exits and the tail takes everything); both combines.
TEST(RowStream, EarlyTailMatchesTheReference) {
  DCPSIM_REQUIRE_GPU(gpu_row_stream_merge({}, {}));
  for (const auto early : {GpuRowStreamOptions::Early::kOpen, GpuRowStreamOptions::Early::kClosed})
    for (const bool staged : {false, true}) {
      SCOPED_TRACE(std::string(early == GpuRowStreamOptions::Early::kOpen ? "open" : "closed") +
                   (staged ? ", staged" : ", registers"));
      check_row_stream_cases(false, staged, early);
    }
}

// The early tail beside the streaming grids launched before the pushes (their warps claim rows before their
// sources land and load each source as it does). Needs the device to run kernels concurrently.
TEST(RowStream, EarlyTailBesideTheStreamingGrids) {
  DCPSIM_REQUIRE_GPU(gpu_row_stream_merge({}, {}));
  for (const bool staged : {false, true}) {
    SCOPED_TRACE(staged ? "staged" : "registers");
    check_row_stream_cases(true, staged, GpuRowStreamOptions::Early::kOpen);
  }
}

TEST(RowStream, PaddingRowsComeOutEmpty) {
  DCPSIM_REQUIRE_GPU(gpu_row_stream_merge({}, {}));
  MergeSetup s{3, 6, 128, {30, 30, 30, 30}};
  const auto parts = partials_for(s, 9, false);
  GpuRowStreamOptions o;
  o.valid_rows = 2;
  const auto got = gpu_row_stream_merge(parts, o);
  for (int r = 0; r < 3; ++r)
    for (int b = 2; b < 4; ++b)
      for (int j = 0; j < 2; ++j) {
        EXPECT_EQ(got[r].lse[b * 2 + j], -INFINITY) << "owner " << r << " row " << b;
        for (int d = 0; d < 128; ++d) ASSERT_EQ(got[r].out[(b * 2 + j) * 128 + d], 0.0);
      }
}

TEST(RowStream, AMissingRowEndsInAClearError) {
  DCPSIM_REQUIRE_GPU(gpu_row_stream_merge({}, {}));
  MergeSetup s{3, 6, 128, {10, 20}};
  const auto parts = partials_for(s, 5, false);
  for (bool combine_first : {false, true}) {
    GpuRowStreamOptions o;
    o.skip_writer = 1;
    o.timeout_ns = 20'000'000;
    o.steps = 1;
    o.combine_first = combine_first;
    try {
      gpu_row_stream_merge(parts, o);
      FAIL() << "no error";
    } catch (const RuntimeError& e) {
      const std::string what = e.what();  // the first of the owners' blocks to give up names its row
      EXPECT_NE(what.find(" of rank 1 "), std::string::npos) << what;
      EXPECT_NE(what.find("waited 20 ms for row "), std::string::npos) << what;
    }
  }
}

TEST(RowStream, RejectsWhatTheWindowsCannotHold) {
  DCPSIM_REQUIRE_GPU(gpu_row_stream_merge({}, {}));
  MergeSetup s{2, 4, 100, {10}};  // 100 bf16 lanes are not whole 16-byte pieces
  EXPECT_THROW(gpu_row_stream_merge(partials_for(s, 1, false), {}), InputError);
  MergeSetup t{2, 4, 128, {10}};
  t.dcp = 3;  // H = 4 over 3 ranks
  auto parts = partials_for(t, 1, false);
  EXPECT_THROW(gpu_row_stream_merge(parts, {}), InputError);
}

}  // namespace
}  // namespace dcpsim::hw
