// hw sweep: the grid a sweep times (CPU), and a small sweep on the GPU whose tables are well formed and price
// their own measured points exactly.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <set>
#include <tuple>

#include "dcpsim/error.h"
#include "dcpsim/hw/attention_impl.h"
#include "dcpsim/hw/bench.h"
#include "dcpsim/hw/sweep.h"
#include "dcpsim/models/cost_kernels.h"
#include "dcpsim/models/kernel_table.h"
#include "dcpsim/models/profile.h"
#include "gpu_test_util.h"

namespace dcpsim::hw {
namespace {

KernelSweepConfig small_config() {
  KernelSweepConfig c;
  c.kernels = {"attention", "correction", "a2a_pack"};
  c.geometries = {parse_sweep_geometry("mla"), parse_sweep_geometry("gqa:4")};
  c.heads = {8, 16};
  c.rows = {1, 4};
  c.tokens = {256, 1024};
  c.merge_dcp = {2, 3};
  c.merge_rows = {1, 8};
  c.merge_heads = {6, 8};
  c.merge_heads_per_rank = {1, 3};
  c.merge_dims = {128};
  c.warmup = 1;
  c.reps = 5;
  return c;
}

// "kernel|key" of every table in a sweep's output.
std::set<std::string> table_keys(const models::KernelTables& t) {
  std::set<std::string> keys;
  for (const models::KernelTable& k : t.tables)
    keys.insert(std::string(models::to_string(k.kernel)) + "|" + k.key);
  return keys;
}

// The sweep's tables, or nullopt with `why` where it refuses for want of the GPU timeline (CUPTI is taken
// under compute-sanitizer); any other error propagates.
std::optional<models::KernelTables> sweep_on_the_timeline(const KernelSweepConfig& c, std::string* why) {
  try {
    return run_kernel_sweep(c, {});
  } catch (const RuntimeError& e) {
    if (std::string(e.what()).find("needs the GPU timeline") == std::string::npos) throw;
    *why = e.what();
    return std::nullopt;
  }
}

TEST(SweepGrid, GeometriesParseAndNameBack) {
  EXPECT_TRUE(parse_sweep_geometry("mla").mla);
  const SweepGeometry g = parse_sweep_geometry("gqa:16");
  EXPECT_FALSE(g.mla);
  EXPECT_EQ(g.group, 16);
  EXPECT_EQ(sweep_geometry_name(g), "gqa:16");
  for (const char* bad : {"", "gqa", "gqa:", "gqa:0", "gqa:-1", "gqa:x", "gqa:1000", "mha"})
    EXPECT_THROW(parse_sweep_geometry(bad), InputError) << bad;
}

TEST(SweepGrid, CountsEveryRunnablePoint) {
  // Attention: 2 geometries × 2 heads × 2 rows × 2 tokens = 16 (gqa:4 divides 8 and 16); correction in place:
  // 2 N × 2 rows × 2 heads = 8, and into the RS layout where N divides H (N = 2: H = 6, 8; N = 3: H = 6):
  // 3 × 2 rows = 6; A2A pack at H = N × (1, 3): 2 N × 2 rows × 2 = 8, every N the same slices.
  EXPECT_EQ(kernel_sweep_points(small_config()), 16 + 8 + 6 + 8);
  KernelSweepConfig c = small_config();
  c.geometries = {parse_sweep_geometry("gqa:16")};  // divides neither 8 nor 16 → only 16
  c.kernels = {"attention"};
  EXPECT_EQ(kernel_sweep_points(c), 1 * 2 * 2);
  c.max_kv_bytes = 1;  // every KV cache is larger
  EXPECT_EQ(kernel_sweep_points(c), 0);
}

// `hw bench --sweep`: the correction's floor (touch) and the copy do not depend on N, so each shape or size
// is timed once; the correction is timed at every point of the grid.
TEST(BenchSweep, FloorsAndCopiesVisitEachShapeOnce) {
#if !defined(DCPSIM_WITH_CUDA)
  GTEST_SKIP() << "built without CUDA: the bench and its grids are the runner's";
#endif
  const auto correct = sweep_shapes("decode", "correct");
  const auto touch = sweep_shapes("decode", "touch");
  const auto copy = sweep_shapes("decode", "copy");
  std::set<std::tuple<int, int, int>> shapes;
  std::set<std::int64_t> sizes;
  for (const OpShape& s : correct) {
    shapes.insert({s.rows, s.heads, s.dim});
    sizes.insert(std::int64_t(s.rows) * s.heads * s.dim * 2);
  }
  EXPECT_EQ(correct.size(), 5u * 9 * 6 * 2 + 1);
  ASSERT_EQ(touch.size(), shapes.size());
  std::set<std::tuple<int, int, int>> seen;
  for (const OpShape& s : touch) EXPECT_TRUE(seen.insert({s.rows, s.heads, s.dim}).second);
  EXPECT_EQ(seen, shapes);
  EXPECT_EQ(copy.size(), sizes.size());
  EXPECT_EQ(sweep_shapes("decode", "empty").size(), 1u);
}

TEST(SweepGrid, BadGridsAreInputErrors) {
  KernelSweepConfig c = small_config();
  c.heads.clear();
  EXPECT_THROW(kernel_sweep_points(c), InputError);
  c = small_config();
  c.merge_dcp = {1};
  EXPECT_THROW(kernel_sweep_points(c), InputError);
  c = small_config();
  c.merge_dims = {64};
  EXPECT_THROW(kernel_sweep_points(c), InputError);
  c = small_config();
  c.kernels = {"collective"};  // tabulated from multi-GPU traces, not swept
  EXPECT_THROW(kernel_sweep_points(c), InputError);
  c = small_config();
  c.kernels = {"attn"};
  EXPECT_THROW(kernel_sweep_points(c), InputError);
  c = small_config();
  c.reps = 2;
  EXPECT_THROW(kernel_sweep_points(c), InputError);
  c = small_config();
  c.heads = {16, 96};  // dcpsim's MLA kernel above one 64-head tile: whole tiles only
  c.attention = AttentionImpl::kDcpsim;
  EXPECT_THROW(kernel_sweep_points(c), InputError);
  c.geometries = {parse_sweep_geometry("gqa:8")};  // GQA has no such tile
  EXPECT_NO_THROW(kernel_sweep_points(c));
  c = small_config();
  c.heads = {64,
             192};  // FlashInfer's MLA tables are read at 128-head tiles above 128, by what auto resolves to
  if (resolve_attention_impl(AttentionImpl::kAuto, {192, 1, 576, 512, true, false}) ==
      AttentionImpl::kFlashInfer) {
    EXPECT_THROW(kernel_sweep_points(c), InputError);
    c.heads = {64, 72, 100, 128, 256};  // the heads themselves up to 128
    EXPECT_NO_THROW(kernel_sweep_points(c));
    c.heads = {68};  // read at 72
    EXPECT_THROW(kernel_sweep_points(c), InputError);
    c.heads = {64, 192};
  } else {
    EXPECT_NO_THROW(kernel_sweep_points(c));  // a build without FlashInfer runs dcpsim's kernel
  }
  c.attention = AttentionImpl::kDcpsim;
  EXPECT_NO_THROW(kernel_sweep_points(c));
  c = small_config();
  c.row_stamps = true;  // only correction and A2A combine stamp rows
  EXPECT_THROW(kernel_sweep_points(c), InputError);
  c.kernels = {"correction", "a2a_combine"};
  EXPECT_EQ(kernel_sweep_points(c), 8 + 6 + 8);
  c = small_config();
  c.split_lse = true;  // only the A2A pack and combine have a2a-2call's layout
  EXPECT_THROW(kernel_sweep_points(c), InputError);
  c.kernels = {"a2a_pack", "a2a_combine"};
  EXPECT_EQ(kernel_sweep_points(c), 8 + 8);
  c.row_stamps = true;  // the pack stamps no rows; the stamped combine reads split LSEs as a2a-2call runs it
  EXPECT_THROW(kernel_sweep_points(c), InputError);
  c.kernels = {"a2a_combine"};
  EXPECT_EQ(kernel_sweep_points(c), 8);
  c = small_config();
  c.pdl = true;  // FlashInfer's attention is launched without PDL
  EXPECT_THROW(kernel_sweep_points(c), InputError);
  c.kernels = {"correction", "a2a_pack"};
  EXPECT_EQ(kernel_sweep_points(c), 8 + 6 + 8);
  c.cold_merge_inputs = true;  // each call reads its own inputs, both evicted first
  EXPECT_EQ(kernel_sweep_points(c), 8 + 6 + 8);
  c.pdl_chain = kPdlColdChainMax + 1;  // a cold chain's calls each read their own input set
  EXPECT_THROW(kernel_sweep_points(c), InputError);
  c.cold_merge_inputs = false;  // a warm chain reads the timed call's set throughout
  EXPECT_EQ(kernel_sweep_points(c), 8 + 6 + 8);
  c.pdl_chain = 2;  // the shortest chain and the longest
  EXPECT_EQ(kernel_sweep_points(c), 8 + 6 + 8);
  c.pdl_chain = 16;
  EXPECT_EQ(kernel_sweep_points(c), 8 + 6 + 8);
  c.pdl_chain = 1;
  EXPECT_THROW(kernel_sweep_points(c), InputError);
  c.pdl_chain = 17;
  EXPECT_THROW(kernel_sweep_points(c), InputError);
  c.pdl = false;  // a chain length without --pdl says so
  c.pdl_chain = 8;
  EXPECT_THROW(kernel_sweep_points(c), InputError);
}

TEST(SweepGpu, TablesAreFullGridsThatPriceTheirPointsExactly) {
  const KernelSweepConfig c = small_config();
  int calls = 0;
  DCPSIM_REQUIRE_GPU(run_kernel_sweep(c, {}));
  const models::KernelTables t = run_kernel_sweep(c, [&](const SweepProgress& p) {
    ++calls;
    EXPECT_FALSE(p.skipped) << p.point << ": " << p.why;
  });
  EXPECT_EQ(calls, kernel_sweep_points(c));
  EXPECT_FALSE(t.provenance.device.empty());
  EXPECT_FALSE(t.provenance.cuda.empty());
  EXPECT_FALSE(t.provenance.date.empty());
  std::size_t points = 0;
  for (const models::KernelTable& k : t.tables) {
    points += k.points.size();
    for (const models::TablePoint& p : k.points) {
      EXPECT_GT(p.min_ns, 0);
      EXPECT_LE(p.min_ns, p.median_ns);
      EXPECT_LE(p.median_ns, p.max_ns);
      EXPECT_GE(p.samples, c.reps / 2);
      // A measured point is priced exactly by its own table.
      const auto s = models::table_time_s(k, p.at);
      ASSERT_TRUE(s.has_value());
      EXPECT_NEAR(*s * 1e9, p.median_ns, 1e-6 * p.median_ns);
    }
  }
  EXPECT_EQ(points, static_cast<std::size_t>(calls));
  // Attention keys name the implementation that ran (auto: FlashInfer for MLA where it runs, dcpsim for GQA).
  const std::string mla_impl =
      attention_impl_name(resolve_attention_impl(AttentionImpl::kAuto, {8, 1, 576, 512, true, false}));
  EXPECT_EQ(table_keys(t),
            (std::set<std::string>{"attention|mla qk576 d512 bf16 " + mla_impl,
                                   "attention|gqa qk128 d128 g4 bf16 dcpsim", "correction|d128 bf16",
                                   "correction|d128 bf16 rs", "a2a_pack|d128 bf16"}));
  // The file round-trips through the format the profiles load.
  EXPECT_EQ(models::parse_kernel_tables(models::kernel_tables_json(t), "sweep"), t);
}

// With row stamps the merge kernels run as `hw run --row-stamps` runs them, under their own keys, which the
// simulator prices stamped sections from (never the plain kernels').
TEST(SweepGpu, StampedKernelsHaveTheirOwnTables) {
  KernelSweepConfig c = small_config();
  c.kernels = {"correction", "a2a_combine"};
  c.row_stamps = true;
  DCPSIM_REQUIRE_GPU(run_kernel_sweep(c, {}));
  const models::KernelTables t = run_kernel_sweep(c, {});
  EXPECT_EQ(table_keys(t),
            (std::set<std::string>{"correction|d128 bf16 stamped", "correction|d128 bf16 rs stamped",
                                   "a2a_combine|d128 bf16 stamped"}));
  models::MergeShape m;
  m.dcp = 2;
  m.rows = 4;
  m.heads = 8;
  m.head_dim = 128;
  m.row_stamps = true;
  models::HardwareProfile p = models::load_profile("h200-sxm");
  p.tables = {t};
  EXPECT_EQ(models::merge_kernel_price(p, models::MemoryKernel::kCorrection, m).source,
            models::FigureSource::kTable);
  m.row_stamps = false;  // the plain kernel is not in these tables
  EXPECT_EQ(models::merge_kernel_price(p, models::MemoryKernel::kCorrection, m).source,
            models::FigureSource::kAnalytic);
}

// a2a-2call's layout (the LSEs apart from O) runs the pack's split form and the combine's short path for
// separate LSEs: their own keys, which price a2a-2call's kernels; the packed all-to-all's keys stay
// unmeasured.
TEST(SweepGpu, SplitLseKernelsHaveTheirOwnTables) {
  KernelSweepConfig c = small_config();
  c.kernels = {"a2a_pack", "a2a_combine"};
  c.split_lse = true;
  DCPSIM_REQUIRE_GPU(run_kernel_sweep(c, {}));
  const models::KernelTables t = run_kernel_sweep(c, {});
  EXPECT_EQ(table_keys(t),
            (std::set<std::string>{"a2a_pack|d128 bf16 split", "a2a_combine|d128 bf16 split"}));
  models::MergeShape m;
  m.dcp = 2;
  m.rows = 8;
  m.heads = 6;
  m.head_dim = 128;
  m.split_lse = true;
  models::HardwareProfile p = models::load_profile("h200-sxm");
  p.tables = {t};
  EXPECT_EQ(models::merge_kernel_price(p, models::MemoryKernel::kA2aCombine, m).source,
            models::FigureSource::kTable);
  m.split_lse = false;  // the packed layout's kernel is not in these tables
  EXPECT_EQ(models::merge_kernel_price(p, models::MemoryKernel::kA2aCombine, m).source,
            models::FigureSource::kAnalytic);
}

// --warm-lse reads the correction's LSEs back after the cold eviction: its own keys, which the simulator
// prices an emulated correction's cold end from; the other kernels keep their cold keys.
TEST(SweepGpu, WarmLsesHaveTheirOwnColdTables) {
  KernelSweepConfig c = small_config();
  c.kernels = {"correction", "a2a_pack"};
  c.cold_merge_inputs = true;
  c.warm_lse = true;
  DCPSIM_REQUIRE_GPU(run_kernel_sweep(c, {}));
  const models::KernelTables t = run_kernel_sweep(c, {});
  EXPECT_EQ(table_keys(t),
            (std::set<std::string>{"correction|d128 bf16 cold lse", "correction|d128 bf16 rs cold lse",
                                   "a2a_pack|d128 bf16 cold"}));
}

// --pdl times every point twice, alone and as the last of a chain of calls of the same kernel under PDL
// (charged from its predecessor's end): both keys in one file, and never two calls' time; warm inputs and
// cold ones, and a longer warm chain.
TEST(SweepGpu, PdlCallsAreTimedFromTheirPredecessorsEnd) {
  for (const int chain : {-3, 3, 8}) {  // negative: cold
    const bool cold = chain < 0;
    KernelSweepConfig c = small_config();
    c.kernels = {"correction", "a2a_combine"};
    c.pdl = true;
    c.pdl_chain = std::abs(chain);
    c.cold_merge_inputs = cold;
    std::string why;
    DCPSIM_REQUIRE_GPU(sweep_on_the_timeline(c, &why));
    const std::optional<models::KernelTables> swept = sweep_on_the_timeline(c, &why);
    if (!swept) GTEST_SKIP() << why;
    const models::KernelTables& t = *swept;
    const std::string k = cold ? " cold" : "";
    EXPECT_EQ(table_keys(t),
              (std::set<std::string>{"correction|d128 bf16" + k, "correction|d128 bf16 pdl" + k,
                                     "correction|d128 bf16 rs" + k, "correction|d128 bf16 rs pdl" + k,
                                     "a2a_combine|d128 bf16" + k, "a2a_combine|d128 bf16 pdl" + k}));
    for (const models::KernelTable& pdl : t.tables) {
      const std::size_t at = pdl.key.find(" pdl");
      if (at == std::string::npos) continue;
      const std::string plain_key = pdl.key.substr(0, at) + pdl.key.substr(at + 4);
      const auto plain = std::find_if(t.tables.begin(), t.tables.end(), [&](const models::KernelTable& x) {
        return x.kernel == pdl.kernel && x.key == plain_key;
      });
      ASSERT_NE(plain, t.tables.end()) << pdl.key;
      ASSERT_EQ(plain->points.size(), pdl.points.size());
      for (std::size_t j = 0; j < pdl.points.size(); ++j) {
        EXPECT_LT(pdl.points[j].median_ns, 1.5 * plain->points[j].median_ns) << pdl.key;  // not two calls
        EXPECT_GT(pdl.points[j].median_ns, 0.5 * plain->points[j].median_ns) << pdl.key;  // nor a sliver
      }
    }
  }
}

// A copy captured into each call's graph runs before the kernel but is not part of its time: a 256 MiB copy
// takes over 100 µs, the smallest correction a few.
TEST(SweepGpu, APreludeCopyInTheGraphIsNotTimed) {
  KernelSweepConfig c = small_config();
  c.kernels = {"correction"};
  c.merge_prelude_copy_bytes = std::int64_t{256} << 20;
  c.merge_prelude_copy_in_graph = true;
  std::string why;
  DCPSIM_REQUIRE_GPU(sweep_on_the_timeline(c, &why));
  const std::optional<models::KernelTables> swept = sweep_on_the_timeline(c, &why);
  if (!swept) GTEST_SKIP() << why;
  const models::KernelTables& t = *swept;
  ASSERT_FALSE(t.tables.empty());
  for (const models::KernelTable& k : t.tables)
    for (const models::TablePoint& p : k.points) EXPECT_LT(p.median_ns, 30e3) << k.key;
}

// --attention-prelude-write: a memset before each attention call leaves that many bytes dirty in L2 (as much
// as it holds of them), which the call's KV stream (here ~150 MB, several times the L2) must write back: the
// same keys, the provenance says so, and the call is slower (measured on an H100: +6-8 us for 16-64 MiB,
// docs/hw/2026-12-07/attention_dirty_l2.txt; the floor asserted is 2 us).
TEST(SweepGpu, AttentionAfterDirtyLinesPaysTheirWriteBack) {
  KernelSweepConfig c = small_config();
  c.kernels = {"attention"};
  c.geometries = {parse_sweep_geometry("mla")};
  c.heads = {16};
  c.rows = {8};
  c.tokens = {16384};
  c.reps = 10;
  std::string why;
  DCPSIM_REQUIRE_GPU(sweep_on_the_timeline(c, &why));
  const std::optional<models::KernelTables> clean = sweep_on_the_timeline(c, &why);
  if (!clean) GTEST_SKIP() << why;
  c.attention_prelude_write_bytes = std::int64_t{64} << 20;
  const std::optional<models::KernelTables> dirty = sweep_on_the_timeline(c, &why);
  ASSERT_TRUE(dirty.has_value()) << why;
  ASSERT_EQ(table_keys(*clean), table_keys(*dirty));
  ASSERT_EQ(clean->tables.front().points.size(), 1u);
  const double without = clean->tables.front().points.front().median_ns;
  const double with = dirty->tables.front().points.front().median_ns;
  EXPECT_GT(with, without + 2e3) << "without " << without << " ns, with " << with << " ns";
  EXPECT_NE(dirty->provenance.clocks.find("--attention-prelude-write"), std::string::npos);
  EXPECT_EQ(clean->provenance.clocks.find("--attention-prelude-write"), std::string::npos);
}

// The empty kernel is the floor under every kernel call: below the smallest correction, in both modes.
TEST(BenchGpu, TheEmptyKernelIsTheLaunchFloor) {
  for (bool graph : {true, false}) {
    OpBenchConfig c;
    c.op = "empty";
    c.graph = graph;
    c.eager_batch = 20;
    c.reps = 10;
    DCPSIM_REQUIRE_GPU(run_op_bench(c));
    const OpBenchResult empty = run_op_bench(c);
    c.op = "correct";
    c.shape.dcp = 2;
    c.shape.rows = 64;
    c.shape.heads = 32;
    c.shape.dim = 512;
    const OpBenchResult correct = run_op_bench(c);
    EXPECT_GT(empty.median_ns, 0.0);
    EXPECT_LT(empty.median_ns, correct.median_ns) << (graph ? "graph" : "eager");
  }
}

}  // namespace
}  // namespace dcpsim::hw
