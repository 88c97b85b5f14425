// One simulated decode step: its phases per strategy, per-row readiness, and every strategy on every built-in
// profile for the group sizes users try.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <string>
#include <utility>

#include "dcpsim/models/cost.h"
#include "dcpsim/models/sharding.h"
#include "sim_test_support.h"

namespace dcpsim::sim {
namespace {

using models::Strategy;
using testing::builtin;
using testing::mla;

std::vector<std::string> phase_names(const StepResult& r, int rank) {
  std::vector<std::string> out;
  for (const PhaseSpan& p : r.ranks[rank].phases) out.push_back(p.name);
  return out;
}

// The duration of rank's phase `name`, or -1 when it has none.
double phase_s(const StepResult& r, int rank, const std::string& name) {
  for (const PhaseSpan& ph : r.ranks[rank].phases) {
    if (ph.name == name) return ph.duration_s();
  }
  return -1.0;
}

// h200-sxm with only flat merge tables of `kernel`: each key one time (ns) at every point of N ∈ {2, 8} × the
// rows × the heads given (heads per rank for the owner-slice kernels).
models::HardwareProfile flat_merge_tables(models::TableKernel kernel,
                                          const std::vector<std::pair<std::string, double>>& keys,
                                          std::initializer_list<double> rows,
                                          std::initializer_list<double> heads) {
  models::HardwareProfile p = builtin("h200-sxm");
  p.tables.clear();
  p.launch.pdl_saving = {};  // PDL prices from the tables given (Step.PdlSavingMeasuredOnSteps... sets them)
  p.launch.pdl_saving_attention.reset();  // (Step.DcpsimAttentionSavesUnderPdl... sets it)
  p.launch.after_copy_node = {};          // (Step.EachMergeKernelsOwnCopyNodeTerm... sets them)
  p.launch.graph_saving = {};             // (Step.EachMergeKernelsOwnCopyNodeTerm... sets them)
  p.kernel.l2_dirty_writeback
      .reset();  // the tables' prices alone (Step.EmulatedPacksAndCombinesPay... sets it)
  models::KernelTables t;
  for (const auto& [key, ns] : keys) {
    models::KernelTable k{kernel, key, {}, {}, {}, {}, {}, {}, {}};
    for (double n : {2.0, 8.0}) {
      for (double b : rows) {
        for (double h : heads) k.points.push_back({{n, b, h}, ns, 5, ns, ns});
      }
    }
    k.finalize("test");
    t.tables.push_back(k);
  }
  p.tables.push_back(t);
  return p;
}

TEST(Step, OneRankHasNoCollectiveAndNoMerge) {
  const Simulator sim(builtin("h200-sxm"));
  for (Strategy st : models::all_strategies()) {
    const StepResult r = sim.run(mla(1, 128, 16, 8192, st));
    EXPECT_TRUE(r.collectives.empty()) << models::to_string(st);
    EXPECT_EQ(phase_names(r, 0), std::vector<std::string>{"attention"});
    EXPECT_EQ(r.merge_latency_s, 0.0);
    EXPECT_EQ(r.step_latency_s, r.attention_end_s);
    for (int b = 0; b < 16; ++b) {
      EXPECT_EQ(r.ranks[0].output_ready_s[b], r.ranks[0].partial_ready_s[b]);
      EXPECT_EQ(r.ranks[0].lse_ready_s[b], r.ranks[0].partial_ready_s[b]);
    }
  }
}

TEST(Step, EachStrategyRunsItsOwnPhasesInOrder) {
  const Simulator sim(builtin("h200-sxm"));
  const std::vector<std::pair<Strategy, std::vector<std::string>>> expected = {
      {Strategy::kAgRs, {"query_gather", "attention", "lse_gather", "correction", "collective"}},
      {Strategy::kAgAr, {"query_gather", "attention", "lse_gather", "correction", "collective"}},
      {Strategy::kA2a, {"query_gather", "attention", "pack", "collective", "combine"}},
      {Strategy::kDirect, {"query_gather", "attention", "push", "wait", "combine"}},
      {Strategy::kRowStream, {"query_gather", "attention", "push", "wait", "combine"}},
      {Strategy::kFlashInferA2a, {"query_gather", "attention", "push", "wait", "combine"}}};
  for (const auto& [st, phases] : expected) {
    const StepResult r = sim.run(mla(4, 128, 8, 16384, st));
    for (int rank = 0; rank < 4; ++rank) {
      EXPECT_EQ(phase_names(r, rank), phases) << models::to_string(st);
      const auto& ph = r.ranks[rank].phases;
      for (const PhaseSpan& p : ph) EXPECT_LE(p.begin_s, p.end_s) << p.name;
      // Stream-ordered phases do not overlap (row-stream's combine runs on a second stream, beside
      // attention).
      if (st != Strategy::kRowStream) {
        for (std::size_t i = 1; i < ph.size(); ++i) EXPECT_GE(ph[i].begin_s, ph[i - 1].end_s) << ph[i].name;
      }
    }
    EXPECT_GT(r.merge_latency_s, 0.0) << models::to_string(st);
  }
}

// FlashInfer reads one dense query array, so the gathered query's head blocks are first copied into one: a
// copy kernel inside the attention phase, for more than one row and more than one rank only.
TEST(Step, FlashInferAttentionFirstRepacksTheGatheredQuery) {
  const models::HardwareProfile& p = builtin("h200-sxm");
  const Simulator sim(p);
  auto repacks = [](const StepResult& r) {
    return std::count_if(r.kernel_figures.begin(), r.kernel_figures.end(), [](const KernelFigure& f) {
      return f.kernel == "q_repack" && f.source == models::FigureSource::kAnalytic;
    });
  };
  auto span = [](const StepResult& r, int rank) {
    return r.phase(rank, "attention")->end_s - r.phase(rank, "attention")->begin_s;
  };
  models::Scenario s = mla(4, 128, 8, 16384, Strategy::kAgRs);
  s.attention_impl = "dcpsim";
  EXPECT_EQ(repacks(sim.run(s)), 0);
  s.attention_impl = "flashinfer";
  const StepResult fi = sim.run(s);
  EXPECT_EQ(repacks(fi), 4);
  // Each rank's phase holds the repack's copy besides the (table) kernel.
  const double copy = models::memory_kernel_time(p, 2.0 * 8 * 128 * 576 * 2);
  for (int rank = 0; rank < 4; ++rank) {
    const models::AttentionTiming t = models::decode_attention_time(
        p, models::attention_shape(s),
        std::vector<int64_t>(8, models::local_length(16384, rank, 4, s.interleave)));
    EXPECT_GE(span(fi, rank), t.kernel_end_s + t.combine_s + copy) << rank;
  }
  s.contexts = models::uniform_contexts(1, 16384);  // one row: its head blocks already lie back to back
  EXPECT_EQ(repacks(sim.run(s)), 0);
  EXPECT_EQ(repacks(sim.run(mla(1, 128, 8, 16384, Strategy::kAgRs))), 0);
}

TEST(Step, NoRowIsReadyBeforeEveryRanksPartialOfIt) {
  // Uneven contexts (some shorter than the group) so ranks finish their rows at different times.
  for (Strategy st : models::all_strategies()) {
    models::Scenario s = mla(4, 128, 6, 0, st);
    s.contexts = {3, 70000, 1, 20000, 512, 131072};
    const StepResult r = Simulator(builtin("h200-sxm")).run(s);
    for (int b = 0; b < s.rows(); ++b) {
      double partials = 0.0;
      for (const RankTimeline& t : r.ranks) partials = std::max(partials, t.partial_ready_s[b]);
      for (const RankTimeline& t : r.ranks) {
        EXPECT_GE(t.lse_ready_s[b], partials) << models::to_string(st) << " row " << b << " rank " << t.rank;
        EXPECT_GE(t.output_ready_s[b], t.lse_ready_s[b]) << models::to_string(st);
        EXPECT_LE(t.output_ready_s[b], r.step_latency_s);
      }
    }
  }
}

TEST(Step, RowStreamOverlapsTheMergeWithAttention) {
  // Many short rows finish in different waves; pushing each as it completes leaves less after attention.
  const Simulator sim(builtin("h200-sxm"));
  const StepResult direct = sim.run(mla(8, 128, 256, 4096, Strategy::kDirect));
  const StepResult stream = sim.run(mla(8, 128, 256, 4096, Strategy::kRowStream));
  // The same attention (SimGrid's full sharing updates round differently by picoseconds, sim_engine.cc).
  EXPECT_NEAR(direct.attention_end_s, stream.attention_end_s, 1e-11);
  EXPECT_LT(stream.merge_latency_s, direct.merge_latency_s);
  // Rows of early waves are out before attention ends.
  double earliest = stream.step_latency_s;
  for (double t : stream.ranks[0].output_ready_s) earliest = std::min(earliest, t);
  EXPECT_LT(earliest, stream.attention_end_s);
}

// Direct and FlashInfer's fused merge push the same bytes with the same flags; FlashInfer's cooperative
// kernel adds a grid barrier before the flags and one after the wait (its epoch barrier takes the place of
// direct's epoch handshake), and both combines are priced alike without kernel tables.
TEST(Step, FlashInferMergePaysTwoMoreGridBarriersThanDirect) {
  models::HardwareProfile p = builtin("h200-sxm");
  p.tables.clear();
  const Simulator sim(p);
  for (int n : {2, 3, 8}) {
    const StepResult direct = sim.run(mla(n, 16 * n, 17, 8192, Strategy::kDirect));
    const StepResult fi = sim.run(mla(n, 16 * n, 17, 8192, Strategy::kFlashInferA2a));
    EXPECT_EQ(direct.attention_end_s, fi.attention_end_s);
    EXPECT_NEAR(fi.merge_latency_s - direct.merge_latency_s, 2 * models::grid_barrier_time(p), 1e-12) << n;
  }
}

// The direct merge is one kernel per rank: it waits for the flags right after its own stores, with no second
// launch between them.
TEST(Step, DirectWaitsRightAfterItsOwnStores) {
  const Simulator sim(builtin("h200-sxm"));
  const StepResult r = sim.run(mla(4, 128, 8, 16384, Strategy::kDirect));
  for (int rank = 0; rank < 4; ++rank)
    EXPECT_EQ(r.phase(rank, "wait")->begin_s, r.phase(rank, "push")->end_s);
}

TEST(Step, KvHeldPerRankFollowsTheSharding) {
  const Simulator sim(builtin("h200-sxm"));
  models::Scenario s = mla(3, 129, 2, 0, Strategy::kAgAr);
  s.contexts = {10, 100};
  s.interleave = 16;
  const StepResult r = sim.run(s);
  const double per_token = models::kv_bytes_per_token(models::attention_shape(s));
  for (int rank = 0; rank < 3; ++rank) {
    const std::int64_t tokens =
        models::local_length(10, rank, 3, 16) + models::local_length(100, rank, 3, 16);
    EXPECT_EQ(r.ranks[rank].kv_tokens, tokens);
    EXPECT_EQ(r.ranks[rank].kv_bytes, static_cast<std::int64_t>(tokens * per_token));
  }
}

// Emulated (the runner's --emulate): every rank's attention runs before any merge kernel, so a rank's output
// is read after the later ranks' attention and the earlier ranks' corrections went through the L2: the price
// moves from the warm table's towards the " cold" table's as exp(-bytes / (L2 / 2)) of the output survives.
// On real GPUs every rank's correction follows its own attention: warm.
TEST(Step, EmulatedRanksReadTheirOutputsColderTheMoreWentThroughTheL2) {
  const models::HardwareProfile p =
      flat_merge_tables(models::TableKernel::kCorrection, {{"d512 bf16", 5000.0}, {"d512 bf16 cold", 9000.0}},
                        {4, 16}, {64, 256});
  SimOptions emulated;
  emulated.emulated_ranks = true;
  const auto correction = [](const StepResult& r, int rank) { return phase_s(r, rank, "correction"); };
  // 8 rows x 32k tokens per rank: ~300 MB of KV each, so every rank but the last reads its output cold; the
  // last one's went through only the three corrections before it. Eager: no copy node before rank 0's
  // correction (Step.EmulatedGraphsAddTheCopyNodeDelayToRankZerosNextKernel).
  const models::Scenario s = mla(4, 128, 8, 4 * 32768, Strategy::kAgRs, models::LaunchMode::kEager);
  const StepResult real = Simulator(p).run(s);
  const StepResult emu = Simulator(p, emulated).run(s);
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_NEAR(correction(emu, rank) - correction(real, rank), 4e-6, 1e-9) << rank;
  }
  const double l2_share = 0.5 * p.gpu.l2_size.si();
  const double through = 3 * models::correction_bytes(models::merge_shape(s));
  EXPECT_NEAR(correction(emu, 3) - correction(real, 3), 4e-6 * (1 - std::exp(-through / l2_share)), 1e-12);
  // Little KV: each rank's output survives more, the later the rank the more.
  const models::Scenario small = mla(4, 128, 8, 4 * 256, Strategy::kAgRs, models::LaunchMode::kEager);
  const StepResult real_small = Simulator(p).run(small), emu_small = Simulator(p, emulated).run(small);
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_GT(correction(emu_small, rank), correction(real_small, rank)) << rank;
    EXPECT_LT(correction(emu_small, rank), correction(real_small, rank) + 4e-6) << rank;
    if (rank > 0) {
      EXPECT_LT(correction(emu_small, rank), correction(emu_small, rank - 1)) << rank;
    }
  }
}

