// hw sweep --kv-dtype fp8: the grid of an fp8-KV attention sweep (CPU) names FlashInfer's kernels and the KV
// type in exactly the keys the simulator reads for an fp8 scenario, and refuses what has no fp8 kernel; on a
// Hopper GPU its tables price their own points, and an fp8 scenario's attention, exactly.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "dcpsim/error.h"
#include "dcpsim/hw/attention_impl.h"
#include "dcpsim/hw/device.h"
#include "dcpsim/hw/sweep.h"
#include "dcpsim/models/cost_kernels.h"
#include "dcpsim/models/kernel_table.h"
#include "dcpsim/models/profile.h"
#include "dcpsim/models/scenario.h"
#include "gpu_test_util.h"

namespace dcpsim::hw {
namespace {

KernelSweepConfig fp8_config() {
  KernelSweepConfig c;
  c.kernels = {"attention"};
  c.geometries = {parse_sweep_geometry("mla"), parse_sweep_geometry("gqa:4")};
  c.heads = {8, 16};
  c.rows = {1, 4};
  c.tokens = {256, 1024};
  c.kv_dtype = models::DType::kFP8E4M3;
  c.warmup = 1;
  c.reps = 5;
  return c;
}

// The scenario the simulator prices: H heads on the rank over `kv_heads` KV heads, an fp8 cache.
models::Scenario fp8_scenario(bool mla, int heads, int rows, std::int64_t tokens) {
  models::Scenario s;
  s.heads = heads;
  s.kv_heads = mla ? 1 : heads / 4;
  s.head_dim = mla ? 512 : 128;
  s.qk_dim = mla ? 576 : 128;
  s.contexts = models::uniform_contexts(rows, tokens);
  s.kv_dtype = models::DType::kFP8E4M3;
  return s;
}

// Every point plans FlashInfer's kernel with an fp8 cache, under the key the simulator builds from an fp8
// scenario of the same geometry (models::attention_table_key) and the implementation that runs an fp8 cache
// (auto, as `hw run --kv-dtype fp8` resolves it: FlashInfer for GQA too, where bf16 runs dcpsim's kernel).
TEST(SweepGridFp8, KeysAreWhatAnFp8ScenarioLooksUp) {
  for (const AttentionImpl asked : {AttentionImpl::kAuto, AttentionImpl::kFlashInfer}) {
    KernelSweepConfig c = fp8_config();
    c.attention = asked;
    const std::vector<SweepPointPlan> plan = kernel_sweep_plan(c);
    ASSERT_EQ(plan.size(), 2u * 2 * 2 * 2);
    std::set<std::string> keys;
    for (const SweepPointPlan& p : plan) {
      keys.insert(p.key);
      EXPECT_TRUE(p.shape.kv_fp8);
      EXPECT_EQ(p.shape.attention, AttentionImpl::kFlashInfer);
      const bool mla = p.shape.qk_dim == 576;
      const models::Scenario s = fp8_scenario(mla, p.shape.heads, p.shape.rows, p.shape.context);
      EXPECT_EQ(p.key, models::attention_table_key(models::attention_shape(s)) + " flashinfer");
    }
    EXPECT_EQ(keys,
              (std::set<std::string>{"mla qk576 d512 fp8 flashinfer", "gqa qk128 d128 g4 fp8 flashinfer"}));
  }
  KernelSweepConfig bf16 = fp8_config();  // the bf16 sweep of the same grid: other keys, no fp8 shape
  bf16.kv_dtype = models::DType::kBF16;
  for (const SweepPointPlan& p : kernel_sweep_plan(bf16)) {
    EXPECT_FALSE(p.shape.kv_fp8);
    EXPECT_EQ(p.key.find("fp8"), std::string::npos) << p.key;
  }
}

// The KV size limit counts one byte per element: a limit between a point's fp8 and bf16 caches keeps it in
// the fp8 grid only.
TEST(SweepGridFp8, TheKvLimitCountsOneBytePerElement) {
  KernelSweepConfig c = fp8_config();
  c.geometries = {parse_sweep_geometry("mla")};
  c.heads = {16};
  c.rows = {4};
  c.tokens = {1024};
  c.max_kv_bytes = 4 * 1024 * 576 * 1.5;  // fp8: 1x, bf16: 2x
  EXPECT_EQ(kernel_sweep_points(c), 1);
  c.kv_dtype = models::DType::kBF16;
  EXPECT_EQ(kernel_sweep_points(c), 0);
}

// What has no fp8 kernel is refused before any device work, in one line: dcpsim's kernel, a GQA group
// FlashInfer does not compile, the merge kernels (they read no KV), a KV type other than bf16 and fp8.
TEST(SweepGridFp8, WhatHasNoFp8KernelIsAnInputError) {
  const auto refused = [](const KernelSweepConfig& c, const std::string& says) {
    try {
      kernel_sweep_points(c);
      ADD_FAILURE() << "accepted; expected: " << says;
    } catch (const InputError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(says), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  };
  KernelSweepConfig c = fp8_config();
  c.attention = AttentionImpl::kDcpsim;
  refused(c, "dcpsim's attention kernel reads bf16/fp16 KV only");
  c = fp8_config();
  c.geometries = {parse_sweep_geometry("gqa:5")};
  c.heads = {20, 40};
  refused(c, "gqa:5 has no FlashInfer FP8-KV kernel");
  c = fp8_config();
  c.kernels = {"attention", "correction"};
  refused(c, "not correction");
  c = fp8_config();
  c.kv_dtype = models::DType::kF16;
  refused(c, "--kv-dtype fp16");
  c = fp8_config();
  c.heads = {16, 144};  // FlashInfer's MLA tables are read at 128-head tiles above 128
  refused(c, "MLA heads for FlashInfer's kernel");
  c.geometries = {parse_sweep_geometry("gqa:16")};  // GQA at group 16 has an fp8 decode kernel, H 16 and 144
  EXPECT_EQ(kernel_sweep_points(c), 2 * 2 * 2);
}

// On a Hopper GPU with FlashInfer: the fp8 tables are full grids under the fp8 keys, each point priced
// exactly by its table, and an fp8 scenario at a measured point priced from it (source: table) while the
// bf16 tables beside it never price that scenario.
TEST(SweepGpuFp8, TablesPriceAnFp8ScenarioAtTheirPoints) {
  const KernelSweepConfig c = fp8_config();
  DCPSIM_REQUIRE_GPU(run_kernel_sweep(c, {}));
  if (!built_with_flashinfer()) {
    EXPECT_THROW(run_kernel_sweep(c, {}), InputError);
    GTEST_SKIP() << "no FlashInfer in this build: an fp8 sweep is refused";
  }
  const DeviceInfo d = device_info(0);
  if (!(d.cc_major == 9 && d.cc_minor == 0)) {
    EXPECT_THROW(run_kernel_sweep(c, {}), InputError);
    GTEST_SKIP() << "FlashInfer's FP8-KV MLA kernel needs sm_90a";
  }
  int skipped = 0;
  const models::KernelTables t = run_kernel_sweep(c, [&](const SweepProgress& p) { skipped += p.skipped; });
  EXPECT_EQ(skipped, 0);
  std::set<std::string> keys;
  for (const models::KernelTable& k : t.tables) {
    keys.insert(k.key);
    EXPECT_EQ(k.points.size(), 2u * 2 * 2) << k.key;
    for (const models::TablePoint& p : k.points) {
      const auto s = models::table_time_s(k, p.at);
      ASSERT_TRUE(s.has_value());
      EXPECT_NEAR(*s * 1e9, p.median_ns, 1e-6 * p.median_ns);
    }
  }
  EXPECT_EQ(keys,
            (std::set<std::string>{"mla qk576 d512 fp8 flashinfer", "gqa qk128 d128 g4 fp8 flashinfer"}));
  EXPECT_NE(t.provenance.clocks.find("fp8 e4m3"), std::string::npos) << t.provenance.clocks;

  models::HardwareProfile p = models::load_profile("h100-sxm");  // its bf16 tables, then these
  for (models::KernelTables& file : p.tables)  // its own fp8-KV tables (committed) leave: these alone
    std::erase_if(file.tables,
                  [](const models::KernelTable& k) { return k.key.find(" fp8 ") != std::string::npos; });
  p.tables.push_back(t);
  for (const models::KernelTable& k : t.tables) {
    const bool mla = k.key.rfind("mla", 0) == 0;
    const models::TablePoint& at = k.points.back();  // H = 16, B = 4, 1024 tokens
    const models::Scenario s = fp8_scenario(mla, int(at.at[0]), int(at.at[1]), std::int64_t(at.at[2]));
    const std::vector<std::int64_t> local(s.contexts.begin(), s.contexts.end());
    const models::AttentionTiming priced =
        models::decode_attention_time(p, models::attention_shape(s), local);
    EXPECT_EQ(priced.source, models::FigureSource::kTable) << k.key;
    EXPECT_NEAR((priced.kernel_end_s + priced.combine_s) * 1e9, at.median_ns, 1e-6 * at.median_ns) << k.key;
  }
}

}  // namespace
}  // namespace dcpsim::hw
