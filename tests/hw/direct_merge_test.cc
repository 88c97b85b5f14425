// The one-kernel direct merge against the fp64-checked reference (models::merge): emulated (every rank on one
// GPU, one launch) at awkward shapes — N = 3, 5, 6, B = 17, H = 96, empty shards, NaN / +inf / −inf LSEs with
// NaN garbage behind them, padding rows, strided O, transposed LSE, both LSE bases, bf16 / fp16 / fp32 — the
// timeout naming the rank that never wrote, and the same kernel over NCCL symmetric windows (a one-rank
// communicator on one GPU; every visible GPU when there are several). FlashInfer's fused merge runs over the
// same windows.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "dcpsim/hw/kernels.h"
#include "dcpsim/models/attention.h"
#include "dcpsim/models/merge.h"
#include "gpu_test_util.h"

namespace dcpsim::hw {
namespace {

using models::DType;

struct DirectCase {
  int dcp = 2, heads = 8, dim = 128;
  std::vector<std::int64_t> contexts;
  models::LseBase base = models::LseBase::kE;
  DType out = DType::kBF16;
  bool transposed = false;
  std::int64_t pad = 0;
  int valid_rows = -1;
};

// B = contexts.size() rows; short contexts leave some ranks' shards empty (LSE −inf, O NaN).
std::vector<std::int64_t> rows_17() {
  std::vector<std::int64_t> c;
  for (int b = 0; b < 17; ++b) c.push_back(std::vector<std::int64_t>{0, 1, 2, 3, 5, 9, 40, 77}[b % 8]);
  return c;
}

// Every rank's partial from the reference, relaid out, with sentinels planted on row 1 (when there is one):
// NaN, +inf and −inf LSEs over NaN outputs on the last rank (none of them may be read).
std::vector<models::Partial> partials(const DirectCase& c, std::uint64_t seed) {
  models::GenerateOptions g;
  g.seed = seed;
  const models::Problem p = models::generate_problem(c.heads, 1, c.dim, c.dim, c.contexts, g);
  models::AttentionOptions o;
  o.base = c.base;
  o.compute = DType::kF32;
  o.out_dtype = c.out;
  o.lse_dtype = DType::kF32;
  std::vector<models::Partial> parts = models::rank_partials(p, c.dcp, 1, o);
  for (auto& part : parts) {
    const auto ol = models::OutLayout::padded(p.rows, c.heads, c.dim, c.pad);
    const auto ll = c.transposed ? models::LseLayout::transposed(p.rows, c.heads)
                                 : models::LseLayout::dense(p.rows, c.heads);
    part = models::relayout(part, ol, ll, std::nan(""));
  }
  auto& victim = parts.back();
  for (int h = 0; h < c.heads && p.rows > 1; ++h) {
    const double sentinel = std::vector<double>{NAN, INFINITY, -INFINITY}[h % 3];
    victim.lse[victim.lse_layout.index(1, h)] = sentinel;
    for (int d = 0; d < c.dim; ++d) victim.out[victim.out_layout.index(1, h, d)] = NAN;
  }
  return parts;
}

models::MergeResult direct_reference(const std::vector<models::Partial>& parts, const DirectCase& c,
                                     models::Strategy s) {
  models::MergeOptions mo;
  mo.strategy = s;
  mo.base = c.base;
  mo.out_dtype = c.out;
  mo.valid_rows = c.valid_rows;
  return models::merge(parts, mo);
}

// One rounding of an fp32 sum: within 4 units of the output type of the reference, and never NaN.
void expect_block(const GpuMergedBlock& g, const models::RankOutput& ref, DType out,
                  const std::string& what) {
  const double u = models::unit_roundoff(out);
  ASSERT_EQ(g.out.size(), ref.out.size()) << what;
  for (std::size_t i = 0; i < g.out.size(); ++i) {
    ASSERT_FALSE(std::isnan(g.out[i])) << what << " at " << i;
    ASSERT_LE(std::fabs(g.out[i] - ref.out[i]), 4 * u * std::fabs(ref.out[i]) + 1e-6) << what << " at " << i;
  }
  for (std::size_t i = 0; i < g.lse.size(); ++i) {
    if (std::isinf(ref.lse[i]))
      ASSERT_EQ(g.lse[i], ref.lse[i]) << what << " lse at " << i;
    else
      ASSERT_NEAR(g.lse[i], ref.lse[i], 1e-5 * std::max(1.0, std::fabs(ref.lse[i])))
          << what << " lse at " << i;
  }
}

// Every kernel of the protocol: per-chunk flags (the default; device-scope flags in emulation), per-source
// flags ("grid"), per-chunk flags at system scope ("chunk-sys", as across GPUs), and the chunk kernel with
// its sends and combines in rounds ("chunk-staged").
class DirectKernels : public ::testing::TestWithParam<std::string> {};
INSTANTIATE_TEST_SUITE_P(DirectMerge, DirectKernels,
                         ::testing::Values("chunk", "grid", "chunk-sys", "chunk-staged"),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           std::string name = p.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

TEST_P(DirectKernels, EmulatedMatchesTheReferenceAtOddShapes) {
  DCPSIM_REQUIRE_GPU(gpu_direct_merge({}, {}));
  std::vector<DirectCase> cases;
  cases.push_back({3, 96, 512, rows_17(), models::LseBase::kE, DType::kBF16});
  cases.push_back({5, 100, 128, rows_17(), models::LseBase::k2, DType::kBF16, true});  // 5 ∤ 96
  cases.push_back({6, 96, 512, rows_17(), models::LseBase::k2, DType::kF16, false, 0, 15});
  cases.push_back({6, 96, 128, rows_17(), models::LseBase::kE, DType::kF32, true, 8});
  cases.push_back({6, 96, 100, rows_17(), models::LseBase::kE, DType::kBF16, false, 3});  // element-wise
  cases.push_back({3, 96, 512, std::vector<std::int64_t>(17, 0), models::LseBase::kE, DType::kBF16});
  cases.push_back({8, 128, 512, {4000}, models::LseBase::kE, DType::kBF16});  // B = 1: two chunks per owner
  cases.push_back({7, 7, 128, rows_17(), models::LseBase::kE, DType::kBF16, false, 0, 16});  // one head each
  cases.push_back({1, 16, 512, rows_17(), models::LseBase::kE, DType::kBF16});
  // Padding rows only: nothing is sent (the chunk kernels take the per-source flags then).
  cases.push_back({3, 96, 512, rows_17(), models::LseBase::kE, DType::kBF16, false, 0, 0});
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const DirectCase& c = cases[i];
    SCOPED_TRACE("case " + std::to_string(i) + ": N=" + std::to_string(c.dcp) +
                 " H=" + std::to_string(c.heads) + " D=" + std::to_string(c.dim));
    const auto parts = partials(c, 700 + i);
    GpuDirectOptions o;
    o.base = c.base;
    o.out_dtype = c.out;
    o.valid_rows = c.valid_rows;
    o.steps = 3;
    o.kernel = GetParam();
    const auto got = gpu_direct_merge(parts, o);
    const auto ref = direct_reference(parts, c, models::Strategy::kDirect);
    ASSERT_EQ(got.size(), std::size_t(c.dcp));
    for (int r = 0; r < c.dcp; ++r) expect_block(got[r], ref.ranks[r], c.out, "owner " + std::to_string(r));
  }
}

// Two blocks per rank: each loops over many chunks (sends all of its chunks, then waits for and combines
// each in turn), at both LSE bases and with padding rows.
TEST_P(DirectKernels, FewBlocksLoopOverTheirChunks) {
  DCPSIM_REQUIRE_GPU(gpu_direct_merge({}, {}));
  for (const DirectCase& c :
       {DirectCase{6, 96, 512, rows_17(), models::LseBase::kE, DType::kBF16, false, 0, 13},
        DirectCase{4, 64, 128, rows_17(), models::LseBase::k2, DType::kF16}}) {
    const auto parts = partials(c, 91);
    GpuDirectOptions o;
    o.base = c.base;
    o.out_dtype = c.out;
    o.valid_rows = c.valid_rows;
    o.kernel = GetParam();
    o.blocks_per_rank = 2;
    const auto got = gpu_direct_merge(parts, o);
    const auto ref = direct_reference(parts, c, models::Strategy::kDirect);
    for (int r = 0; r < c.dcp; ++r) expect_block(got[r], ref.ranks[r], c.out, "owner " + std::to_string(r));
  }
}

TEST_P(DirectKernels, TimeoutErrorNamesTheMissingRank) {
  DCPSIM_REQUIRE_GPU(gpu_direct_merge({}, {}));
  DirectCase c{5, 10, 128, {7, 30}};
  const auto parts = partials(c, 3);
  GpuDirectOptions o;
  o.kernel = GetParam();
  o.skip_writer = 3;
  o.timeout_ns = 20'000'000;
  o.steps = 2;
  try {
    gpu_direct_merge(parts, o);
    FAIL() << "no error";
  } catch (const RuntimeError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("flag of rank 3"), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}

TEST(DirectMerge, RejectsHeadsNotDivisibleByN) {
  DCPSIM_REQUIRE_GPU(gpu_direct_merge({}, {}));
  DirectCase c{3, 4, 128, {10}};
  auto parts = partials(c, 1);
  EXPECT_THROW(gpu_direct_merge(parts, {}), InputError);
}

// The runner's thread and MPI modes: the same kernel over NCCL symmetric windows, pointers from the LSA team.
// One GPU makes a one-rank communicator (the whole window path, the merge of one partial); with several
// GPUs every visible one is a rank.
TEST(DirectMerge, OverNcclWindows) {
  DCPSIM_REQUIRE_GPU(gpu_direct_merge({}, {}));
  const int gpus = std::min(device_count(), 8);
  for (int n : {1, gpus}) {
    if (n == 1 && gpus > 1) continue;
    DirectCase c{n, 12 * n, 512, rows_17(), models::LseBase::k2, DType::kBF16, true, 0, 16};
    SCOPED_TRACE("ranks " + std::to_string(n));
    const auto parts = partials(c, 40 + n);
    GpuDirectOptions o;
    o.base = c.base;
    o.valid_rows = c.valid_rows;
    for (int d = 0; d < n; ++d) o.devices.push_back(d);
    std::vector<GpuMergedBlock> got;
    try {
      got = gpu_direct_merge(parts, o);
    } catch (const RuntimeError& e) {
      // NCCL before 2.28.9 gives a communicator of one rank no symmetric window; with several GPUs a missing
      // window is a failure.
      if (n == 1 && std::string(e.what()).find("without a symmetric window") != std::string::npos)
        GTEST_SKIP() << e.what();
      throw;
    }
    const auto ref = direct_reference(parts, c, models::Strategy::kDirect);
    for (int r = 0; r < n; ++r) expect_block(got[r], ref.ranks[r], c.out, "owner " + std::to_string(r));
  }
}

// FlashInfer's fused merge over dcpsim's NCCL windows. It multiplies every partial by its weight, NaN × 0
// included, so empty partials must hold finite O — as dcpsim's attention writes them (0) — and the planted
// NaN outputs are cleared here.
TEST(FlashInferMerge, OverNcclWindowsMatchesTheReference) {
  DCPSIM_REQUIRE_GPU(gpu_flashinfer_dcp_merge({}, {}));
  const int gpus = std::min(device_count(), 8);
  for (models::LseBase base : {models::LseBase::kE, models::LseBase::k2}) {
    DirectCase c{gpus, 16 * gpus, 512, rows_17(), base, DType::kBF16};
    SCOPED_TRACE("ranks " + std::to_string(gpus) + (base == models::LseBase::k2 ? " base 2" : " base e"));
    auto parts = partials(c, 90 + gpus);
    for (auto& p : parts)
      for (double& v : p.out)
        if (std::isnan(v)) v = 0.0;
    GpuFlashInferMergeOptions o;
    o.base = base;
    o.devices.clear();
    for (int d = 0; d < gpus; ++d) o.devices.push_back(d);
    std::vector<GpuMergedBlock> got;
    try {
      got = gpu_flashinfer_dcp_merge(parts, o);
    } catch (const InputError& e) {
      GTEST_SKIP() << e.what();  // built without FlashInfer's headers
    } catch (const RuntimeError& e) {
      if (gpus == 1 && std::string(e.what()).find("without a symmetric window") != std::string::npos)
        GTEST_SKIP() << e.what();
      throw;
    }
    const auto ref = direct_reference(parts, c, models::Strategy::kFlashInferA2a);
    for (int r = 0; r < gpus; ++r) {
      ASSERT_EQ(ref.ranks[r].head_stride, gpus);
      models::RankOutput out_only = ref.ranks[r];
      out_only.lse.clear();
      expect_block(got[r], out_only, c.out, "owner " + std::to_string(r));
    }
  }
}

}  // namespace
}  // namespace dcpsim::hw