// The emulated LSE all-gather copies every rank's gathered LSEs just before the corrections: a correction
// whose output went cold still finds its LSEs in L2, priced from the " cold lse" table between warm and cold.
TEST(Step, EmulatedCorrectionsFindTheirGatheredLsesInL2) {
  const models::HardwareProfile p =
      flat_merge_tables(models::TableKernel::kCorrection,
                        {{"d512 bf16", 5000.0}, {"d512 bf16 cold", 9000.0}, {"d512 bf16 cold lse", 7000.0}},
                        {4, 16}, {64, 256});
  SimOptions emulated;
  emulated.emulated_ranks = true;
  // ~300 MB of KV per rank: rank 0's output is long gone from L2 when its correction runs.
  const models::Scenario s = mla(4, 128, 8, 4 * 32768, Strategy::kAgAr, models::LaunchMode::kEager);
  EXPECT_NEAR(phase_s(Simulator(p, emulated).run(s), 0, "correction"), 7e-6, 1e-9);
  EXPECT_NEAR(phase_s(Simulator(p).run(s), 0, "correction"), 5e-6, 1e-12);  // real GPUs: warm
}

// The A2A combine reads the blocks the emulated all-to-all copied to its rank, rank after rank: rank r's
// were followed by the later ranks' received blocks and the earlier ranks' combines (each reading N blocks
// and writing its output). On real GPUs each combine follows its own all-to-all: warm.
TEST(Step, EmulatedCombinesReadTheirBlocksColderTheEarlierTheirRank) {
  const models::HardwareProfile p =
      flat_merge_tables(models::TableKernel::kA2aCombine, {{"d512 bf16", 5000.0}, {"d512 bf16 cold", 9000.0}},
                        {4, 256}, {4, 64});
  SimOptions emulated;
  emulated.emulated_ranks = true;
  const auto combine = [](const StepResult& r, int rank) { return phase_s(r, rank, "combine"); };
  // 256 rows x 128 heads x 514 lanes x 2 bytes: 34 MB received per rank, about the L2's share.
  const models::Scenario s = mla(4, 128, 256, 4 * 1024, Strategy::kA2a, models::LaunchMode::kEager);
  const StepResult real = Simulator(p).run(s);
  const StepResult emu = Simulator(p, emulated).run(s);
  const models::MergeShape m = models::merge_shape(s);
  const double received = 256.0 * 128 * 514 * 2, l2_share = 0.5 * p.gpu.l2_size.si();
  for (int rank = 0; rank < 4; ++rank) {
    const double through = (3 - rank) * 2 * received + rank * models::unpack_combine_bytes(m);
    EXPECT_NEAR(combine(real, rank), 5e-6, 1e-12) << rank;
    EXPECT_NEAR(combine(emu, rank), 9e-6 - 4e-6 * std::exp(-through / l2_share), 1e-12) << rank;
    EXPECT_GT(combine(emu, rank), 5.5e-6) << rank;  // nowhere near warm: the blocks are the L2's size
  }
}

