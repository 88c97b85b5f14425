// The merge kernels stay exact for LSEs of any finite magnitude (SPEC step 4: weights normalised by their
// max-shifted sum). The old weights exp2(L_i·k − L) gave 2.0 for two outputs of 1.0 with both LSEs at 1e8 (L
// rounds to the max in fp32) and NaN near FLT_MAX (L_i·log2 e overflowed). Every kernel — the AG correction,
// the packed all-to-all combine, the direct merge — is compared with the fp64 reference on partials whose
// LSEs are shifted by ±1e8 and ±3e38, in both bases. They skip without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "dcpsim/hw/kernels.h"
#include "dcpsim/models/a2a_pack.h"
#include "dcpsim/models/merge.h"
#include "dcpsim/models/tensor.h"
#include "gpu_test_util.h"

namespace dcpsim::hw {
namespace {

using models::DType;

// N ranks, 2 rows, 2N heads, D = 128, fp32 O in [-1, 1]; LSE = shift + a small per-rank offset, stored as
// fp32 (what the kernels read), so the reference sees exactly the kernels' inputs.
std::vector<models::Partial> shifted_partials(int dcp, double shift, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> value(-1.0, 1.0), offset(-3.0, 3.0);
  const int rows = 2, heads = 2 * dcp, dim = 128;
  std::vector<models::Partial> parts;
  for (int r = 0; r < dcp; ++r) {
    models::Partial p{
        models::OutLayout::dense(rows, heads, dim), {}, models::LseLayout::dense(rows, heads), {}};
    for (int i = 0; i < rows * heads * dim; ++i) p.out.push_back(static_cast<float>(value(rng)));
    for (int i = 0; i < rows * heads; ++i) p.lse.push_back(static_cast<float>(shift + offset(rng)));
    parts.push_back(std::move(p));
  }
  return parts;
}

models::MergeResult reference(const std::vector<models::Partial>& parts, models::Strategy s,
                              models::LseBase base) {
  models::MergeOptions o;
  o.strategy = s;
  o.base = base;
  o.out_dtype = DType::kF32;
  o.accumulate = DType::kF64;
  return models::merge(parts, o);
}

void expect_close(const std::vector<double>& got, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_FALSE(std::isnan(got[i])) << what << " at " << i;
    ASSERT_NEAR(got[i], want[i], 1e-5 * (1.0 + std::fabs(want[i]))) << what << " at " << i;
  }
}

struct Magnitude {
  double shift;
  models::LseBase base;
};
const Magnitude kMagnitudes[] = {{1e8, models::LseBase::kE},  {-1e8, models::LseBase::kE},
                                 {3e38, models::LseBase::kE}, {-3e38, models::LseBase::k2},
                                 {1e8, models::LseBase::k2},  {3e38, models::LseBase::k2}};

TEST(MergeMagnitude, TwoEqualLsesAt1e8AverageTheOutputs) {
  DCPSIM_REQUIRE_GPU(gpu_lse_correct({}, 0, {}));
  std::vector<models::Partial> parts;
  for (int r = 0; r < 2; ++r) {
    models::Partial p{models::OutLayout::dense(1, 2, 128),
                      std::vector<double>(256, 1.0),
                      models::LseLayout::dense(1, 2),
                      {1e8, 1e8}};
    parts.push_back(std::move(p));
  }
  const GpuCorrectResult g =
      gpu_lse_correct(parts, 0, GpuCorrectOptions{models::LseBase::kE, DType::kF32, -1, false});
  for (double o : g.out) ASSERT_NEAR(o, 0.5, 1e-6);  // each rank's share of an output of 1.0
}

TEST(MergeMagnitude, CorrectionMatchesTheReference) {
  DCPSIM_REQUIRE_GPU(gpu_lse_correct({}, 0, {}));
  for (const Magnitude& m : kMagnitudes) {
    for (int dcp : {2, 5, 12}) {  // 12 > the fast path's 8
      const auto parts = shifted_partials(dcp, m.shift, 7 + dcp);
      const models::MergeResult ref = reference(parts, models::Strategy::kAgAr, m.base);
      // The corrected partials summed over ranks are the merge.
      std::vector<double> sum(parts[0].out.size(), 0.0);
      for (int r = 0; r < dcp; ++r) {
        const GpuCorrectResult g =
            gpu_lse_correct(parts, r, GpuCorrectOptions{m.base, DType::kF32, -1, false});
        for (double l : g.lse) ASSERT_FALSE(std::isnan(l)) << "shift " << m.shift;
        for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += g.out[i];
      }
      expect_close(sum, ref.out,
                   "correction, shift " + std::to_string(m.shift) + " N=" + std::to_string(dcp));
    }
  }
}

TEST(MergeMagnitude, A2aCombineMatchesTheReference) {
  DCPSIM_REQUIRE_GPU(gpu_a2a_pack(models::Partial{}, 1, DType::kBF16));
  for (const Magnitude& m : kMagnitudes) {
    const int dcp = 4;
    const auto parts = shifted_partials(dcp, m.shift, 31);
    std::vector<models::A2aBuffer> sent;
    for (int r = 0; r < dcp; ++r) sent.push_back(gpu_a2a_pack(parts[r], dcp, DType::kF32));
    const std::vector<models::A2aBuffer> received = models::all_to_all(sent);
    const models::MergeResult ref = reference(parts, models::Strategy::kA2a, m.base);
    for (int r = 0; r < dcp; ++r) {
      const GpuMergedBlock g = gpu_a2a_combine(received[r], m.base, DType::kF32);
      expect_close(g.out, ref.ranks[r].out, "a2a, shift " + std::to_string(m.shift));
    }
  }
}

TEST(MergeMagnitude, DirectMergeMatchesTheReference) {
  DCPSIM_REQUIRE_GPU(gpu_direct_merge({}, {}));
  for (const Magnitude& m : kMagnitudes) {
    const int dcp = 3;
    const auto parts = shifted_partials(dcp, m.shift, 41);
    GpuDirectOptions o;
    o.base = m.base;
    o.out_dtype = DType::kF32;
    const auto got = gpu_direct_merge(parts, o);
    const models::MergeResult ref = reference(parts, models::Strategy::kDirect, m.base);
    for (int r = 0; r < dcp; ++r)
      expect_close(got[r].out, ref.ranks[r].out, "direct, shift " + std::to_string(m.shift));
  }
}

}  // namespace
}  // namespace dcpsim::hw
