// Every kernel variant of the correction and the combine (the lane-group kernels with 1 to 8 vectors per
// lane, streaming or not, and the short paths) against the fp64 reference at decode shapes that divide
// unevenly: B = 17, H = 96, N = 3, 6 and 12 (more sources than the combine prefetches), D = 512, 128 and 100
// (no 16-byte vectors), bf16, fp16 and fp32, empty shards, sentinel LSEs (+inf, NaN with NaN outputs),
// padding rows, both bases, dense and transposed LSE, head-padded rows. They skip without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "dcpsim/hw/bench.h"
#include "dcpsim/hw/kernels.h"
#include "dcpsim/models/a2a_pack.h"
#include "dcpsim/models/merge.h"
#include "gpu_test_util.h"
#include "merge_test_util.h"

namespace dcpsim::hw {
namespace {

using models::DType;
using testing::MergeSetup;
using testing::partials_for;

std::vector<std::int64_t> odd_contexts(int rows) {
  const std::int64_t lengths[] = {0, 1, 2, 5, 40, 7, 3};
  std::vector<std::int64_t> c;
  for (int b = 0; b < rows; ++b) c.push_back(lengths[b % 7]);
  return c;
}

// The correction of rank r against w_r·O_r rounded once (SPEC steps 1-5); rows at or past `valid` are 0 with
// LSE −inf.
void check_correction(const std::vector<models::Partial>& parts, const MergeSetup& s, int r, bool blocks,
                      int valid, const GpuCorrectResult& g) {
  const double u = models::unit_roundoff(s.out);
  const int B = int(s.contexts.size()), H = s.heads, J = H / s.dcp;
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h) {
      std::vector<double> l;
      for (const auto& part : parts) l.push_back(part.l(b, h));
      const models::LseMerge m = models::merge_lse(l, s.base, DType::kF64);
      const double want_lse = b < valid ? m.lse : -INFINITY;
      const double gl = g.lse[std::size_t(b) * H + h];
      if (std::isinf(want_lse))
        ASSERT_EQ(gl, want_lse) << "row " << b << " head " << h;
      else
        ASSERT_NEAR(gl, want_lse, 1e-5 * std::max(1.0, std::fabs(want_lse))) << "row " << b << " head " << h;
      const double w = b < valid ? m.weights[r] : 0.0;
      for (int d = 0; d < s.dim; ++d) {
        const double want = w == 0 ? 0.0 : models::round_to(s.out, w * parts[r].o(b, h, d));
        const std::size_t at = blocks ? ((std::size_t(h / J) * B + b) * J + h % J) * s.dim + d
                                      : std::size_t(parts[r].out_layout.index(b, h, d));
        const double got = g.out[at];
        ASSERT_FALSE(std::isnan(got)) << "row " << b << " head " << h << " lane " << d;
        ASSERT_LE(std::fabs(got - want), (4 * u + 16 * std::ldexp(1.0, -24)) * std::fabs(want) + 1e-30)
            << "row " << b << " head " << h << " lane " << d;
      }
    }
}

void check_block(const GpuMergedBlock& g, const models::RankOutput& ref, DType out, int valid,
                 const std::string& what) {
  const double u = models::unit_roundoff(out);
  ASSERT_EQ(g.out.size(), ref.out.size()) << what;
  const std::size_t per_row = std::size_t(g.heads) * g.dim;
  for (std::size_t i = 0; i < g.out.size(); ++i) {
    const bool pad = int(i / per_row) >= valid;
    const double want = pad ? 0.0 : ref.out[i];
    ASSERT_LE(std::fabs(g.out[i] - want), 4 * u * std::fabs(want) + 1e-6) << what << " at " << i;
  }
  for (std::size_t i = 0; i < g.lse.size(); ++i) {
    const double want = int(i / g.heads) >= valid ? -INFINITY : ref.lse[i];
    if (std::isinf(want))
      ASSERT_EQ(g.lse[i], want) << what << " LSE " << i;
    else
      ASSERT_NEAR(g.lse[i], want, 1e-5 * std::max(1.0, std::fabs(want))) << what << " LSE " << i;
  }
}

TEST(MergeVariants, EveryCorrectionVariantMatchesTheReference) {
  DCPSIM_REQUIRE_GPU(gpu_lse_correct({}, 0, {}));
  const int variants = static_cast<int>(op_variants("correct").size());
  ASSERT_GE(variants, 2);
  struct Case {
    MergeSetup s;
    int valid;
    std::vector<int> ranks;
  };
  const Case cases[] = {
      {{6, 96, 512, odd_contexts(17), models::LseBase::kE, DType::kBF16, false, 0}, 15, {0, 5}},
      {{3, 96, 128, odd_contexts(17), models::LseBase::k2, DType::kF16, true, 8}, 17, {1, 2}},
      {{3, 6, 100, odd_contexts(5), models::LseBase::kE, DType::kF32, false, 4}, 4, {2}},
      {{12, 24, 128, odd_contexts(3), models::LseBase::k2, DType::kBF16, true, 0}, 3, {0, 11}},
  };
  int i = 0;
  for (const Case& c : cases) {
    const auto parts = partials_for(c.s, 400 + i++, true);
    for (int v = -1; v < variants; ++v)
      for (int r : c.ranks)
        for (bool blocks : {false, true}) {
          SCOPED_TRACE("N=" + std::to_string(c.s.dcp) + " H=" + std::to_string(c.s.heads) +
                       " D=" + std::to_string(c.s.dim) + " variant " + std::to_string(v) + " rank " +
                       std::to_string(r) + (blocks ? " blocks" : " in place"));
          GpuCorrectOptions o{c.s.base, c.s.out, c.valid, blocks, v};
          check_correction(parts, c.s, r, blocks, c.valid, gpu_lse_correct(parts, r, o));
        }
  }
}

TEST(MergeVariants, EveryCombineVariantMatchesTheReference) {
  DCPSIM_REQUIRE_GPU(gpu_combine_slots({}, 0, {}));
  const int variants = static_cast<int>(op_variants("combine").size());
  ASSERT_GE(variants, 2);
  struct Case {
    MergeSetup s;
    int valid;
  };
  const Case cases[] = {
      {{6, 96, 512, odd_contexts(17), models::LseBase::kE, DType::kBF16, false, 0}, 15},
      {{3, 96, 128, odd_contexts(17), models::LseBase::k2, DType::kF16, true, 0}, 17},
      {{12, 24, 128, odd_contexts(4), models::LseBase::kE, DType::kBF16, false, 0}, 4},
      {{3, 6, 100, odd_contexts(5), models::LseBase::k2, DType::kF32, false, 0}, 3},
  };
  int i = 0;
  for (const Case& c : cases) {
    const auto parts = partials_for(c.s, 500 + i++, true);
    models::MergeOptions mo;
    mo.strategy = models::Strategy::kDirect;
    mo.base = c.s.base;
    mo.out_dtype = c.s.out;
    const models::MergeResult ref = models::merge(parts, mo);
    std::vector<models::A2aBuffer> sent;
    for (const auto& p : parts) sent.push_back(models::pack_a2a(p, c.s.dcp, c.s.out));
    const std::vector<models::A2aBuffer> received = models::all_to_all(sent);
    for (int v = -1; v < variants; ++v)
      for (int owner : {0, c.s.dcp - 1}) {
        const std::string what = "N=" + std::to_string(c.s.dcp) + " H=" + std::to_string(c.s.heads) +
                                 " D=" + std::to_string(c.s.dim) + " variant " + std::to_string(v) +
                                 " owner " + std::to_string(owner);
        GpuCombineOptions o{c.s.base, c.s.out, c.valid, v};
        check_block(gpu_combine_slots(parts, owner, o), ref.ranks[owner], c.s.out, c.valid, what + " slots");
        check_block(gpu_a2a_combine(received[owner], c.s.base, c.s.out, c.valid, v), ref.ranks[owner],
                    c.s.out, c.valid, what + " packed");
      }
  }
}

}  // namespace
}  // namespace dcpsim::hw