// With kernel.l2_dirty_writeback, an emulated step's A2A pack and combine pay that share of their missed
// bytes' time at the measured bandwidth once the kernels before them wrote an L2's worth (every line they
// allocate evicts a dirty one first); below that, and on real GPUs, nothing.
TEST(Step, EmulatedPacksAndCombinesPayDirtyWriteBacksAfterAnL2OfWrites) {
  const std::vector<std::pair<std::string, double>> flat = {{"d512 bf16", 5000.0},
                                                            {"d512 bf16 cold", 5000.0}};
  models::HardwareProfile clean = flat_merge_tables(models::TableKernel::kA2aPack, flat, {4, 256}, {4, 64});
  clean.tables.push_back(
      flat_merge_tables(models::TableKernel::kA2aCombine, flat, {4, 256}, {4, 64}).tables[0]);
  models::HardwareProfile dirty = clean;
  dirty.kernel.l2_dirty_writeback = models::Quantity{0.3, models::Unit::kRatio, "test"};
  SimOptions emulated;
  emulated.emulated_ranks = true;
  const double bw = clean.gpu.hbm_bandwidth_measured.si(), l2_share = 0.5 * clean.gpu.l2_size.si();
  // 256 rows x 128 heads x 512 x 2 bytes: 34 MB of output per rank, 134 MB over four ranks (the L2 all
  // dirty); 300 MB of KV per rank, so the packs' inputs are cold.
  const models::Scenario big = mla(4, 128, 256, 4 * 1024, Strategy::kA2a, models::LaunchMode::kEager);
  const models::MergeShape m = models::merge_shape(big);
  const StepResult with = Simulator(dirty, emulated).run(big), without = Simulator(clean, emulated).run(big);
  for (int rank = 0; rank < 4; ++rank) {
    const double pack = 0.3 * models::a2a_pack_bytes(m) / bw;
    // (the last rank's output survives the three packs before it in part: 0.2% resident)
    EXPECT_NEAR(phase_s(with, rank, "pack") - phase_s(without, rank, "pack"), pack, 5e-3 * pack) << rank;
    const double through =
        (3 - rank) * 2 * models::a2a_buffer_bytes(m) + rank * models::unpack_combine_bytes(m);
    const double combine = 0.3 * (1 - std::exp(-through / l2_share)) * models::unpack_combine_bytes(m) / bw;
    EXPECT_NEAR(phase_s(with, rank, "combine") - phase_s(without, rank, "combine"), combine, 1e-11) << rank;
    EXPECT_GT(combine, 1e-6) << rank;
  }
  // Real GPUs: each rank's kernels follow its own; nothing.
  EXPECT_EQ(phase_s(Simulator(dirty).run(big), 1, "pack"), phase_s(Simulator(clean).run(big), 1, "pack"));
  // 8 rows: 1 MB of output per rank, 4 MB written before any pack: far below the L2; nothing.
  const models::Scenario small = mla(4, 128, 8, 4 * 32768, Strategy::kA2a, models::LaunchMode::kEager);
  const StepResult small_with = Simulator(dirty, emulated).run(small);
  const StepResult small_without = Simulator(clean, emulated).run(small);
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_EQ(phase_s(small_with, rank, "pack"), phase_s(small_without, rank, "pack")) << rank;
    EXPECT_EQ(phase_s(small_with, rank, "combine"), phase_s(small_without, rank, "combine")) << rank;
  }
}

