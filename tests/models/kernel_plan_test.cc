// The attention kernels' schedules (kernel_plan.h) and the table lookup that follows them between measured
// shapes (cost_attention.cc).
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "dcpsim/error.h"
#include "dcpsim/models/cost_kernels.h"
#include "dcpsim/models/kernel_plan.h"
#include "dcpsim/models/profile.h"

namespace dcpsim::models {
namespace {

constexpr int kH200Sms = 132;

TEST(FlashInferMlaPlan, TilesHeadsAsThePlannerDoes) {
  EXPECT_EQ(flashinfer_mla_tile_heads(16), 16);  // one 64-row CTA tile: the table measures 16, 32, 64
  EXPECT_EQ(flashinfer_mla_tile_heads(64), 64);
  EXPECT_EQ(flashinfer_mla_tile_heads(65), 128);  // two-CTA clusters of 128 rows
  EXPECT_EQ(flashinfer_mla_tile_heads(128), 128);
  EXPECT_EQ(flashinfer_mla_tile_heads(144), 256);
  EXPECT_EQ(flashinfer_mla_tile_heads(256), 256);
  EXPECT_THROW(flashinfer_mla_tile_heads(0), InputError);
  EXPECT_EQ(flashinfer_mla_table_heads(48), 48);
  EXPECT_EQ(flashinfer_mla_table_heads(65), 72);  // never interpolated across the 64 -> 65 schedule change
  EXPECT_EQ(flashinfer_mla_table_heads(100), 100);
  EXPECT_EQ(flashinfer_mla_table_heads(144), 256);
  EXPECT_THROW(flashinfer_mla_table_heads(0), InputError);
}

TEST(FlashInferMlaPlan, ChunksAndLoads) {
  // 8 rows of 4,096 tokens, 128 heads: 66 clusters, 32,768 tokens -> 497 per cluster -> 512-token chunks,
  // 64 chunks on 66 clusters: each takes one (2 · 128 + 512).
  const std::vector<int64_t> even(8, 4096);
  MlaPlanCost c = flashinfer_mla_plan_cost(128, even, kH200Sms);
  EXPECT_EQ(c.cluster_ctas, 2);
  EXPECT_EQ(c.tile_heads, 128);
  EXPECT_EQ(c.tiles_per_row, 1);
  EXPECT_EQ(c.kv_chunk, 512);
  EXPECT_DOUBLE_EQ(c.critical, 256.0 + 512.0);
  EXPECT_EQ(c.critical_tokens, 512);
  EXPECT_EQ(c.max_chunks, 8);
  // 4,915 tokens: 596 per cluster -> 768-token chunks, 7 per row, still one per cluster.
  const std::vector<int64_t> more(8, 4915);
  c = flashinfer_mla_plan_cost(128, more, kH200Sms);
  EXPECT_EQ(c.kv_chunk, 768);
  EXPECT_DOUBLE_EQ(c.critical, 256.0 + 768.0);
  EXPECT_EQ(c.max_chunks, 7);
  // 144 heads: two 128-row tiles per row, as 256 heads.
  c = flashinfer_mla_plan_cost(144, even, kH200Sms);
  EXPECT_EQ(c.tiles_per_row, 2);
  EXPECT_EQ(c.kv_chunk, 1024);  // 65,536 / 66 = 993
  EXPECT_DOUBLE_EQ(c.critical, 256.0 + 1024.0);
  // One row, 48 heads: 132 one-CTA clusters, 83 tokens each -> 256-token chunks, 43 of them, one per cluster.
  const std::vector<int64_t> one{10923};
  c = flashinfer_mla_plan_cost(48, one, kH200Sms);
  EXPECT_EQ(c.cluster_ctas, 1);
  EXPECT_EQ(c.kv_chunk, 256);
  EXPECT_EQ(c.max_chunks, 43);
  EXPECT_DOUBLE_EQ(c.critical, 128.0 + 256.0);
  // More chunks than clusters: 200 rows of 1,000 tokens, 1,516 per cluster -> 1,536-token chunks, one per
  // row; 200 chunks on 132 clusters, so 68 take two.
  const std::vector<int64_t> many(200, 1000);
  c = flashinfer_mla_plan_cost(32, many, kH200Sms);
  EXPECT_EQ(c.kv_chunk, 1536);
  EXPECT_EQ(c.max_chunks, 1);
  EXPECT_DOUBLE_EQ(c.critical, 2 * (128.0 + 1000.0));
  EXPECT_EQ(c.critical_tokens, 2000);
  // An empty row is one chunk of no tokens.
  const std::vector<int64_t> empty{0};
  c = flashinfer_mla_plan_cost(16, empty, kH200Sms);
  EXPECT_EQ(c.kv_chunk, 32);
  EXPECT_DOUBLE_EQ(c.critical, 128.0);
}

TEST(FlashInferMlaPlan, BadInputIsRefused) {
  const std::vector<int64_t> rows(2, 100), none, negative{-1};
  EXPECT_THROW(flashinfer_mla_plan_cost(0, rows, kH200Sms), InputError);
  EXPECT_THROW(flashinfer_mla_plan_cost(16, rows, 1), InputError);
  EXPECT_THROW(flashinfer_mla_plan_cost(16, none, kH200Sms), InputError);
  EXPECT_THROW(flashinfer_mla_plan_cost(16, negative, kH200Sms), InputError);
}

// A FlashInfer MLA table whose times are exactly an offset plus costs of the plan's features: the lookup must
// then give that same law at every shape between measured ones (a weight in the plan's features), where a
// power law in tokens would not.
class FlashInferTableTest : public ::testing::Test {
 protected:
  static double law(int heads, const std::vector<int64_t>& rows) {
    const MlaPlanCost c = flashinfer_mla_plan_cost(heads, rows, kH200Sms);
    return 5000.0 + 10.0 * double(c.critical_tokens) + 300.0 * c.max_chunks;
  }
  void SetUp() override {
    p_ = load_profile("h200-sxm");
    p_.tables.clear();
    KernelTables t;
    t.provenance.device = "NVIDIA H200";
    KernelTable k{
        TableKernel::kAttention, attention_table_key(a_) + " flashinfer", {}, {}, {}, {}, {}, {}, {}};
    for (double h : {64.0, 128.0, 256.0})
      for (double b : {1.0, 8.0, 16.0, 32.0})
        for (double tokens : {1024.0, 2048.0, 4096.0, 8192.0, 16384.0}) {
          const double ns = law(static_cast<int>(h), std::vector<int64_t>(std::size_t(b), int64_t(tokens)));
          k.points.push_back({{h, b, tokens}, ns, 5, ns, ns});
        }
    k.finalize("test");
    t.tables.push_back(k);
    p_.tables.push_back(t);
  }
  double priced(int heads, const std::vector<int64_t>& rows) {
    AttentionShape a = a_;
    a.heads = heads;
    const AttentionTiming t = decode_attention_time(p_, a, rows);
    EXPECT_EQ(t.source, FigureSource::kTable);
    return (t.kernel_end_s + t.combine_s) * 1e9;
  }
  HardwareProfile p_;
  AttentionShape a_{128, 1, 512, 576, true, DType::kBF16, DType::kBF16, "flashinfer"};
};

TEST_F(FlashInferTableTest, ExactAtMeasuredShapes) {
  const std::vector<int64_t> rows(8, 4096);
  EXPECT_NEAR(priced(128, rows), law(128, rows), 1e-6);
  EXPECT_NEAR(priced(144, rows), law(256, rows), 1e-6);  // 144 heads compute what 256 do
}

TEST_F(FlashInferTableTest, FollowsThePlanBetweenMeasuredTokens) {
  for (int64_t tokens : {4915, 3000, 10923, 12000}) {
    for (int b : {1, 8}) {
      const std::vector<int64_t> rows(static_cast<std::size_t>(b), tokens);
      SCOPED_TRACE(std::to_string(b) + " rows of " + std::to_string(tokens));
      EXPECT_NEAR(priced(128, rows), law(128, rows), 1e-6 * law(128, rows));
      EXPECT_NEAR(priced(120, rows), law(120, rows), 1e-6 * law(120, rows));
    }
  }
  // One row of 1,500 tokens is cut into 12 chunks, 1,024 and 2,048 into 16: the law puts it below both
  // neighbours; the lookup never leaves the measured range, so it gives the nearer one.
  const std::vector<int64_t> one(1, 1500), lo(1, 1024), hi(1, 2048);
  ASSERT_LT(law(128, one), law(128, lo));
  ASSERT_LT(law(128, lo), law(128, hi));
  EXPECT_NEAR(priced(128, one), law(128, lo), 1e-6);
  // Rows of unequal length (a context sharded over ranks): the plan of the rows as they are.
  const std::vector<int64_t> uneven{4915, 4914, 4915, 4914, 4915, 4914, 4915, 4914};
  EXPECT_NEAR(priced(128, uneven), law(128, uneven), 1e-6 * law(128, uneven));
}

// 24 rows of 4,096 tokens at 128 heads: 72 chunks of up to 1,536 tokens for 66 clusters, so six clusters
// stream two (2,560 tokens), more than any cluster at 16 or 32 rows (1,024 and 2,048): no power law between
// those rows reaches it, so each neighbouring slice is read where it does the same work.
TEST_F(FlashInferTableTest, RowsBetweenMeasuredOnesFollowTheWork) {
  const std::vector<int64_t> rows(24, 4096), lo(16, 4096), hi(32, 4096);
  ASSERT_EQ(flashinfer_mla_plan_cost(128, rows, kH200Sms).critical_tokens, 2560);
  ASSERT_GT(law(128, rows), law(128, hi));
  // Above both neighbours, at the law but for the chunks per row (3 here; 4 and 2 on the slices, constant
  // along each, so no slice can say what a chunk costs).
  EXPECT_GT(priced(128, rows), law(128, hi));
  EXPECT_NEAR(priced(128, rows), law(128, rows), 0.005 * law(128, rows));
  // Where the work lies between the neighbours' (20 rows: 1,536 tokens, between 1,024 and 2,048), linearly
  // in time by where it lies: halfway.
  const std::vector<int64_t> twenty(20, 4096);
  ASSERT_EQ(flashinfer_mla_plan_cost(128, twenty, kH200Sms).critical_tokens, 1536);
  const double half = 0.5 * (law(128, lo) + law(128, hi));
  EXPECT_NEAR(priced(128, twenty), half, 1e-6 * half);
}

// Past the work a neighbouring slice measured (24 rows of 16,384 tokens stream more per cluster than 16 rows
// of the longest measured tokens do), nothing is read off the slice: the plain log-log lookup prices it.
TEST_F(FlashInferTableTest, WorkBeyondTheMeasuredSlicesFallsBackToThePlainLookup) {
  const std::vector<int64_t> rows(24, 16384);
  const double at[] = {128.0, 24.0, 16384.0};
  const auto plain = table_time_s(p_.tables[0].tables[0], at);
  ASSERT_TRUE(plain.has_value());
  EXPECT_NEAR(priced(128, rows), *plain * 1e9, 1e-6 * *plain * 1e9);
}

TEST_F(FlashInferTableTest, HeadsAtEachKernelsTiles) {
  AttentionShape a = a_;
  EXPECT_DOUBLE_EQ(attention_table_heads(p_, a), 128.0);
  a.heads = 100;
  EXPECT_DOUBLE_EQ(attention_table_heads(p_, a), 100.0);  // FlashInfer: the heads themselves up to 128
  a.heads = 144;
  EXPECT_DOUBLE_EQ(attention_table_heads(p_, a), 256.0);  // then 128-head cluster tiles
  a.impl = "dcpsim";
  EXPECT_DOUBLE_EQ(attention_table_heads(p_, a), 192.0);  // dcpsim: 64-head blocks
}

TEST(DcpsimAttentionPlan, GridsAsTheRunnerLaunchesThem) {
  // GQA, 3 KV heads of 16 query heads, 96 rows of 1,024 tokens: 288 blocks for 264 slots, one split, two
  // waves of blocks streaming all 16 tiles of 64 tokens.
  const std::vector<int64_t> gqa(96, 1024);
  DcpsimPlan d = dcpsim_attention_plan(false, 16, 48, gqa, kH200Sms);
  EXPECT_EQ(d.splits, 1);
  EXPECT_EQ(d.waves, 2);
  EXPECT_EQ(d.block_tokens, 1024);
  // 64 rows of 2 KV heads: 128 blocks, two splits fill the 264 slots once.
  d = dcpsim_attention_plan(false, 16, 32, std::vector<int64_t>(64, 1024), kH200Sms);
  EXPECT_EQ(d.splits, 2);
  EXPECT_EQ(d.waves, 1);
  EXPECT_EQ(d.block_tokens, 512);
  // MLA, 128 heads (two 64-head blocks), 8 rows of 8,192 tokens: 16 blocks, 8 splits of 32 tiles of 32
  // tokens.
  d = dcpsim_attention_plan(true, 128, 128, std::vector<int64_t>(8, 8192), kH200Sms);
  EXPECT_EQ(d.splits, 8);
  EXPECT_EQ(d.waves, 1);
  EXPECT_EQ(d.block_tokens, 1024);
  // The longest row sets the tiles; splits never exceed them.
  d = dcpsim_attention_plan(true, 16, 16, std::vector<int64_t>{10, 100}, kH200Sms);
  EXPECT_EQ(d.splits, 4);  // 100 tokens: 4 tiles
  EXPECT_EQ(d.block_tokens, 32);
  EXPECT_THROW(dcpsim_attention_plan(true, 16, 0, gqa, kH200Sms), InputError);
  EXPECT_THROW(dcpsim_attention_plan(true, 16, 16, std::vector<int64_t>{}, kH200Sms), InputError);
  EXPECT_THROW(dcpsim_attention_plan(true, 16, 16, std::vector<int64_t>{-1}, kH200Sms), InputError);
}

// dcpsim's kernel writes every row through its split combine, so every row is final at the combine's end;
// under row-stream a one-split row is pushed from the split kernel itself.
TEST(DcpsimAttentionRows, FinalAfterTheCombineUnlessPushed) {
  HardwareProfile p = load_profile("h200-sxm");
  p.tables.clear();
  AttentionShape a{128, 1, 512, 576, true, DType::kBF16, DType::kBF16, "dcpsim"};
  const std::vector<int64_t> rows{0, 8192, 16384, 300};
  const AttentionTiming t = decode_attention_time(p, a, rows);
  EXPECT_TRUE(t.all_rows_combined);
  EXPECT_TRUE(t.needs_combine);
  const std::vector<double> ready = t.row_ready_s(t.kernel_end_s);
  for (double r : ready) EXPECT_DOUBLE_EQ(r, t.kernel_end_s + t.combine_s);
  a.pushes_rows = true;
  const AttentionTiming pushed = decode_attention_time(p, a, rows);
  EXPECT_FALSE(pushed.all_rows_combined);
  const std::vector<double> pushed_ready = pushed.row_ready_s(pushed.kernel_end_s);
  for (std::size_t b = 0; b < rows.size(); ++b) {
    if (pushed.row_splits[b] < 2) {
      EXPECT_DOUBLE_EQ(pushed_ready[b], pushed.row_done_s[b]) << b;
    }
  }
  a.impl = "flashinfer";  // the split-KV model's own rule
  EXPECT_FALSE(decode_attention_time(p, a, rows).all_rows_combined);
}

// dcpsim's own kernel from a table whose times are exactly an offset plus costs of its schedule: the lookup
// gives that law between measured tokens and, where the work lies between the neighbours', between rows.
TEST(DcpsimAttentionTable, FollowsItsScheduleBetweenMeasuredShapes) {
  HardwareProfile p = load_profile("h200-sxm");
  p.tables.clear();
  const AttentionShape a{32, 2, 128, 128, false, DType::kBF16, DType::kBF16, "dcpsim"};  // GQA, group 16
  auto law = [](int heads, const std::vector<int64_t>& rows) {
    const DcpsimPlan d = dcpsim_attention_plan(false, 16, heads, rows, kH200Sms);
    return 4000.0 + 20.0 * double(d.waves * d.block_tokens) + 150.0 * double(d.splits);
  };
  KernelTables t;
  t.provenance.device = "NVIDIA H200";
  KernelTable k{TableKernel::kAttention, attention_table_key(a) + " dcpsim", {}, {}, {}, {}, {}, {}, {}};
  for (double h : {32.0, 64.0})
    for (double b : {16.0, 64.0, 128.0})
      for (double n : {256.0, 512.0, 1024.0, 2048.0, 4096.0, 8192.0}) {
        const double ns = law(static_cast<int>(h), std::vector<int64_t>(std::size_t(b), int64_t(n)));
        k.points.push_back({{h, b, n}, ns, 5, ns, ns});
      }
  k.finalize("test");
  t.tables.push_back(k);
  p.tables.push_back(t);
  auto priced = [&](const std::vector<int64_t>& rows) {
    const AttentionTiming x = decode_attention_time(p, a, rows);
    EXPECT_EQ(x.source, FigureSource::kTable);
    return (x.kernel_end_s + x.combine_s) * 1e9;
  };
  for (int64_t n : {300, 700, 1500, 3000, 6000}) {
    const std::vector<int64_t> rows(64, n);
    EXPECT_NEAR(priced(rows), law(32, rows), 1e-6 * law(32, rows)) << n;
  }
  // A shape that names no implementation (simulate, scan, replay) reads the table as the implementation it
  // measured, with that kernel's schedule: the same law between measured rows as for "dcpsim".
  AttentionShape unnamed = a;
  unnamed.impl.clear();
  for (int64_t b : {24, 40, 96}) {
    const std::vector<int64_t> rows(std::size_t(b), 1024);
    const AttentionTiming x = decode_attention_time(p, unnamed, rows);
    EXPECT_EQ(x.source, FigureSource::kTable);
    EXPECT_NEAR((x.kernel_end_s + x.combine_s) * 1e9, priced(rows), 1e-9 * priced(rows)) << b;
  }
}

// The fitted-schedule reading of a FlashInfer MLA table whose times are exactly a non-negative sum of the
// schedule's cost features (a launch, the chunks and KV tokens of the most loaded cluster, the KV tokens per
// cluster of all, the merge's partials per row and rows per merge CTA): the fit on the rows around a shape
// finds those costs, so the reading gives the law between measured rows and tokens, for rows of unequal
// length too, and exactly the measurement on measured shapes. Where the fit has too few points, the schedule
// reading.
TEST(FlashInferFittedTable, GivesTheCostLawBetweenMeasuredShapes) {
  HardwareProfile p = load_profile("h200-sxm");
  p.tables.clear();
  const AttentionShape a{32, 1, 512, 576, true, DType::kBF16, DType::kBF16, "flashinfer"};
  auto law = [](int heads, const std::vector<int64_t>& rows) {
    const MlaPlanCost c = flashinfer_mla_plan_cost(heads, rows, kH200Sms);
    return 4000.0 + 3000.0 * c.critical_items + 9.0 * double(c.critical_tokens) + 2.0 * c.mean_tokens +
           500.0 * c.merge_partials + 40.0 * c.merge_rows;
  };
  KernelTables t;
  t.provenance.device = "NVIDIA H200";
  KernelTable k{TableKernel::kAttention, attention_table_key(a) + " flashinfer", {}, {}, {}, {}, {}, {}, {}};
  k.interpolation = TableInterpolation::kFittedSchedule;
  for (double h : {16.0, 32.0, 64.0})
    for (double b : {1.0, 4.0, 16.0, 64.0, 128.0, 256.0})
      for (double n : {256.0, 512.0, 1024.0, 2048.0, 4096.0, 8192.0, 16384.0}) {
        const double ns = law(static_cast<int>(h), std::vector<int64_t>(std::size_t(b), int64_t(n)));
        k.points.push_back({{h, b, n}, ns, 5, ns, ns});
      }
  k.finalize("test");
  t.tables.push_back(k);
  p.tables.push_back(t);
  auto priced = [&](int heads, const std::vector<int64_t>& rows) {
    AttentionShape b = a;
    b.heads = heads;
    const AttentionTiming x = decode_attention_time(p, b, rows);
    EXPECT_EQ(x.source, FigureSource::kTable);
    return (x.kernel_end_s + x.combine_s) * 1e9;
  };
  // 131 rows of 772 tokens: 768-token chunks, so every row is a long chunk and a 4-token one, and the most
  // loaded cluster runs seven chunks (1 + 6 short): no measured shape has such a plan.
  const std::vector<int64_t> odd(131, 772);
  ASSERT_EQ(flashinfer_mla_plan_cost(32, odd, kH200Sms).critical_items, 7);
  ASSERT_EQ(flashinfer_mla_plan_cost(32, odd, kH200Sms).merge_partials, 2);
  for (int b : {3, 20, 100, 131, 200})
    for (int64_t n : {300, 772, 1500, 3000, 6000, 12000}) {
      const std::vector<int64_t> rows(static_cast<std::size_t>(b), n);
      SCOPED_TRACE(std::to_string(b) + " rows of " + std::to_string(n));
      EXPECT_NEAR(priced(32, rows), law(32, rows), 1e-6 * law(32, rows));
      EXPECT_NEAR(priced(40, rows), law(40, rows), 1e-6 * law(40, rows));  // between measured heads
    }
  const std::vector<int64_t> uneven{3001, 3000, 3001, 3000, 3001, 3000, 3001, 3000, 3001, 3000};
  EXPECT_NEAR(priced(32, uneven), law(32, uneven), 1e-6 * law(32, uneven));
  // 150 rows, one of them long: the long row is cut and merged, which no measured batch of 128 rows or more
  // is (rows of one length are split only when fewer than the clusters): the merge's costs then come from
  // the whole heads value, the rest from the rows around.
  std::vector<int64_t> serving(150, 1000);
  serving[70] = 60000;
  ASSERT_GT(flashinfer_mla_plan_cost(32, serving, kH200Sms).merge_partials, 1);
  EXPECT_NEAR(priced(32, serving), law(32, serving), 1e-6 * law(32, serving));
  // Measured times off the law by up to 3%: the fit no longer finds it, the ratio of the neighbours carries
  // the difference, and a measured shape reads its measurement.
  KernelTable& noisy = p.tables[0].tables[0];
  for (std::size_t i = 0; i < noisy.points.size(); ++i) noisy.points[i].median_ns *= 1.0 + 0.03 * std::sin(i);
  noisy.finalize("test");
  for (const TablePoint& pt : {noisy.points[40], noisy.points[77], noisy.points[100]}) {
    const std::vector<int64_t> on(static_cast<std::size_t>(pt.at[1]), static_cast<int64_t>(pt.at[2]));
    EXPECT_NEAR(priced(static_cast<int>(pt.at[0]), on), pt.median_ns, 1e-9 * pt.median_ns);
  }
  // Seven chunks on a cluster lie beyond every measured plan (at most two): the fit's error there grows
  // with the noise (8.5% for this ±3%), as a fit's extrapolation does.
  EXPECT_NEAR(priced(32, odd), law(32, odd), 0.1 * law(32, odd));
  const std::vector<int64_t> inside(20, 3000);
  EXPECT_NEAR(priced(32, inside), law(32, inside), 0.03 * law(32, inside));
  // A table of two tokens values: 8 points around a shape, too few for six costs.
  KernelTable& few = p.tables[0].tables[0];
  std::vector<TablePoint> kept;
  for (const TablePoint& pt : few.points)
    if (pt.at[2] <= 512.0) kept.push_back(pt);
  few.points = kept;
  few.finalize("test");
  const std::vector<int64_t> rows(20, 400);
  const double fitted = priced(32, rows);
  few.interpolation = TableInterpolation::kSchedule;
  EXPECT_DOUBLE_EQ(fitted, priced(32, rows));
  EXPECT_GT(std::abs(fitted - law(32, rows)), 1e-3 * law(32, rows));  // not the law: the fit did not run
}

// dcpsim's kernel on rows of unequal length: uniform rows run in whole waves at the shared rate; one long row
// among short ones outlasts them and then streams alone.
TEST(DcpsimAttentionMakespan, WavesForEvenRowsTheLongRowForMixedOnes) {
  // 8 rows of 4,096 tokens, GQA group 8 over 4 KV heads: 32 blocks of one head block each; 264 slots, so 8
  // splits of 512 tokens: 256 blocks in one wave. Fed at one block's rate by 300 (more than run): 512.
  const std::vector<int64_t> even(8, 4096);
  const DcpsimPlan d = dcpsim_attention_plan(false, 8, 32, even, kH200Sms);
  ASSERT_EQ(d.splits, 8);
  ASSERT_EQ(d.waves, 1);
  EXPECT_DOUBLE_EQ(dcpsim_attention_makespan(false, 8, 32, even, kH200Sms, 300.0), 512.0);
  // Fed at 128 blocks' rate, the 256 share it: twice as long.
  EXPECT_DOUBLE_EQ(dcpsim_attention_makespan(false, 8, 32, even, kH200Sms, 128.0), 1024.0);
  // One row of 40,960 among seven of 512: the splits follow the longest (8 of 5,120); 60 blocks run (the
  // long row's 32, one of 512 tokens for each head block of the short rows), fewer than 128, so each at its
  // own rate: the long row's blocks set the time.
  std::vector<int64_t> mixed(8, 512);
  mixed[3] = 40960;
  const double t = dcpsim_attention_makespan(false, 8, 32, mixed, kH200Sms, 128.0);
  EXPECT_DOUBLE_EQ(t, 5120.0);  // 32 + 28 blocks run, under 128: each at its own rate from the start
  EXPECT_GT(t, dcpsim_attention_makespan(false, 8, 32, std::vector<int64_t>(8, 5568), kH200Sms, 128.0));
  EXPECT_THROW(dcpsim_attention_makespan(false, 8, 32, mixed, kH200Sms, 0.5), InputError);
}

// With the profile's block bandwidth, a dcpsim table's time at the rows' mean is scaled by the schedule's
// time of the rows as they are over that of rows of their mean; without it, read at the mean alone.
TEST(DcpsimAttentionTable, MixedRowsFollowTheBlockScheduleWhereTheProfileSaysTheBlockBandwidth) {
  HardwareProfile p = load_profile("h200-sxm");
  p.tables.clear();
  const AttentionShape a{32, 4, 128, 128, false, DType::kBF16, DType::kBF16, "dcpsim"};  // group 8
  KernelTables t;
  t.provenance.device = "NVIDIA H200";
  KernelTable k{TableKernel::kAttention, attention_table_key(a) + " dcpsim", {}, {}, {}, {}, {}, {}, {}};
  for (double h : {16.0, 32.0, 64.0})
    for (double b : {4.0, 8.0, 16.0})
      for (double n : {1024.0, 2048.0, 4096.0, 8192.0}) k.points.push_back({{h, b, n}, 1000.0 * n, 5, n, n});
  k.finalize("test");
  t.tables.push_back(k);
  p.tables.push_back(t);
  std::vector<int64_t> mixed(8, 1024);
  mixed[0] = 22528;  // mean 3,712
  const std::vector<int64_t> even(8, 3712);
  auto priced = [&](const std::vector<int64_t>& rows) {
    const AttentionTiming x = decode_attention_time(p, a, rows);
    EXPECT_EQ(x.source, FigureSource::kTable);
    return x.kernel_end_s + x.combine_s;
  };
  p.attention.dcpsim_block_bandwidth.reset();
  const double plain = priced(even);
  EXPECT_DOUBLE_EQ(priced(mixed), plain);
  p.attention.dcpsim_block_bandwidth = Quantity{15, Unit::kGBps, "test"};
  const double saturating = p.gpu.hbm_bandwidth_measured.si() * p.kernel.hbm_efficiency_max.si() /
                            p.attention.dcpsim_block_bandwidth->si();
  const double ratio = dcpsim_attention_makespan(false, 8, 32, mixed, kH200Sms, saturating) /
                       dcpsim_attention_makespan(false, 8, 32, even, kH200Sms, saturating);
  ASSERT_GT(ratio, 2.0);
  EXPECT_NEAR(priced(mixed), ratio * priced(even), 1e-9 * priced(mixed));
  EXPECT_DOUBLE_EQ(priced(even), plain);  // rows of one length: the table, as before
  // Whatever the table's reading: the fitted schedule too reads rows of the mean length, then the same scale.
  p.tables[0].tables[0].interpolation = TableInterpolation::kFittedSchedule;
  EXPECT_NEAR(priced(mixed), ratio * priced(even), 1e-9 * priced(mixed));
}

}  // namespace
}  // namespace dcpsim::models
