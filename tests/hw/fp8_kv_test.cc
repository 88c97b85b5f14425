// An fp8 KV cache in `hw run` (--kv-dtype fp8: e4m3 with one per-tensor scale, as vLLM's --kv-cache-dtype
// fp8). Without a device: the plan (one byte per K/V element, a bf16 query, FlashInfer's kernels), the KV
// bytes the memory estimate counts, and the one-line refusals where no FP8-KV kernel runs. With a GPU: GQA
// and MLA in emulation at N = 2 and 3, exact against the fp64 reference over the dequantized cache, and the
// trace saying fp8 with one-byte KV shards.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "dcpsim/hw/attention_impl.h"
#include "dcpsim/hw/runner.h"
#include "dcpsim/traces/trace_collector.h"
#include "gpu_test_util.h"

#if DCPSIM_WITH_CUDA
#include "footprint.h"
#include "plan.h"
#endif

namespace dcpsim::hw {
namespace {

models::Scenario fp8_scenario(int dcp, bool mla, models::Strategy strategy,
                              std::vector<std::int64_t> contexts) {
  models::Scenario s;
  s.dcp = dcp;
  s.heads = mla ? 16 * dcp : 8 * dcp;
  s.kv_heads = mla ? 1 : dcp;  // GQA group 8, one FlashInfer instantiates
  s.head_dim = mla ? 512 : 128;
  s.qk_dim = mla ? 576 : 128;
  s.strategy = strategy;
  s.contexts = std::move(contexts);
  s.kv_dtype = models::DType::kFP8E4M3;
  s.launch = models::LaunchMode::kEager;
  return s;
}

RunConfig fp8_config(models::Scenario s) {
  RunConfig c;
  c.scenario = std::move(s);
  c.mode = ProcessMode::kEmulate;
  c.warmup = 1;
  c.reps = 2;
  c.timing = Timing::kEvents;
  return c;
}

#if DCPSIM_WITH_CUDA
// make_plan's refusal for `c`, or "" when it plans the run.
std::string refusal(const RunConfig& c) {
  try {
    (void)make_plan(c);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Fp8Kv, PlanHoldsOneByteElementsOnFlashInfer) {
  const RunConfig mla = fp8_config(fp8_scenario(2, true, models::Strategy::kAgRs, {100, 0, 65}));
  if (!built_with_flashinfer()) {
    EXPECT_NE(refusal(mla).find("no FlashInfer"), std::string::npos) << refusal(mla);
    return;
  }
  const StepPlan p = make_plan(mla);
  EXPECT_TRUE(p.kv_fp8);
  EXPECT_EQ(p.in, ops::Elem::kBF16);  // the query
  EXPECT_EQ(p.kv_elem_bytes(), 1u);
  EXPECT_EQ(p.attention, AttentionImpl::kFlashInfer);
  // One per-tensor scale, a power of two (FlashInfer's bf16 dequantization of it is exact) placing the
  // generator's largest value in the top binade of e4m3 (largest finite 448), as amax / 448 would.
  EXPECT_EQ(std::exp2(std::round(std::log2(p.kv_scale))), p.kv_scale);
  EXPECT_LE(kInputAmplitude / p.kv_scale, 448.0);
  EXPECT_GT(kInputAmplitude / p.kv_scale, 256.0);
}

TEST(Fp8Kv, KvShardBytesAreHalfOfBf16) {
  if (!built_with_flashinfer()) GTEST_SKIP() << "no FlashInfer in this build: fp8 plans are refused";
  for (const bool mla : {true, false}) {
    SCOPED_TRACE(mla ? "MLA" : "GQA");
    models::Scenario s = fp8_scenario(3, mla, models::Strategy::kAgRs, {1000, 0, 7, 129});
    const StepPlan fp8 = make_plan(fp8_config(s));
    s.kv_dtype = models::DType::kBF16;
    const StepPlan bf16 = make_plan(fp8_config(s));
    for (int rank = 0; rank < 3; ++rank) {
      std::vector<int> len;
      for (int b = 0; b < fp8.rows_total; ++b) len.push_back(static_cast<int>(fp8.local_len(b, rank)));
      const double tokens = static_cast<double>(paged_row_offsets(len, kv_page_tokens(mla)).back());
      const double width = mla ? 576 : 2 * s.kv_heads * 128;  // MLA's latent; GQA's K and V
      std::int64_t max_len = 0;
      EXPECT_DOUBLE_EQ(kv_shard_bytes(fp8, rank, max_len), tokens * width);
      EXPECT_DOUBLE_EQ(kv_shard_bytes(bf16, rank, max_len), 2 * tokens * width);
      EXPECT_EQ(max_len, fp8.local_len(0, rank));
    }
  }
}

TEST(Fp8Kv, RefusedInOneLineWhereNoFp8KernelRuns) {
  auto expect_refused = [](const RunConfig& c, const std::string& why) {
    const std::string e = refusal(c);
    EXPECT_EQ(e.rfind("--kv-dtype fp8: ", 0), 0u) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
    EXPECT_NE(e.find(built_with_flashinfer() ? why : "no FlashInfer"), std::string::npos) << e;
  };
  RunConfig dcpsim_kernel = fp8_config(fp8_scenario(2, true, models::Strategy::kAgRs, {64}));
  dcpsim_kernel.attention = AttentionImpl::kDcpsim;
  const std::string e = refusal(dcpsim_kernel);
  EXPECT_NE(e.find("dcpsim's attention kernel reads bf16/fp16 KV only"), std::string::npos) << e;
  EXPECT_NE(
      refusal(fp8_config(fp8_scenario(2, false, models::Strategy::kRowStream, {64}))).find("row-stream"),
      std::string::npos);
  models::Scenario fp32_out = fp8_scenario(2, true, models::Strategy::kAgRs, {64});
  fp32_out.out_dtype = models::DType::kF32;
  EXPECT_NE(refusal(fp8_config(fp32_out)).find("--out-dtype fp32"), std::string::npos);
  models::Scenario group12 = fp8_scenario(3, false, models::Strategy::kAgRs, {64});
  group12.heads = 24;
  group12.kv_heads = 2;
  expect_refused(fp8_config(group12), "H=24 H_kv=2 D_qk=128 D=128 is not supported");
  models::Scenario group5 = fp8_scenario(1, false, models::Strategy::kAgRs, {64});
  group5.heads = 10;
  expect_refused(fp8_config(group5), "is not supported");
  RunConfig stamps = fp8_config(fp8_scenario(2, true, models::Strategy::kAgRs, {64}));
  stamps.row_stamps = true;
  expect_refused(stamps, "--row-stamps");
}
#endif

bool fp8_runs_here(bool mla) {
  const DeviceInfo d = device_info(0);
  return mla ? d.cc_major == 9 : d.cc_major == 9 || d.cc_major == 10;
}

// Context-1 rows make the check sharp: their output is V itself, which a reference over the unrounded values
// (not the dequantized e4m3) would miss by up to 2^-4 relative, 2-3 times the bound.
TEST(Fp8Kv, GqaAndMlaAreExactInEmulation) {
  DCPSIM_REQUIRE_GPU(run_step(fp8_config(fp8_scenario(1, false, models::Strategy::kAgRs, {8})), nullptr));
  if (!built_with_flashinfer()) GTEST_SKIP() << "no FlashInfer in this build";
  const std::vector<models::Strategy> strategies = {models::Strategy::kAgRs, models::Strategy::kA2a,
                                                    models::Strategy::kDirect};
  int i = 0;
  for (const int dcp : {2, 3}) {
    for (const bool mla : {false, true}) {
      models::Scenario s = fp8_scenario(dcp, mla, strategies[i % 3], {1, 0, 700, 129, 1});
      s.lse_base = i % 2 ? models::LseBase::k2 : models::LseBase::kE;
      s.launch = i % 2 ? models::LaunchMode::kGraph : models::LaunchMode::kEager;
      RunConfig c = fp8_config(s);
      c.padded_rows = 1;
      SCOPED_TRACE(s.label());
      ++i;
      if (!fp8_runs_here(mla)) {
        EXPECT_THROW(run_step(c, nullptr), InputError);
        continue;
      }
      traces::TraceCollector sink;
      sink.on_header(measured_header(c.mode, {0}, {"dcpsim", "hw", "run"}));
      const RunResult r = run_step(c, &sink);
      sink.finish();
      EXPECT_TRUE(r.check.passed) << r.check.summary;
      EXPECT_EQ(r.check.rows_checked, 6);  // five rows and the padding row
      const traces::Trace& t = sink.trace();
      ASSERT_EQ(t.sections.size(), 1u);
      const auto& sec = t.sections[0];
      EXPECT_EQ(sec.scenario.kv_dtype(), traces::v1::DTYPE_FP8_E4M3);
      EXPECT_EQ(sec.scenario.params().at("attention"), "flashinfer");
      EXPECT_EQ(sec.scenario.params().at("kv_cache").rfind("fp8 e4m3, one per-tensor scale 0.00390625", 0),
                0u);
      ASSERT_EQ(sec.summaries.size(), 1u);
      ASSERT_EQ(sec.summaries[0].kv_bytes_per_rank_size(), dcp);
      std::int64_t tokens = 0;  // rank 0's unpaged shard: what the kernel reads
      for (const std::int64_t S : s.contexts) tokens += (S + dcp - 1) / dcp;
      EXPECT_EQ(sec.summaries[0].kv_bytes_per_rank(0), tokens * (mla ? 576 : 2 * s.kv_heads * 128));
    }
  }
}

}  // namespace
}  // namespace dcpsim::hw