// AG+RS corrects into the reduce-scatter's head blocks, AG+AR in place: each priced from its own table.
TEST(Step, AgRsCorrectionIsPricedFromTheRsLayoutTable) {
  const models::HardwareProfile p =
      flat_merge_tables(models::TableKernel::kCorrection, {{"d512 bf16", 5000.0}, {"d512 bf16 rs", 7000.0}},
                        {4, 16}, {64, 256});
  const auto correction = [](const StepResult& r) { return phase_s(r, 0, "correction"); };
  const Simulator sim(p);
  EXPECT_NEAR(correction(sim.run(mla(4, 128, 8, 4 * 1024, Strategy::kAgRs))), 7e-6, 1e-12);
  EXPECT_NEAR(correction(sim.run(mla(4, 128, 8, 4 * 1024, Strategy::kAgAr))), 5e-6, 1e-12);
}

// The runner's emulated all-gather and all-to-all are copies, phase-major on one stream: in a graph, rank 0's
// next kernel follows a copy node and runs launch.kernel_after_copy_node longer; the other ranks' follow a
// kernel. PDL graphs hold the same copy nodes. Eager launches, and real GPUs (NCCL's kernels), add nothing.
TEST(Step, EmulatedGraphsAddTheCopyNodeDelayToRankZerosNextKernel) {
  models::HardwareProfile p =
      flat_merge_tables(models::TableKernel::kCorrection, {{"d512 bf16", 5000.0}, {"d512 bf16 cold", 5000.0}},
                        {4, 16}, {64, 256});
  p.launch.kernel_after_copy_node = models::quantity_from_si(0.25e-6, models::Unit::kMicroseconds, "test");
  SimOptions emulated;
  emulated.emulated_ranks = true;
  const auto correction = [](const StepResult& r, int rank) { return phase_s(r, rank, "correction"); };
  const auto attention = [](const StepResult& r, int rank) { return phase_s(r, rank, "attention"); };
  for (models::LaunchMode launch :
       {models::LaunchMode::kGraph, models::LaunchMode::kPdl, models::LaunchMode::kEager}) {
    const models::Scenario s = mla(4, 128, 8, 4 * 1024, Strategy::kAgAr, launch);
    const StepResult real = Simulator(p).run(s);
    const StepResult emu = Simulator(p, emulated).run(s);
    const double delay = launch == models::LaunchMode::kEager ? 0.0 : 0.25e-6;
    EXPECT_NEAR(correction(emu, 0), 5e-6 + delay, 1e-12);
    EXPECT_NEAR(attention(emu, 0) - attention(real, 0), delay, 1e-12);  // after the query all-gather
    for (int rank = 1; rank < 4; ++rank) {
      EXPECT_NEAR(correction(emu, rank), 5e-6, 1e-12) << rank;
      EXPECT_NEAR(attention(emu, rank), attention(real, rank), 1e-12) << rank;
    }
    for (int rank = 0; rank < 4; ++rank) EXPECT_NEAR(correction(real, rank), 5e-6, 1e-12) << rank;
  }
}

