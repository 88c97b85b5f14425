// The decode-attention kernel against the models/ reference: GQA and MLA geometries, every rank's shard of
// random contexts (empty shards and contexts shorter than N included), both LSE bases, 16-bit inputs, every
// output type, head-padded O, transposed LSE, padding rows, empty-row markers and forced split counts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "dcpsim/hw/kernels.h"
#include "dcpsim/models/attention.h"
#include "dcpsim/models/sharding.h"
#include "gpu_test_util.h"

namespace dcpsim::hw {
namespace {

using models::DType;

struct AttentionCase {
  int heads, kv_heads, qk_dim, dim, dcp, interleave;
  std::vector<std::int64_t> contexts;
  models::LseBase base = models::LseBase::kE;
  DType kv = DType::kBF16, out = DType::kBF16;
  bool transposed = false;
  std::int64_t pad = 0;
  int valid_rows = -1, splits = 0;
  models::EmptyRowMarker empty = models::EmptyRowMarker::kNegInfNaN;
};

// Checks every rank's GPU partial against fp64 attention over the same shard. Tolerance per element: P is
// rounded to the input type for the P·V product (4·u_in of Σ p|v|), O to the output type once (2·u_out), plus
// fp32 accumulation.
void check_case(const AttentionCase& c, std::uint64_t seed) {
  models::GenerateOptions g;
  g.seed = seed;
  g.input_dtype = c.kv;
  models::Problem p = models::generate_problem(c.heads, c.kv_heads, c.qk_dim, c.dim, c.contexts, g);
  const bool mla = c.qk_dim == 576;
  if (mla) testing::share_latent(p);
  models::Problem abs_p = p;
  for (auto& row : abs_p.v)
    for (auto& x : row) x = std::fabs(x);

  models::AttentionOptions ref_o;
  ref_o.base = c.base;
  ref_o.compute = DType::kF64;
  ref_o.out_dtype = DType::kF64;
  ref_o.lse_dtype = DType::kF64;
  ref_o.valid_rows = c.valid_rows;
  ref_o.empty = c.empty;
  GpuAttentionOptions o;
  o.kv_dtype = c.kv;
  o.attention = ref_o;
  o.attention.out_dtype = c.out;
  o.attention.transposed_lse = c.transposed;
  o.attention.out_row_pad = c.pad;
  o.splits = c.splits;
  const double coeff =
      4 * models::unit_roundoff(c.kv) + 2 * models::unit_roundoff(c.out) + 64 * std::ldexp(1.0, -24);

  for (int r = 0; r < c.dcp; ++r) {
    const models::KvShard shard = models::shard_kv(p, r, c.dcp, c.interleave);
    const models::Partial ref = models::local_attention(p, shard, ref_o);
    const models::Partial scale =
        models::local_attention(abs_p, models::shard_kv(abs_p, r, c.dcp, c.interleave), ref_o);
    const models::Partial gpu = gpu_local_attention(p, shard, o);
    ASSERT_EQ(gpu.out_layout.row_stride, std::int64_t(c.heads) * c.dim + c.pad);
    for (int b = 0; b < p.rows; ++b)
      for (int h = 0; h < c.heads; ++h) {
        const double rl = ref.l(b, h), gl = gpu.l(b, h);
        if (std::isinf(rl)) {
          ASSERT_EQ(gl, rl) << "rank " << r << " row " << b << " head " << h;
          for (int d = 0; d < c.dim; ++d) {
            const double want = c.empty == models::EmptyRowMarker::kNegInfNaN ? NAN : 0.0;
            ASSERT_TRUE(std::isnan(want) ? std::isnan(gpu.o(b, h, d)) : gpu.o(b, h, d) == 0.0);
          }
          continue;
        }
        ASSERT_NEAR(gl, rl, 1e-4 * std::max(1.0, std::fabs(rl)))
            << "rank " << r << " row " << b << " head " << h;
        for (int d = 0; d < c.dim; ++d)
          ASSERT_LE(std::fabs(gpu.o(b, h, d) - ref.o(b, h, d)), coeff * scale.o(b, h, d) + 1e-30)
              << "rank " << r << " row " << b << " head " << h << " lane " << d << " gpu " << gpu.o(b, h, d)
              << " ref " << ref.o(b, h, d);
      }
  }
}

TEST(Attention, StubOrDevice) {
  DCPSIM_REQUIRE_GPU(attention_geometry(128, 128, 8));
}

TEST(Attention, RejectsUnsupportedGeometry) {
  DCPSIM_REQUIRE_GPU(attention_geometry(128, 128, 8));
  EXPECT_EQ(attention_geometry(128, 128, 8), AttentionGeometry::kGqa128);
  EXPECT_EQ(attention_geometry(576, 512, 1), AttentionGeometry::kMla576);
  EXPECT_THROW(attention_geometry(64, 64, 1), InputError);
  EXPECT_THROW(attention_geometry(576, 512, 2), InputError);
}

TEST(Attention, GqaRandomShapes) {
  DCPSIM_REQUIRE_GPU(attention_geometry(128, 128, 8));
  std::mt19937 rng(7);
  const std::vector<std::pair<int, int>> heads = {{8, 1}, {16, 2}, {32, 8}, {12, 4}, {64, 8}, {40, 5}};
  for (int i = 0; i < 12; ++i) {
    const auto [H, Hkv] = heads[i % heads.size()];
    AttentionCase c{H, Hkv, 128, 128, 1 + int(rng() % 5), std::vector<int>{1, 2, 16}[rng() % 3], {}};
    const int B = 1 + int(rng() % 4);
    for (int b = 0; b < B; ++b) c.contexts.push_back(std::vector<int>{0, 1, 3, 37, 300, 1500}[rng() % 6]);
    c.base = i % 2 ? models::LseBase::k2 : models::LseBase::kE;
    c.kv = i % 3 == 2 ? DType::kF16 : DType::kBF16;
    c.out = std::vector<DType>{DType::kBF16, DType::kF16, DType::kF32}[i % 3];
    SCOPED_TRACE("case " + std::to_string(i));
    check_case(c, 100 + i);
  }
}

TEST(Attention, MlaRandomShapes) {
  DCPSIM_REQUIRE_GPU(attention_geometry(576, 512, 1));
  std::mt19937 rng(11);
  for (int i = 0; i < 6; ++i) {
    const int H = std::vector<int>{16, 128, 20, 64, 8, 72}[i];
    AttentionCase c{
        H, 1, 576, 512, std::vector<int>{1, 2, 3, 5, 8, 4}[i], std::vector<int>{1, 1, 16, 2, 1, 64}[i], {}};
    const int B = 1 + int(rng() % 3);
    for (int b = 0; b < B; ++b) c.contexts.push_back(std::vector<int>{0, 2, 33, 700, 2100}[rng() % 5]);
    c.base = i % 2 ? models::LseBase::kE : models::LseBase::k2;
    c.out = i == 3 ? DType::kF32 : DType::kBF16;
    SCOPED_TRACE("case " + std::to_string(i));
    check_case(c, 200 + i);
  }
}

TEST(Attention, StridedOutputTransposedLsePaddingAndMarkers) {
  DCPSIM_REQUIRE_GPU(attention_geometry(128, 128, 4));
  AttentionCase c{32, 4, 128, 128, 3, 2, {5, 0, 900, 64}};
  c.transposed = true;
  c.pad = 40;
  c.valid_rows = 3;  // row 3 is CUDA-graph padding: masked although it has KV
  check_case(c, 301);
  c.empty = models::EmptyRowMarker::kPosInfZero;
  check_case(c, 302);
  AttentionCase m{128, 1, 576, 512, 2, 1, {1, 0, 1200}};
  m.transposed = true;
  m.pad = 512;
  m.empty = models::EmptyRowMarker::kNegInfZero;
  check_case(m, 303);
}

TEST(Attention, SplitCountDoesNotChangeTheResult) {
  DCPSIM_REQUIRE_GPU(attention_geometry(576, 512, 1));
  for (int splits : {1, 3, 7, 64}) {
    AttentionCase c{64, 1, 576, 512, 1, 1, {2000, 31}};
    c.splits = splits;
    SCOPED_TRACE("splits " + std::to_string(splits));
    check_case(c, 400);
    AttentionCase g{16, 2, 128, 128, 1, 1, {2500}};
    g.splits = splits;
    check_case(g, 401);
  }
}

TEST(Attention, MlaNeedsTheSharedLatent) {
  DCPSIM_REQUIRE_GPU(attention_geometry(576, 512, 1));
  models::GenerateOptions g;
  models::Problem p = models::generate_problem(16, 1, 576, 512, {10}, g);  // independent V
  EXPECT_THROW(gpu_local_attention(p, models::whole_kv(p), GpuAttentionOptions{}), InputError);
}

}  // namespace
}  // namespace dcpsim::hw
