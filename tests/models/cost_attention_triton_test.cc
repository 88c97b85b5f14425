// vLLM's Triton MLA decode kernel as a profile's attention (attention.triton_mla): its split and head-group
// geometry (the heuristic and the SM120 fp8 tuned table), hand-computed waves on a tiny GPU (memory- and
// compute-bound, the 16-row MMA tile, head groups that each compute), the L2 reuse of a head group's or a
// verify row's re-read, and the built-in rtx-pro-6000 pricing a DCP 4 rank about like a DCP 1 rank.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "dcpsim/error.h"
#include "dcpsim/models/cost.h"

namespace dcpsim::models {
namespace {

AttentionShape mla(int heads, DType kv = DType::kBF16) {
  return AttentionShape{heads, 1, 512, 576, true, kv, DType::kBF16, {}};
}

// 4 SMs of one CTA each, 1 TB/s at efficiency 1, 0.5 TB/s per CTA, attention floor 2 us, 1 us per wave; the
// Triton kernel at 40 TFLOP/s (10 TFLOP/s per SM): 8 heads per CTA, 16-row MMA tiles, at most 4 splits.
HardwareProfile tiny_triton_gpu() {
  HardwareProfile p = load_profile("h200-sxm");
  p.tables.clear();
  p.gpu.sm_count = {4, Unit::kCount, "test"};
  p.gpu.hbm_bandwidth_measured = {1, Unit::kTBps, "test"};
  p.gpu.l2_size = {100, Unit::kMB, "test"};
  p.kernel.hbm_efficiency_max = {1, Unit::kRatio, "test"};
  p.kernel.half_efficiency_bytes = {0, Unit::kBytes, "test"};
  p.attention.cta_overhead = {1, Unit::kMicroseconds, "test"};
  p.attention.max_cta_bandwidth = {0.5, Unit::kTBps, "test"};
  p.attention.floor = {2, Unit::kMicroseconds, "test"};
  p.attention.triton_mla =
      TritonMlaSpec{{8, Unit::kCount, "test"},  {16, Unit::kCount, "test"}, {576, Unit::kCount, "test"},
                    {4, Unit::kCount, "test"},  {1, Unit::kCount, "test"},  {0, Unit::kCount, "test"},
                    {40, Unit::kTFlops, "test"}};
  return p;
}

constexpr double kUnitBytes = 1024 * 576 * 2;          // one unit's 1,024 bf16 latent tokens
constexpr double kUnitFlops = 1024 * 2176.0 * 16;      // ... at a 16-row MMA tile
constexpr double kMemoryWave = 4 * kUnitBytes / 1e12;  // four such units from DRAM at 1 TB/s
constexpr double kComputeUnit = kUnitFlops / 10e12;    // one unit at one SM's 10 TFLOP/s

TEST(TritonMla, SplitsAndHeadGroupsFollowVllmsHeuristicAndTunedTable) {
  HardwareProfile p = load_profile("rtx-pro-6000");
  ASSERT_TRUE(p.attention.triton_mla.has_value());
  // Heuristic (no table entry for 8 or 32 heads): 576 // (rows x ceil(H / 8)), a power of two, at most 64.
  auto t = decode_attention_time(p, mla(8, DType::kFP8E4M3), std::vector<int64_t>(64, 80000));
  EXPECT_EQ(t.row_splits[0], 8);  // 576 / 64 = 9 -> 8
  EXPECT_EQ(t.work_units, 64 * 1 * 8);
  t = decode_attention_time(p, mla(32, DType::kFP8E4M3), std::vector<int64_t>(64, 20000));
  EXPECT_EQ(t.row_splits[0], 2);  // 576 / (64 x 4) = 2
  EXPECT_EQ(t.work_units, 64 * 4 * 2);
  t = decode_attention_time(p, mla(8, DType::kFP8E4M3), std::vector<int64_t>{100000});
  EXPECT_EQ(t.row_splits[0], 64);  // 576 -> 512, capped at 64
  // The SM120 fp8 table has 64 heads: 64 rows -> 4 splits of 32-head CTAs; 3 rows -> bucket 2 (64 splits,
  // 16 heads); 300 rows -> bucket 256 (4 splits, 32 heads).
  t = decode_attention_time(p, mla(64, DType::kFP8E4M3), std::vector<int64_t>(64, 10000));
  EXPECT_EQ(t.row_splits[0], 4);
  EXPECT_EQ(t.work_units, 64 * 2 * 4);
  t = decode_attention_time(p, mla(64, DType::kFP8E4M3), std::vector<int64_t>(3, 10000));
  EXPECT_EQ(t.work_units, 3 * 4 * 64);
  t = decode_attention_time(p, mla(64, DType::kFP8E4M3), std::vector<int64_t>(300, 10000));
  EXPECT_EQ(t.work_units, 300 * 2 * 4);
  // A 16-bit cache is not the table's: the heuristic, 8 groups of 8 heads, 576 / (64 x 8) = 1 split.
  t = decode_attention_time(p, mla(64, DType::kBF16), std::vector<int64_t>(64, 10000));
  EXPECT_EQ(t.work_units, 64 * 8 * 1);
  // Every row goes through the reduce kernel, which reads each split's fp32 partial.
  EXPECT_TRUE(t.needs_combine);
  EXPECT_TRUE(t.combined(0));
}

TEST(TritonMla, OneMemoryBoundWaveHandExample) {
  const HardwareProfile p = tiny_triton_gpu();
  // 8 heads, one row of 4,096 tokens: 4 splits of 1,024, one group, one wave of 4 units. DRAM 4.72 us beats
  // the CTA cap (2.36 us) and the compute (3.57 us).
  const AttentionTiming t = decode_attention_time(p, mla(8), std::vector<int64_t>{4096});
  EXPECT_EQ(t.work_units, 4);
  EXPECT_EQ(t.waves, 1);
  EXPECT_EQ(t.split_tokens, 1024);
  EXPECT_NEAR(t.kernel_end_s, 2e-6 + 1e-6 + kMemoryWave, 1e-12);
  EXPECT_NEAR(t.row_done_s[0], t.kernel_end_s, 1e-15);
  EXPECT_DOUBLE_EQ(t.combine_bytes, 8 * (4 * (512 * 4.0 + 4) + 512 * 2 + 4));
}

TEST(TritonMla, ACtaOfEightHeadsCostsSixteenAndEachHeadGroupComputes) {
  HardwareProfile p = tiny_triton_gpu();
  p.attention.triton_mla->tensor_rate = {4, Unit::kTFlops, "test"};  // compute-bound: 1 TFLOP/s per SM
  const double one_wave = 2e-6 + 1e-6 + kComputeUnit * 10;
  EXPECT_NEAR(decode_attention_time(p, mla(8), std::vector<int64_t>{4096}).kernel_end_s, one_wave, 1e-12);
  // 4 heads pad to the same 16-row tile.
  EXPECT_NEAR(decode_attention_time(p, mla(4), std::vector<int64_t>{4096}).kernel_end_s, one_wave, 1e-12);
  // 16 heads in two groups of 8: 8 units, two waves, each as long.
  const AttentionTiming two = decode_attention_time(p, mla(16), std::vector<int64_t>{4096});
  EXPECT_EQ(two.work_units, 8);
  EXPECT_NEAR(two.kernel_end_s, 2e-6 + 2 * (1e-6 + kComputeUnit * 10), 1e-12);
  // The same 16 heads in one CTA: one wave.
  p.attention.triton_mla->block_h = {16, Unit::kCount, "test"};
  EXPECT_NEAR(decode_attention_time(p, mla(16), std::vector<int64_t>{4096}).kernel_end_s, one_wave, 1e-12);
}

TEST(TritonMla, AHeadGroupsRereadHitsTheL2OnlyWhenTheBytesBetweenFit) {
  HardwareProfile p = tiny_triton_gpu();
  p.attention.triton_mla->max_splits = {1, Unit::kCount, "test"};
  // 16 heads (two groups), 8 rows of 1,024 tokens, one split: 16 units in 4 waves, group 0 then group 1. The
  // group-1 read of a row comes 8 units (9.4 MB) after group 0's, past the 4 slots.
  const std::vector<int64_t> rows(8, 1024);
  const AttentionTiming hit = decode_attention_time(p, mla(16), rows);  // 100 MB of L2
  EXPECT_EQ(hit.waves, 4);
  // Group 1's waves read nothing from DRAM: their compute (3.57 us) sets them.
  EXPECT_NEAR(hit.kernel_end_s, 2e-6 + 2 * (1e-6 + kMemoryWave) + 2 * (1e-6 + kComputeUnit), 1e-12);
  p.gpu.l2_size = {8, Unit::kMB, "test"};
  const AttentionTiming miss = decode_attention_time(p, mla(16), rows);
  EXPECT_NEAR(miss.kernel_end_s, 2e-6 + 4 * (1e-6 + kMemoryWave), 1e-12);
  // Both load the same bytes into the SMs.
  EXPECT_DOUBLE_EQ(hit.total_bytes, miss.total_bytes);
}

TEST(TritonMla, AVerifyBlocksLaterRowsFindTheirKvInTheL2) {
  HardwareProfile p = tiny_triton_gpu();
  p.attention.triton_mla->max_splits = {1, Unit::kCount, "test"};
  p.gpu.l2_size = {1, Unit::kMB, "test"};  // too small for anything but reads in flight together
  AttentionShape a = mla(8);
  const std::vector<int64_t> rows(4, 1024);  // one unit each, one wave
  const double separate = decode_attention_time(p, a, rows).kernel_end_s;
  EXPECT_NEAR(separate, 2e-6 + 1e-6 + kMemoryWave, 1e-12);
  a.rows_per_kv = 4;  // one request's 4 verify rows: the first reads DRAM, the next three hit
  const double block = decode_attention_time(p, a, rows).kernel_end_s;
  EXPECT_NEAR(block, 2e-6 + 1e-6 + kComputeUnit, 1e-12);
  Scenario s;
  s.rows_per_kv = 0;
  EXPECT_THROW(s.validate(), InputError);
}

TEST(TritonMla, AVerifyBlocksFirstRowInALaterHeadGroupRereadsAcrossTheOtherRequests) {
  HardwareProfile p = tiny_triton_gpu();
  p.attention.triton_mla->max_splits = {1, Unit::kCount, "test"};
  p.attention.triton_mla->tensor_rate = {400, Unit::kTFlops, "test"};  // 100 TFLOP/s per SM: 0.36 us a unit
  p.attention.max_cta_bandwidth = {10, Unit::kTBps, "test"};           // loads 0.12 us a unit
  AttentionShape a = mla(16);                                          // two groups of 8
  a.rows_per_kv = 4;  // two requests of 4 verify rows: 16 units, 4 waves of 4
  const std::vector<int64_t> rows(8, 1024);
  // Group 1's first row of request 0 re-reads what group 0's row 3 read 5 units earlier (past the 4 slots):
  // 5 x 1.18 MB = 5.9 MB between them. Every wave holds one request's first row in a head group.
  const double dram_wave = kUnitBytes / 1e12, light_wave = kComputeUnit / 10;
  p.gpu.l2_size = {7, Unit::kMB, "test"};
  EXPECT_NEAR(decode_attention_time(p, a, rows).kernel_end_s,
              2e-6 + 2 * (1e-6 + dram_wave) + 2 * (1e-6 + light_wave), 1e-12);
  p.gpu.l2_size = {5, Unit::kMB, "test"};
  EXPECT_NEAR(decode_attention_time(p, a, rows).kernel_end_s, 2e-6 + 4 * (1e-6 + dram_wave), 1e-12);
}

TEST(TritonMla, EmptyAndShortRowsStayFinite) {
  HardwareProfile p = tiny_triton_gpu();
  p.attention.triton_mla->tensor_rate = {4, Unit::kTFlops, "test"};  // compute-bound: its own rate shows
  // No KV on the rank at all: the floor, no reduce (this once spun the simulator on a NaN).
  const AttentionTiming none = decode_attention_time(p, mla(8), std::vector<int64_t>{0, 0, 0});
  EXPECT_DOUBLE_EQ(none.kernel_end_s, 2e-6);
  EXPECT_FALSE(none.needs_combine);
  for (double d : none.row_done_s) EXPECT_DOUBLE_EQ(d, 2e-6);
  // A row shorter than its 4 splits: 3 units of one token, the fourth empty.
  const AttentionTiming tiny = decode_attention_time(p, mla(8), std::vector<int64_t>{3, 0});
  EXPECT_EQ(tiny.row_splits[0], 4);
  EXPECT_EQ(tiny.row_splits[1], 0);
  EXPECT_TRUE(std::isfinite(tiny.kernel_end_s));
  EXPECT_GT(tiny.kernel_end_s, 2e-6);
  // A named implementation (dcpsim's kernel, FlashInfer's) or row-stream's pushing kernel keeps its own
  // model.
  AttentionShape named = mla(8);
  named.impl = "dcpsim";
  const double triton = decode_attention_time(p, mla(8), std::vector<int64_t>{4096}).kernel_end_s;
  EXPECT_NE(decode_attention_time(p, named, std::vector<int64_t>{4096}).kernel_end_s, triton);
  AttentionShape pushing = mla(8);
  pushing.pushes_rows = true;
  EXPECT_NE(decode_attention_time(p, pushing, std::vector<int64_t>{4096}).kernel_end_s, triton);
  Scenario s;
  s.contexts = {1, 2, 3};
  s.rows_per_kv = 2;
  EXPECT_THROW(s.validate(), InputError);
}

TEST(TritonMla, RtxDcp4RankCostsAboutWhatADcp1RankDoesAtHighConcurrency) {
  // vLLM's Triton MLA at 128 rows: DCP 1 (8 heads over the whole context) and DCP 4 (32 heads, four groups
  // each over a quarter) do the same MMA work; DCP 8's 64 heads take the tuned table's 32-head CTAs and do
  // half.
  const HardwareProfile p = load_profile("rtx-pro-6000");
  const auto time = [&](int heads, int64_t tokens) {
    return decode_attention_time(p, mla(heads, DType::kFP8E4M3), std::vector<int64_t>(128, tokens))
        .kernel_end_s;
  };
  const double dcp1 = time(8, 80000), dcp4 = time(32, 20000), dcp8 = time(64, 10000);
  EXPECT_GT(dcp4 / dcp1, 0.7);
  EXPECT_LT(dcp4 / dcp1, 1.3);
  EXPECT_LT(dcp8 / dcp4, 0.7);
  EXPECT_GT(dcp8 / dcp4, 0.3);
  // A profile without the section keeps the persistent-CTA model: the same inputs price differently.
  HardwareProfile q = p;
  q.attention.triton_mla.reset();
  EXPECT_NE(decode_attention_time(q, mla(32, DType::kFP8E4M3), std::vector<int64_t>(128, 20000)).kernel_end_s,
            dcp4);
}

}  // namespace
}  // namespace dcpsim::models