// launch.kernel_after_copy_node_<type> replaces the shared copy-node term for that kernel alone (rank 0's
// correction after the emulated all-gather, its A2A combine after the emulated all-to-all; the attention
// after the query all-gather keeps the shared one), and launch.graph_saving_<type> prices an emulated
// graph-launched step's merge kernels that much below their tables, PDL steps before their PDL saving, never
// eager ones or real ranks' (after NCCL's kernels); the savings together take at most half the kernel.
TEST(Step, EachMergeKernelsOwnCopyNodeTermAndGraphSaving) {
  models::HardwareProfile p =
      flat_merge_tables(models::TableKernel::kCorrection, {{"d512 bf16", 5000.0}, {"d512 bf16 cold", 5000.0}},
                        {4, 16}, {64, 256});
  p.tables.push_back(flat_merge_tables(models::TableKernel::kA2aPack,
                                       {{"d512 bf16", 4000.0}, {"d512 bf16 cold", 4000.0}}, {4, 16}, {8, 64})
                         .tables.front());
  p.tables.push_back(flat_merge_tables(models::TableKernel::kA2aCombine,
                                       {{"d512 bf16", 6000.0}, {"d512 bf16 cold", 6000.0}}, {4, 16}, {8, 64})
                         .tables.front());
  const auto us = [](double v) {
    return models::quantity_from_si(v * 1e-6, models::Unit::kMicroseconds, "test");
  };
  constexpr auto kCorr = static_cast<std::size_t>(models::MemoryKernel::kCorrection);
  constexpr auto kPack = static_cast<std::size_t>(models::MemoryKernel::kA2aPack);
  constexpr auto kComb = static_cast<std::size_t>(models::MemoryKernel::kA2aCombine);
  p.launch.kernel_after_copy_node = us(0.25);
  models::HardwareProfile own = p;
  own.launch.after_copy_node[kCorr] = us(0.05);
  own.launch.after_copy_node[kComb] = us(0.4);
  EXPECT_DOUBLE_EQ(own.launch.after_copy_node_s(models::MemoryKernel::kCorrection), 0.05e-6);
  EXPECT_DOUBLE_EQ(p.launch.after_copy_node_s(models::MemoryKernel::kCorrection), 0.25e-6);  // the shared one
  SimOptions emulated;
  emulated.emulated_ranks = true;
  for (models::LaunchMode launch : {models::LaunchMode::kGraph, models::LaunchMode::kEager}) {
    const models::Scenario ag = mla(4, 128, 8, 4 * 1024, Strategy::kAgAr, launch);
    const models::Scenario a2a = mla(4, 128, 8, 4 * 1024, Strategy::kA2a, launch);
    const bool graph = launch == models::LaunchMode::kGraph;
    const StepResult ag_own = Simulator(own, emulated).run(ag);
    const StepResult ag_shared = Simulator(p, emulated).run(ag);
    EXPECT_NEAR(phase_s(ag_own, 0, "correction"), 5e-6 + (graph ? 0.05e-6 : 0.0), 1e-12);
    EXPECT_NEAR(phase_s(ag_own, 0, "attention"), phase_s(ag_shared, 0, "attention"), 1e-12);  // shared term
    EXPECT_NEAR(phase_s(Simulator(own, emulated).run(a2a), 0, "combine"), 6e-6 + (graph ? 0.4e-6 : 0.0),
                1e-12);
    EXPECT_NEAR(phase_s(Simulator(own, emulated).run(a2a), 0, "pack"), 4e-6, 1e-12);  // no copies before it
  }
  // Graph savings: emulated graph and PDL steps, every rank; not eager, not real ranks.
  models::HardwareProfile saves = p;
  saves.launch.graph_saving[kCorr] = us(0.1);
  saves.launch.graph_saving[kPack] = us(0.2);
  saves.launch.graph_saving[kComb] = us(0.3);
  const auto at = [&](const models::HardwareProfile& prof, Strategy strategy, models::LaunchMode launch,
                      bool emulate, int rank, const char* phase) {
    SimOptions o;
    o.emulated_ranks = emulate;
    return phase_s(Simulator(prof, o).run(mla(4, 128, 8, 4 * 1024, strategy, launch)), rank, phase);
  };
  constexpr auto kGraph = models::LaunchMode::kGraph;
  constexpr auto kEager = models::LaunchMode::kEager;
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_NEAR(at(saves, Strategy::kAgAr, kGraph, true, rank, "correction"),
                at(p, Strategy::kAgAr, kGraph, true, rank, "correction") - 0.1e-6, 1e-12)
        << rank;
    EXPECT_NEAR(at(saves, Strategy::kA2a, kGraph, true, rank, "pack"),
                at(p, Strategy::kA2a, kGraph, true, rank, "pack") - 0.2e-6, 1e-12)
        << rank;
    EXPECT_NEAR(at(saves, Strategy::kA2a, kGraph, true, rank, "combine"),
                at(p, Strategy::kA2a, kGraph, true, rank, "combine") - 0.3e-6, 1e-12)
        << rank;
    EXPECT_NEAR(at(saves, Strategy::kAgAr, kEager, true, rank, "correction"),
                at(p, Strategy::kAgAr, kEager, true, rank, "correction"), 1e-12)
        << rank;
    EXPECT_NEAR(at(saves, Strategy::kAgAr, kGraph, false, rank, "correction"),
                at(p, Strategy::kAgAr, kGraph, false, rank, "correction"), 1e-12)
        << rank;
  }
  // Under PDL the later ranks' correction saves both; together at most half the kernel.
  saves.launch.pdl_saving[kCorr] = us(0.3);
  EXPECT_NEAR(at(saves, Strategy::kAgAr, models::LaunchMode::kPdl, true, 2, "correction"), 5e-6 - 0.4e-6,
              1e-12);
  EXPECT_NEAR(at(saves, Strategy::kAgAr, models::LaunchMode::kPdl, true, 0, "correction"),
              5e-6 - 0.1e-6 + 0.25e-6, 1e-12);  // rank 0: after the copies, no PDL saving
  saves.launch.graph_saving[kCorr] = us(2.0);
  saves.launch.pdl_saving[kCorr] = us(1.0);
  EXPECT_NEAR(at(saves, Strategy::kAgAr, models::LaunchMode::kPdl, true, 2, "correction"), 2.5e-6, 1e-12);
}

