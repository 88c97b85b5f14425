// The FlashInfer attention path. Host parts everywhere (the implementation choice, the geometry check, the
// page table over a shard); on a Hopper GPU in a FlashInfer build: FlashInfer's MLA and GQA decode against
// the fp64 reference of models/ (empty shards, padding rows, both LSE bases, transposed LSE, head-block Q),
// and `hw run
// --attention flashinfer` end to end, whose own reference check must pass.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "dcpsim/hw/attention_impl.h"
#include "dcpsim/hw/device.h"
#include "dcpsim/hw/kernels.h"
#include "dcpsim/hw/runner.h"
#include "dcpsim/models/attention.h"
#include "dcpsim/models/sharding.h"
#include "dcpsim/traces/trace_collector.h"
#include "gpu_test_util.h"

namespace dcpsim::hw {
namespace {

using models::DType;

TEST(AttentionImpl, ParsesAndNames) {
  for (auto impl : {AttentionImpl::kAuto, AttentionImpl::kFlashInfer, AttentionImpl::kDcpsim})
    EXPECT_EQ(parse_attention_impl(attention_impl_name(impl)), impl);
  EXPECT_THROW(parse_attention_impl("flash"), InputError);
}

TEST(AttentionImpl, GeometryCheckNamesWhatIsSupported) {
  const FlashInferGeometry mla{128, 1, 576, 512};
  const FlashInferGeometry gqa{64, 8, 128, 128};
  if (!built_with_flashinfer()) {
    EXPECT_NE(flashinfer_unsupported(mla).find("no FlashInfer"), std::string::npos);
    EXPECT_EQ(resolve_attention_impl(AttentionImpl::kAuto, mla), AttentionImpl::kDcpsim);
    EXPECT_THROW(resolve_attention_impl(AttentionImpl::kFlashInfer, mla), InputError);
    return;
  }
  EXPECT_EQ(flashinfer_unsupported(mla), "");
  EXPECT_EQ(flashinfer_unsupported(gqa), "");
  for (int group : {1, 2, 3, 4, 6, 8, 16}) EXPECT_EQ(flashinfer_unsupported({8 * group, 8, 128, 128}), "");
  for (const FlashInferGeometry& g :
       {FlashInferGeometry{40, 8, 128, 128}, FlashInferGeometry{64, 8, 64, 64},
        FlashInferGeometry{128, 2, 576, 512}, FlashInferGeometry{96, 3, 128, 128}}) {
    const std::string why = flashinfer_unsupported(g);
    EXPECT_NE(why.find("MLA (D_qk 576, D 512, H_kv 1"), std::string::npos) << why;
    EXPECT_EQ(why.find('\n'), std::string::npos);
    std::string notice;
    EXPECT_EQ(resolve_attention_impl(AttentionImpl::kAuto, g, &notice), AttentionImpl::kDcpsim);
    EXPECT_NE(notice.find("dcpsim's kernel"), std::string::npos);
    EXPECT_THROW(resolve_attention_impl(AttentionImpl::kFlashInfer, g), InputError);
  }
  FlashInferGeometry fp16 = mla;
  fp16.bf16 = false;
  EXPECT_NE(flashinfer_unsupported(fp16), "");
  FlashInferGeometry stamped = gqa;
  stamped.row_stamps = true;
  EXPECT_NE(flashinfer_unsupported(stamped).find("--row-stamps"), std::string::npos);
  EXPECT_EQ(resolve_attention_impl(AttentionImpl::kAuto, mla), AttentionImpl::kFlashInfer);
  EXPECT_EQ(resolve_attention_impl(AttentionImpl::kDcpsim, mla), AttentionImpl::kDcpsim);
  // GQA: dcpsim's kernel unless FlashInfer is asked for by name.
  std::string notice;
  EXPECT_EQ(resolve_attention_impl(AttentionImpl::kAuto, gqa, &notice), AttentionImpl::kDcpsim);
  EXPECT_EQ(notice, "");
  EXPECT_EQ(resolve_attention_impl(AttentionImpl::kFlashInfer, gqa), AttentionImpl::kFlashInfer);
}

TEST(PageTable, RowsStartOnPagesAndOwnTheirPages) {
  EXPECT_EQ(kv_page_tokens(true), 64);
  EXPECT_EQ(kv_page_tokens(false), 16);
  const std::vector<int> len = {100, 0, 64, 1, 0};
  const std::vector<std::int64_t> off = paged_row_offsets(len, 64);
  EXPECT_EQ(off, (std::vector<std::int64_t>{0, 128, 128, 192, 256, 256}));
  const PageTable t = build_page_table(off, len, 64);
  EXPECT_EQ(t.indptr, (std::vector<int>{0, 2, 2, 3, 4, 4}));
  EXPECT_EQ(t.indices, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(t.last_page_len, (std::vector<int>{36, 0, 64, 1, 0}));
  // Token l of row b lives at storage token indices[indptr[b] + l / P]·P + l % P = off[b] + l.
  for (std::size_t b = 0; b < len.size(); ++b)
    for (int l = 0; l < len[b]; ++l)
      EXPECT_EQ(std::int64_t(t.indices[t.indptr[b] + l / 64]) * 64 + l % 64, off[b] + l);
}

TEST(PageTable, RejectsUnalignedOrOverlappingRows) {
  const std::vector<int> len = {10, 10};
  EXPECT_THROW(build_page_table(std::vector<std::int64_t>{0, 10}, len, 16), InputError);
  EXPECT_THROW(build_page_table(std::vector<std::int64_t>{16, 0}, len, 16), InputError);
  EXPECT_THROW(paged_row_offsets(std::vector<int>{-1}, 16), InputError);
  EXPECT_NO_THROW(build_page_table(std::vector<std::int64_t>{0, 16}, len, 16));
}

// FlashInfer runs here: a FlashInfer build on a Hopper GPU (its MLA code is sm_90a).
bool flashinfer_here() {
  if (!built_with_cuda() || !built_with_flashinfer() || device_count() == 0) return false;
  const DeviceInfo d = device_info(0);
  return d.cc_major == 9 && d.cc_minor == 0;
}

#define REQUIRE_FLASHINFER()                                                             \
  do {                                                                                   \
    if (!flashinfer_here()) GTEST_SKIP() << "needs a FlashInfer build and an H100/H200"; \
  } while (0)

struct FlashInferCase {
  int heads, kv_heads, qk_dim, dim, dcp;
  std::vector<std::int64_t> contexts;
  models::LseBase base = models::LseBase::kE;
  bool transposed = false;
  int valid_rows = -1;
};

// Every rank's FlashInfer partial against fp64 attention over its shard. Bound per element: inputs, P and the
// split-KV partials are bf16 (FlashInfer keeps partial outputs in the output type), O is rounded once more.
void check_flashinfer_case(const FlashInferCase& c, std::uint64_t seed) {
  models::GenerateOptions g;
  g.seed = seed;
  g.input_dtype = DType::kBF16;
  models::Problem p = models::generate_problem(c.heads, c.kv_heads, c.qk_dim, c.dim, c.contexts, g);
  if (c.qk_dim == 576) testing::share_latent(p);
  models::Problem abs_p = p;
  for (auto& row : abs_p.v)
    for (auto& x : row) x = std::fabs(x);
  models::AttentionOptions ref_o;
  ref_o.base = c.base;
  ref_o.compute = DType::kF64;
  ref_o.out_dtype = DType::kF64;
  ref_o.lse_dtype = DType::kF64;
  ref_o.valid_rows = c.valid_rows;
  ref_o.empty = models::EmptyRowMarker::kNegInfZero;
  GpuAttentionOptions o;
  o.attention = ref_o;
  o.attention.out_dtype = DType::kBF16;
  o.attention.transposed_lse = c.transposed;
  o.impl = AttentionImpl::kFlashInfer;
  const double u = models::unit_roundoff(DType::kBF16);
  const double coeff = 8 * u + 64 * std::ldexp(1.0, -24);
  for (int r = 0; r < c.dcp; ++r) {
    const models::KvShard shard = models::shard_kv(p, r, c.dcp, 1);
    const models::Partial ref = models::local_attention(p, shard, ref_o);
    const models::Partial scale = models::local_attention(abs_p, models::shard_kv(abs_p, r, c.dcp, 1), ref_o);
    const models::Partial gpu = gpu_local_attention(p, shard, o);
    for (int b = 0; b < p.rows; ++b)
      for (int h = 0; h < c.heads; ++h) {
        const double rl = ref.l(b, h), gl = gpu.l(b, h);
        if (std::isinf(rl)) {  // empty shard or padding row: LSE −inf, O 0, as dcpsim's kernel
          ASSERT_EQ(gl, rl) << "rank " << r << " row " << b << " head " << h;
          for (int d = 0; d < c.dim; ++d) ASSERT_EQ(gpu.o(b, h, d), 0.0) << "row " << b << " head " << h;
          continue;
        }
        ASSERT_NEAR(gl, rl, 1e-4 * std::max(1.0, std::fabs(rl)))
            << "rank " << r << " row " << b << " head " << h;
        for (int d = 0; d < c.dim; ++d)
          ASSERT_LE(std::fabs(gpu.o(b, h, d) - ref.o(b, h, d)), coeff * scale.o(b, h, d) + 1e-30)
              << "rank " << r << " row " << b << " head " << h << " lane " << d;
      }
  }
}

TEST(FlashInferAttention, MlaMatchesTheReference) {
  REQUIRE_FLASHINFER();
  FlashInferCase c{128, 1, 576, 512, 2, {2100, 0, 1, 700}};  // rank 1 gets an empty shard of row 2
  c.valid_rows = 3;                                          // row 3 is CUDA-graph padding although it has KV
  check_flashinfer_case(c, 501);
  FlashInferCase h16{16, 1, 576, 512, 1, {5000, 64, 0}};
  h16.base = models::LseBase::k2;
  h16.transposed = true;
  check_flashinfer_case(h16, 502);
}

TEST(FlashInferAttention, GqaMatchesTheReference) {
  REQUIRE_FLASHINFER();
  FlashInferCase c{64, 8, 128, 128, 2, {3000, 0, 17, 1}};
  c.valid_rows = 3;
  check_flashinfer_case(c, 601);
  for (auto [H, Hkv] : std::vector<std::pair<int, int>>{{8, 8}, {12, 4}, {24, 4}, {32, 2}}) {
    FlashInferCase g{H, Hkv, 128, 128, 1, {900, 15}};
    g.base = models::LseBase::k2;
    g.transposed = H == 12;
    SCOPED_TRACE("H " + std::to_string(H) + " Hkv " + std::to_string(Hkv));
    check_flashinfer_case(g, 602 + H);
  }
}

models::Scenario flashinfer_scenario(int dcp, int heads, int kv_heads, int dim, int qk_dim,
                                     models::Strategy strategy, std::vector<std::int64_t> contexts) {
  models::Scenario s;
  s.dcp = dcp;
  s.heads = heads;
  s.kv_heads = kv_heads;
  s.head_dim = dim;
  s.qk_dim = qk_dim;
  s.strategy = strategy;
  s.contexts = std::move(contexts);
  return s;
}

TEST(FlashInferAttention, RunnerEndToEnd) {
  REQUIRE_FLASHINFER();
  int i = 0;
  for (auto strategy : {models::Strategy::kAgRs, models::Strategy::kA2a, models::Strategy::kDirect}) {
    for (bool mla : {true, false}) {
      models::Scenario s = mla ? flashinfer_scenario(4, 64, 1, 512, 576, strategy, {3000, 0, 2, 700})
                               : flashinfer_scenario(2, 32, 4, 128, 128, strategy, {1500, 1, 0, 33});
      s.lse_base = i % 2 ? models::LseBase::k2 : models::LseBase::kE;
      s.launch = i % 3 == 0 ? models::LaunchMode::kGraph : models::LaunchMode::kEager;
      RunConfig c;
      c.scenario = s;
      c.mode = ProcessMode::kEmulate;
      c.warmup = 1;
      c.reps = 3;
      c.padded_rows = i % 2 ? 0 : 2;
      c.attention = AttentionImpl::kFlashInfer;
      traces::TraceCollector sink;
      sink.on_header(measured_header(c.mode, {0}, {"dcpsim", "hw", "run"}));
      SCOPED_TRACE(s.label());
      const RunResult r = run_step(c, &sink);
      sink.finish();
      EXPECT_TRUE(r.check.passed) << r.check.summary;
      EXPECT_EQ(r.check.mismatched_nonfinite, 0);
      ASSERT_EQ(sink.trace().sections.size(), 1u);
      EXPECT_EQ(sink.trace().sections[0].scenario.params().at("attention"), "flashinfer");
      ++i;
    }
  }
}

// One row: the query all-gather's head blocks lie back to back, so FlashInfer reads them without the repack
// (needs_q_repack); with padding rows they do not, and the repack runs. Both exact.
TEST(FlashInferAttention, OneRowReadsTheGatheredQueryInPlace) {
  REQUIRE_FLASHINFER();
  for (int padded : {0, 1}) {
    for (bool mla : {true, false}) {
      models::Scenario s = mla ? flashinfer_scenario(4, 64, 1, 512, 576, models::Strategy::kAgRs, {2500})
                               : flashinfer_scenario(2, 32, 4, 128, 128, models::Strategy::kA2a, {1700});
      RunConfig c;
      c.scenario = s;
      c.mode = ProcessMode::kEmulate;
      c.warmup = 1;
      c.reps = 2;
      c.padded_rows = padded;
      c.attention = AttentionImpl::kFlashInfer;
      SCOPED_TRACE(s.label() + " padded rows " + std::to_string(padded));
      const RunResult r = run_step(c, nullptr);
      EXPECT_TRUE(r.check.passed) << r.check.summary;
    }
  }
}

TEST(FlashInferAttention, ExplicitRequestOnAnUnsupportedGeometryIsAnInputError) {
  DCPSIM_REQUIRE_GPU(device_count());
  RunConfig c;
  c.scenario = flashinfer_scenario(1, 40, 8, 128, 128, models::Strategy::kAgRs, {100});
  c.attention = AttentionImpl::kFlashInfer;
  EXPECT_THROW(run_step(c, nullptr), InputError);
}

}  // namespace
}  // namespace dcpsim::hw
