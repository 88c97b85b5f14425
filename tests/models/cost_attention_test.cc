// Split-KV decode attention: the MLA/GQA byte counts, a hand-computed one-wave example, waves and rows
// completing in order, empty rows at the floor, monotonicity.
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "dcpsim/error.h"
#include "dcpsim/models/cost.h"

namespace dcpsim::models {
namespace {

const AttentionShape kMla{128, 1, 512, 576, true, DType::kBF16, DType::kBF16, {}};
const AttentionShape kGqa{32, 8, 128, 128, false, DType::kBF16, DType::kBF16, {}};

// 4 SMs of one unit each, 16-token work units, 1 TB/s at efficiency exactly 1, at most 0.5 TB/s per unit,
// attention floor 2 us, 1 us per unit, 0.5 us kernel floor.
// The analytic model alone: a built-in profile without its measured kernel tables (which would price the
// covered shapes instead).
HardwareProfile analytic_profile(const std::string& name) {
  HardwareProfile p = load_profile(name);
  p.tables.clear();
  return p;
}

HardwareProfile tiny_gpu() {
  HardwareProfile p = analytic_profile("h200-sxm");
  p.gpu.sm_count = {4, Unit::kCount, "test"};
  p.gpu.hbm_bandwidth_measured = {1, Unit::kTBps, "test"};
  p.kernel.hbm_efficiency_max = {1, Unit::kRatio, "test"};
  p.kernel.half_efficiency_bytes = {0, Unit::kBytes, "test"};
  p.kernel.floor = {0.5, Unit::kMicroseconds, "test"};
  p.attention.ctas_per_sm = {1, Unit::kCount, "test"};
  p.attention.work_unit_tokens = {16, Unit::kCount, "test"};
  p.attention.heads_per_cta = {64, Unit::kCount, "test"};
  p.attention.cta_overhead = {1, Unit::kMicroseconds, "test"};
  p.attention.max_cta_bandwidth = {0.5, Unit::kTBps, "test"};
  p.attention.floor = {2, Unit::kMicroseconds, "test"};
  return p;
}

TEST(CostAttention, MlaReadsTheLatentOnceGqaReadsKAndVPerKvHead) {
  EXPECT_EQ(kv_bytes_per_token(kMla), 576 * 2);
  EXPECT_EQ(kv_bytes_per_token(kGqa), 8 * (128 + 128) * 2);
  Scenario s;  // defaults: 128 heads, kv 1, 512/576: the MLA layout
  EXPECT_TRUE(attention_shape(s).shared_kv);
  s.head_dim = 128;
  s.qk_dim = 128;
  EXPECT_FALSE(attention_shape(s).shared_kv);  // MQA with plain K and V
  const HardwareProfile p = analytic_profile("h200-sxm");
  EXPECT_EQ(heads_per_work_unit(p, kMla), 64);
  EXPECT_EQ(head_groups(p, kMla), 2);
  EXPECT_EQ(heads_per_work_unit(p, kGqa), 4);
  EXPECT_EQ(head_groups(p, kGqa), 8);
  EXPECT_THROW(kv_bytes_per_token(AttentionShape{30, 8, 128, 128, false, DType::kBF16, DType::kBF16, {}}),
               InputError);
}

// Rows of 32, 0 and 16 tokens, 64 heads (one head group). 48 tokens over 4 slots → 12 per slot → split 16:
// row 0 has 2 units, row 2 has 1: one wave. Each unit streams 16 tokens × 1152 B = 18432 B of latent; 3 units
// share 1 TB/s. Kernel bytes: 3 × 18432 KV + 2 rows × 64 × (576 × 2 + 512 × 2 + 4) = 55296 + 279040.
TEST(CostAttention, OneWaveHandExample) {
  const HardwareProfile p = tiny_gpu();
  const AttentionShape a{64, 1, 512, 576, true, DType::kBF16, DType::kBF16, {}};
  const std::vector<int64_t> tokens{32, 0, 16};
  const AttentionTiming t = decode_attention_time(p, a, tokens);
  EXPECT_EQ(t.slots, 4);
  EXPECT_EQ(t.split_tokens, 16);
  EXPECT_EQ(t.row_splits, (std::vector<int>{2, 0, 1}));
  EXPECT_EQ(t.work_units, 3);
  EXPECT_EQ(t.waves, 1);
  EXPECT_EQ(t.total_bytes, 55296.0 + 279040.0);
  const double end = 2e-6 + 1e-6 + 18432.0 * 3 / 1e12;
  EXPECT_NEAR(t.kernel_end_s, end, 1e-12);
  EXPECT_NEAR(t.row_done_s[0], end, 1e-12);
  EXPECT_EQ(t.row_done_s[1], 2e-6);  // empty row: start + floor
  EXPECT_NEAR(t.row_done_s[2], end, 1e-12);
  // Combine: per head, row 0's 2 fp32 partials with LSE (2 × 2052 B) read, 1028 B written: 64 × 5132 B.
  EXPECT_TRUE(t.needs_combine);
  EXPECT_EQ(t.combine_bytes, 328448.0);
  EXPECT_NEAR(t.combine_s, 0.5e-6 + 328448.0 / 1e12, 1e-12);
  const std::vector<double> ready = t.row_ready_s(10e-6);
  EXPECT_NEAR(ready[0], 10e-6 + t.combine_s, 1e-12);  // split row: after the combine
  EXPECT_EQ(ready[1], t.row_done_s[1]);
  EXPECT_EQ(ready[2], t.row_done_s[2]);  // one split: written directly
}

TEST(CostAttention, MoreUnitsThanSlotsRunInWaves) {
  const HardwareProfile p = tiny_gpu();
  const AttentionShape a{64, 1, 512, 576, true, DType::kBF16, DType::kBF16, {}};
  // 5 rows × 1 head group already exceed the 4 slots: rows are not split, 5 units run in 2 waves.
  const std::vector<int64_t> tokens{64, 64, 64, 64, 64};
  const AttentionTiming t = decode_attention_time(p, a, tokens);
  EXPECT_EQ(t.split_tokens, 64);
  EXPECT_EQ(t.waves, 2);
  EXPECT_EQ(t.row_last_wave, (std::vector<int>{0, 0, 0, 0, 1}));
  EXPECT_FALSE(t.needs_combine);
  EXPECT_EQ(t.combine_s, 0.0);
  EXPECT_LT(t.row_done_s[3], t.row_done_s[4]);
  EXPECT_EQ(t.row_done_s[4], t.kernel_end_s);
  // Each unit streams 64 × 1152 = 73728 B. Wave 0 shares 1 TB/s among 4 units; wave 1's lone unit is held to
  // the 0.5 TB/s a single unit can stream.
  EXPECT_NEAR(t.wave_end_s[0], 2e-6 + 1e-6 + 73728.0 / 0.25e12, 1e-12);
  EXPECT_NEAR(t.wave_end_s[1] - t.wave_end_s[0], 1e-6 + 73728.0 / 0.5e12, 1e-12);
}

TEST(CostAttention, EmptyRowsCompleteAtTheFloor) {
  const HardwareProfile p = analytic_profile("h200-sxm");
  const AttentionTiming none = decode_attention_time(p, kMla, std::vector<int64_t>{0, 0, 0});
  EXPECT_EQ(none.waves, 0);
  EXPECT_EQ(none.kernel_end_s, p.attention.floor.si());
  for (double done : none.row_done_s) EXPECT_EQ(done, p.attention.floor.si());
  const AttentionTiming mixed = decode_attention_time(p, kMla, std::vector<int64_t>{0, 100000, 0});
  EXPECT_EQ(mixed.row_done_s[0], p.attention.floor.si());
  EXPECT_EQ(mixed.row_done_s[2], p.attention.floor.si());
  EXPECT_GT(mixed.row_done_s[1], p.attention.floor.si());
  EXPECT_THROW(decode_attention_time(p, kMla, std::vector<int64_t>{-1}), InputError);
}

TEST(CostAttention, RowsCompleteInWaveOrderAndNeverBeforeTheFloor) {
  std::mt19937_64 rng(7);
  for (const std::string& name : builtin_profile_names()) {
    const HardwareProfile p = analytic_profile(name);
    for (const AttentionShape& a : {kMla, kGqa}) {
      for (int trial = 0; trial < 20; ++trial) {
        std::vector<int64_t> tokens(1 + rng() % 300);
        for (int64_t& n : tokens) n = (rng() % 4 == 0) ? 0 : static_cast<int64_t>(rng() % 200000);
        const AttentionTiming t = decode_attention_time(p, a, tokens);
        for (std::size_t w = 1; w < t.wave_end_s.size(); ++w) EXPECT_GT(t.wave_end_s[w], t.wave_end_s[w - 1]);
        int last_wave = 0;
        for (std::size_t b = 0; b < tokens.size(); ++b) {
          EXPECT_GE(t.row_done_s[b], p.attention.floor.si());
          EXPECT_LE(t.row_done_s[b], t.kernel_end_s);
          EXPECT_EQ(t.row_last_wave[b] < 0, tokens[b] == 0);
          if (tokens[b] == 0) continue;
          EXPECT_GE(t.row_last_wave[b], last_wave);  // rows are launched in order
          last_wave = t.row_last_wave[b];
        }
        // Completion is non-decreasing in wave index.
        for (std::size_t i = 0; i < tokens.size(); ++i) {
          for (std::size_t j = 0; j < tokens.size(); ++j) {
            if (t.row_last_wave[i] < t.row_last_wave[j]) {
              EXPECT_LT(t.row_done_s[i], t.row_done_s[j]);
            }
          }
        }
      }
    }
  }
}

TEST(CostAttention, LongerContextsAndSlowerMemoryNeverFinishEarlier) {
  const HardwareProfile p = analytic_profile("h200-sxm");
  HardwareProfile faster = p;
  faster.gpu.hbm_bandwidth_measured.value *= 2;
  double previous = 0;
  for (int64_t ctx = 0; ctx <= (int64_t{1} << 20); ctx = ctx * 2 + 1000) {
    const std::vector<int64_t> tokens(64, ctx);
    const AttentionTiming t = decode_attention_time(p, kMla, tokens);
    EXPECT_GE(t.kernel_end_s + t.combine_s, previous) << ctx;
    EXPECT_LE(decode_attention_time(faster, kMla, tokens).kernel_end_s, t.kernel_end_s) << ctx;
    previous = t.kernel_end_s + t.combine_s;
  }
}

// The profile's attention floor and per-unit overhead were chosen so that small-KV MLA decode attention lands
// in the 12-16 us per layer that aiconfigurator's H200 tables show.
TEST(CostAttention, SmallKvDecodeMatchesTheMeasuredFloor) {
  const HardwareProfile p = analytic_profile("h200-sxm");
  for (auto [rows, ctx] : {std::pair{1, 256}, {1, 1024}, {2, 1024}, {4, 256}, {8, 256}}) {
    const AttentionTiming t = decode_attention_time(p, kMla, std::vector<int64_t>(rows, ctx));
    const double total = t.kernel_end_s + (t.needs_combine ? p.launch.dependent_gap.si() + t.combine_s : 0.0);
    EXPECT_GE(total, 10e-6) << rows << " x " << ctx;
    EXPECT_LE(total, 16e-6) << rows << " x " << ctx;
  }
}

TEST(CostAttention, SplitsFillOneWaveWithoutATail) {
  const HardwareProfile p = analytic_profile("h200-sxm");  // 132 slots, MLA: 2 head groups
  for (int rows : {1, 3, 8, 40, 65}) {
    for (int64_t ctx : {5000, 131072}) {
      const AttentionTiming t = decode_attention_time(p, kMla, std::vector<int64_t>(rows, ctx));
      EXPECT_EQ(t.waves, 1) << rows << " x " << ctx;
      EXPECT_LE(t.work_units, t.slots);
      EXPECT_EQ(t.split_tokens % 64, 0);
      // One block smaller would overflow the wave (or the split is already one block).
      if (t.split_tokens > 64) {
        EXPECT_GT(rows * 2 * ((ctx + t.split_tokens - 65) / (t.split_tokens - 64)), t.slots)
            << rows << " " << ctx;
      }
    }
  }
  // 66 rows × 2 groups fill the 132 slots exactly: no split; 67 rows need a second wave.
  EXPECT_EQ(decode_attention_time(p, kMla, std::vector<int64_t>(66, 9000)).row_splits[0], 1);
  EXPECT_EQ(decode_attention_time(p, kMla, std::vector<int64_t>(67, 9000)).waves, 2);
}

// With every unit the same size in one full wave, the kernel streams all KV at the efficiency-scaled
// bandwidth: floor + cta_overhead + KV bytes / (measured × efficiency(total bytes)).
// (Tensor cores made fast enough that bytes, not FLOPs, bound every wave.)
TEST(CostAttention, FullWaveStreamsAtTheKernelBandwidth) {
  HardwareProfile p = analytic_profile("h200-sxm");
  p.tables.clear();
  p.attention.tensor_rate = quantity_from_si(1e18, Unit::kTFlops, "test");
  const int rows = 64;
  const int64_t ctx = 32768;
  const AttentionTiming t = decode_attention_time(p, kMla, std::vector<int64_t>(rows, ctx));
  ASSERT_EQ(t.waves, 1);
  const double kv = rows * ctx * kv_bytes_per_token(kMla);
  const double expected = p.attention.floor.si() + p.attention.cta_overhead.si() +
                          kv / (p.gpu.hbm_bandwidth_measured.si() * hbm_efficiency(p, t.total_bytes));
  EXPECT_NEAR(t.kernel_end_s / expected, 1.0, 1e-12);
}

// The same full wave at h200-sxm's tensor-core rate: each of the 132 units (one per SM) needs its FLOPs at
// one SM's share of the rate, which outlasts its bytes (MLA at 128 heads is compute-bound).
TEST(CostAttention, FullWaveOfMlaAtManyHeadsIsComputeBound) {
  HardwareProfile p = analytic_profile("h200-sxm");
  p.tables.clear();
  const int rows = 64;
  const int64_t ctx = 32768;
  const AttentionTiming t = decode_attention_time(p, kMla, std::vector<int64_t>(rows, ctx));
  ASSERT_EQ(t.waves, 1);
  const double unit_flops = 2.0 * heads_per_work_unit(p, kMla) * double(t.split_tokens) * (576 + 512);
  const double sm_rate = p.attention.tensor_rate.si() / p.gpu.sm_count.si();
  const double expected = p.attention.floor.si() + p.attention.cta_overhead.si() + unit_flops / sm_rate;
  EXPECT_NEAR(t.kernel_end_s / expected, 1.0, 1e-12);
}

}  // namespace
}  // namespace dcpsim::models