// Under PDL an emulated step's later ranks launch each merge kernel right after the previous rank's kernel
// of its kind: the warm end of their price from the " pdl" table (the cold end stays the plain cold table's),
// with the same share of the inputs left in L2; rank 0 follows the copies instead, and graph launches never
// read it.
TEST(Step, EmulatedPdlKernelsAfterTheirLikeReadThePdlTables) {
  const auto tables = [](bool with_pdl) {
    std::vector<std::pair<std::string, double>> keys = {{"d512 bf16", 5000.0}, {"d512 bf16 cold", 7000.0}};
    if (with_pdl) keys.push_back({"d512 bf16 pdl", 4600.0});
    return flat_merge_tables(models::TableKernel::kCorrection, keys, {4, 16}, {64, 256});
  };
  SimOptions emulated;
  emulated.emulated_ranks = true;
  const models::Scenario s = mla(4, 128, 8, 4 * 1024, Strategy::kAgAr, models::LaunchMode::kPdl);
  const StepResult plain = Simulator(tables(false), emulated).run(s);
  const StepResult pdl = Simulator(tables(true), emulated).run(s);
  EXPECT_NEAR(phase_s(pdl, 0, "correction"), phase_s(plain, 0, "correction"), 1e-12);
  for (int rank = 1; rank < 4; ++rank) {
    const double plain_ns = phase_s(plain, rank, "correction") * 1e9;
    ASSERT_GT(plain_ns, 5000.0) << rank;  // some of it cold
    const double resident = (7000.0 - plain_ns) / 2000.0;
    EXPECT_NEAR(phase_s(pdl, rank, "correction") * 1e9, 7000.0 - 2400.0 * resident, 1e-3) << rank;
  }
  models::Scenario graph = s;  // graph launches never read the " pdl" table
  graph.launch = models::LaunchMode::kGraph;
  for (int rank = 1; rank < 4; ++rank)
    EXPECT_NEAR(phase_s(Simulator(tables(true), emulated).run(graph), rank, "correction"),
                phase_s(Simulator(tables(false), emulated).run(graph), rank, "correction"), 1e-12);
}

// launch.pdl_saving (measured on steps) prices a merge kernel under PDL after a kernel that launches it
// early as its graph-replayed price less the saving, in place of the " pdl" tables: an emulated step's later
// ranks (correction, pack, A2A combine), and the pack after its rank's attention, on GPUs too. Rank 0's
// correction and combine follow the emulated collective's copies (on GPUs NCCL's kernels): no saving. A
// saving never takes more than half the kernel.
TEST(Step, PdlSavingMeasuredOnStepsReplacesThePdlTables) {
  const auto profile = [](double saving_us) {
    models::HardwareProfile p = flat_merge_tables(
        models::TableKernel::kCorrection,
        {{"d512 bf16", 5000.0}, {"d512 bf16 cold", 5000.0}, {"d512 bf16 pdl", 3000.0}}, {4, 16}, {64, 256});
    const models::KernelTables pack =
        flat_merge_tables(models::TableKernel::kA2aPack, {{"d512 bf16", 4000.0}, {"d512 bf16 cold", 4000.0}},
                          {4, 16}, {8, 64})
            .tables.front();
    p.tables.push_back(pack);
    p.tables.push_back(flat_merge_tables(models::TableKernel::kA2aCombine,
                                         {{"d512 bf16", 6000.0}, {"d512 bf16 cold", 6000.0}}, {4, 16},
                                         {8, 64})
                           .tables.front());
    if (saving_us >= 0) {
      for (models::MemoryKernel k : models::kPdlChainKernels)
        p.launch.pdl_saving[static_cast<std::size_t>(k)] =
            models::quantity_from_si(saving_us * 1e-6, models::Unit::kMicroseconds, "test");
    }
    return p;
  };
  SimOptions emulated;
  emulated.emulated_ranks = true;
  const models::Scenario ag = mla(4, 128, 8, 4 * 1024, Strategy::kAgAr, models::LaunchMode::kPdl);
  const models::Scenario a2a = mla(4, 128, 8, 4 * 1024, Strategy::kA2a, models::LaunchMode::kPdl);
  const StepResult tables_only = Simulator(profile(-1), emulated).run(ag);
  EXPECT_LT(phase_s(tables_only, 1, "correction"), 4.5e-6);  // no saving: the " pdl" table's warm end
  const StepResult ag_emu = Simulator(profile(0.3), emulated).run(ag);
  const StepResult a2a_emu = Simulator(profile(0.3), emulated).run(a2a);
  const StepResult a2a_gpus = Simulator(profile(0.3)).run(a2a);
  const StepResult ag_gpus = Simulator(profile(0.3)).run(ag);
  const double after_copies = profile(0.3).launch.kernel_after_copy_node.si();
  EXPECT_NEAR(phase_s(ag_emu, 0, "correction"), 5e-6 + after_copies, 1e-12);  // after the copies
  for (int rank = 0; rank < 4; ++rank) {
    if (rank > 0) {
      EXPECT_NEAR(phase_s(ag_emu, rank, "correction"), 4.7e-6, 1e-12) << rank;
    }
    EXPECT_NEAR(phase_s(a2a_emu, rank, "combine"), rank > 0 ? 5.7e-6 : 6e-6 + after_copies, 1e-12) << rank;
    EXPECT_NEAR(phase_s(a2a_emu, rank, "pack"), 3.7e-6, 1e-12) << rank;      // rank 0 after attention
    EXPECT_NEAR(phase_s(a2a_gpus, rank, "pack"), 3.7e-6, 1e-12) << rank;     // after its attention
    EXPECT_NEAR(phase_s(ag_gpus, rank, "correction"), 5e-6, 1e-12) << rank;  // after NCCL's kernel
  }
  models::Scenario graph = ag;  // graph launches save nothing
  graph.launch = models::LaunchMode::kGraph;
  EXPECT_NEAR(phase_s(Simulator(profile(0.3), emulated).run(graph), 2, "correction"), 5e-6, 1e-12);
  EXPECT_NEAR(phase_s(Simulator(profile(4.0), emulated).run(ag), 2, "correction"), 2.5e-6, 1e-12);  // half
}

// launch.pdl_saving_attention: in an emulated PDL step, the attention of every rank after the first is
// queued right after the previous rank's and, dcpsim's kernels being launched with PDL, is charged that much
// less; rank 0 (after the query all-gather's copies), graph steps, real ranks and FlashInfer's kernels
// (launched without PDL) save nothing, and a saving never takes more than half the kernel.
TEST(Step, DcpsimAttentionSavesUnderPdlAfterThePreviousRanksAttention) {
  const auto attention = [](double saving_us, models::LaunchMode launch, bool emulate, const char* impl,
                            int rank) {
    models::HardwareProfile p = builtin("h200-sxm");
    p.launch.pdl_saving_attention.reset();
    if (saving_us >= 0)
      p.launch.pdl_saving_attention =
          models::quantity_from_si(saving_us * 1e-6, models::Unit::kMicroseconds, "test");
    models::Scenario s = testing::gqa(4, 32, 8, 16 * 1024, Strategy::kAgRs);
    s.launch = launch;
    s.attention_impl = impl;
    SimOptions o;
    o.emulated_ranks = emulate;
    return phase_s(Simulator(p, o).run(s), rank, "attention");
  };
  constexpr auto kPdl = models::LaunchMode::kPdl;
  for (int rank = 1; rank < 4; ++rank)
    EXPECT_NEAR(attention(1.5, kPdl, true, "dcpsim", rank),
                attention(-1, kPdl, true, "dcpsim", rank) - 1.5e-6, 1e-12)
        << rank;
  EXPECT_NEAR(attention(1.5, kPdl, true, "dcpsim", 0), attention(-1, kPdl, true, "dcpsim", 0), 1e-12);
  EXPECT_NEAR(attention(1.5, kPdl, false, "dcpsim", 2), attention(-1, kPdl, false, "dcpsim", 2), 1e-12);
  EXPECT_NEAR(attention(1.5, models::LaunchMode::kGraph, true, "dcpsim", 2),
              attention(-1, models::LaunchMode::kGraph, true, "dcpsim", 2), 1e-12);
  // At most half the kernel: the phase is the kernel (less half of it) and its split-KV combine.
  models::HardwareProfile plain = builtin("h200-sxm");
  plain.launch.pdl_saving_attention.reset();
  models::Scenario g = testing::gqa(4, 32, 8, 16 * 1024, Strategy::kAgRs);
  g.launch = kPdl;
  g.attention_impl = "dcpsim";
  std::vector<int64_t> local(g.rows());
  for (int b = 0; b < g.rows(); ++b) local[b] = models::local_length(g.contexts[b], 2, g.dcp, g.interleave);
  const double kernel = models::decode_attention_time(plain, models::attention_shape(g), local).kernel_end_s;
  EXPECT_NEAR(attention(1e6, kPdl, true, "dcpsim", 2), attention(-1, kPdl, true, "dcpsim", 2) - 0.5 * kernel,
              1e-12);
  // Emulated row-stream runs its ranks at once: nothing after another rank's attention.
  const auto row_stream = [&](double saving_us) {
    models::HardwareProfile p = plain;
    if (saving_us > 0)
      p.launch.pdl_saving_attention =
          models::quantity_from_si(saving_us * 1e-6, models::Unit::kMicroseconds, "test");
    models::Scenario s = g;
    s.strategy = Strategy::kRowStream;
    SimOptions o;
    o.emulated_ranks = true;
    return phase_s(Simulator(p, o).run(s), 2, "attention");
  };
  EXPECT_NEAR(row_stream(1.5), row_stream(0), 1e-12);
  // An fp8 cache runs FlashInfer's FP8-KV kernels whatever prices it (here the analytic model): no saving.
  models::Scenario f = g;
  f.attention_impl.clear();
  f.kv_dtype = models::DType::kFP8E4M3;
  models::HardwareProfile with = plain;
  with.launch.pdl_saving_attention = models::quantity_from_si(1.5e-6, models::Unit::kMicroseconds, "test");
  SimOptions emu;
  emu.emulated_ranks = true;
  EXPECT_NEAR(phase_s(Simulator(with, emu).run(f), 2, "attention"),
              phase_s(Simulator(plain, emu).run(f), 2, "attention"), 1e-12);
  f.kv_dtype = models::DType::kBF16;  // the same scenario with a bf16 cache: dcpsim's kernel, which saves
  EXPECT_NEAR(phase_s(Simulator(with, emu).run(f), 2, "attention"),
              phase_s(Simulator(plain, emu).run(f), 2, "attention") - 1.5e-6, 1e-12);
  models::Scenario m = mla(4, 128, 8, 16 * 1024, Strategy::kAgRs, kPdl);
  m.attention_impl = "flashinfer";
  models::HardwareProfile p = builtin("h200-sxm");
  SimOptions o;
  o.emulated_ranks = true;
  const double flashinfer = phase_s(Simulator(p, o).run(m), 2, "attention");
  p.launch.pdl_saving_attention = models::quantity_from_si(1.5e-6, models::Unit::kMicroseconds, "test");
  EXPECT_NEAR(phase_s(Simulator(p, o).run(m), 2, "attention"), flashinfer, 1e-12);
}

// An attention priced from a table holds its graph-replayed gap before the split-KV combine: graph steps add
// none, eager ones only their longer gap's difference; FlashInfer's MLA kernel is one launch (no combine
// kernel, no gap); its query repack is priced from kernel.q_repack.
TEST(Step, TablePricedAttentionCountsItsCombineGapOnce) {
  const models::HardwareProfile p = builtin("h200-sxm");
  ASSERT_TRUE(p.launch.dependent_gap_eager.has_value());
  const double extra = p.launch.dependent_gap_eager->si() - p.launch.dependent_gap.si();
  ASSERT_GT(extra, 0.5e-6);
  const Simulator sim(p);
  const auto graph_and_eager = [&](models::Scenario s) {
    s.launch = models::LaunchMode::kGraph;
    const double graph = phase_s(sim.run(s), 0, "attention");
    s.launch = models::LaunchMode::kEager;
    return std::pair{graph, phase_s(sim.run(s), 0, "attention")};
  };
  // dcpsim's GQA kernel (every row through its combine): the graph phase is the table's time.
  models::Scenario g = testing::gqa(2, 64, 1, 8192, Strategy::kAgRs);
  g.attention_impl = "dcpsim";
  const std::vector<int64_t> local(1, models::local_length(8192, 0, 2, 1));
  const models::AttentionTiming t = models::decode_attention_time(p, models::attention_shape(g), local);
  ASSERT_EQ(t.source, models::FigureSource::kTable);
  ASSERT_TRUE(t.needs_combine);
  const auto [gqa_graph, gqa_eager] = graph_and_eager(g);
  EXPECT_NEAR(gqa_graph, t.kernel_end_s + t.combine_s, 1e-12);
  EXPECT_NEAR(gqa_eager - gqa_graph, extra, 1e-12);
  // FlashInfer's MLA kernel over split rows: the repack, one gap, the kernel; eager adds the repack's gap
  // only.
  models::Scenario m = mla(4, 128, 8, 4 * 8192, Strategy::kAgRs);
  m.attention_impl = "flashinfer";
  const std::vector<int64_t> rows(8, models::local_length(4 * 8192, 0, 4, 1));
  const models::AttentionTiming f = models::decode_attention_time(p, models::attention_shape(m), rows);
  ASSERT_EQ(f.source, models::FigureSource::kTable);
  ASSERT_TRUE(f.needs_combine && f.table_one_launch);
  const double repack =
      models::memory_kernel_time(p, models::MemoryKernel::kQRepack, 2.0 * 8 * 128 * 576 * 2);
  const auto [mla_graph, mla_eager] = graph_and_eager(m);
  EXPECT_NEAR(mla_graph, repack + p.launch.dependent_gap.si() + f.kernel_end_s + f.combine_s, 1e-12);
  EXPECT_NEAR(mla_eager - mla_graph, extra, 1e-11);  // picoseconds of SimGrid's rounding (sim_engine.cc)
}

TEST(Step, EagerLaunchesAreSlowerThanAGraph) {
  const Simulator sim(builtin("h200-sxm"));
  const StepResult graph = sim.run(mla(8, 128, 4, 2048, Strategy::kAgRs, models::LaunchMode::kGraph));
  const StepResult eager = sim.run(mla(8, 128, 4, 2048, Strategy::kAgRs, models::LaunchMode::kEager));
  EXPECT_GT(eager.step_latency_s, graph.step_latency_s);
}

// Every strategy, on every built-in profile, for the group sizes of the brief (H = 144 divides all of them).
class EveryProfile : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryProfile, EveryStrategyRunsForCommonGroupSizes) {
  const Simulator sim(builtin(GetParam()));
  for (int n : {1, 2, 3, 4, 8, 16, 72}) {
    for (Strategy st : models::all_strategies()) {
      const StepResult r = sim.run(mla(n, 144, 1, 4096, st));
      ASSERT_EQ(static_cast<int>(r.ranks.size()), n);
      EXPECT_GT(r.step_latency_s, 0.0) << "dcp" << n << " " << models::to_string(st);
      EXPECT_GE(r.step_latency_s, r.attention_end_s);
      EXPECT_EQ(r.collectives.empty(), n == 1);
      for (const RankTimeline& t : r.ranks) EXPECT_LE(t.done_s, r.step_latency_s);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Builtin, EveryProfile, ::testing::ValuesIn(models::builtin_profile_names()),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           std::string n = param.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

}  // namespace
}  // namespace dcpsim::sim
