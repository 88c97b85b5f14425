// `hw run` end to end in emulation: every strategy, N not a power of two, GQA and MLA, eager and graph,
// padding rows and row stamps; the step's own reference check must pass, and the trace section must say what
// ran.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <string>

#include "dcpsim/hw/runner.h"
#include "dcpsim/traces/trace_collector.h"
#include "gpu_test_util.h"

namespace dcpsim::hw {
namespace {

models::Scenario scenario(int dcp, int heads, int kv_heads, int dim, int qk_dim, models::Strategy strategy,
                          std::vector<std::int64_t> contexts) {
  models::Scenario s;
  s.dcp = dcp;
  s.heads = heads;
  s.kv_heads = kv_heads;
  s.head_dim = dim;
  s.qk_dim = qk_dim;
  s.strategy = strategy;
  s.contexts = std::move(contexts);
  s.launch = models::LaunchMode::kEager;
  return s;
}

RunConfig config(models::Scenario s) {
  RunConfig c;
  c.scenario = std::move(s);
  c.mode = ProcessMode::kEmulate;
  c.warmup = 1;
  c.reps = 3;
  c.timing = Timing::kEvents;
  return c;
}

TEST(Runner, EveryStrategyIsExactInEmulation) {
  DCPSIM_REQUIRE_GPU(run_step(config(scenario(2, 8, 1, 128, 128, models::Strategy::kAgRs, {8})), nullptr));
  const std::vector<models::Strategy> strategies = {models::Strategy::kAgRs, models::Strategy::kAgAr,
                                                    models::Strategy::kA2a, models::Strategy::kA2aTwoCall,
                                                    models::Strategy::kDirect};
  int i = 0;
  for (int dcp : {1, 2, 3, 5}) {
    for (auto strategy : strategies) {
      const bool mla = i % 2 == 1;
      models::Scenario s = mla ? scenario(dcp, 16 * dcp, 1, 512, 576, strategy, {1, 0, 700, 2})
                               : scenario(dcp, 8 * dcp, 2, 128, 128, strategy, {3, 1200, 0, 65});
      s.interleave = i % 3 == 2 ? 16 : 1;
      s.lse_base = i % 2 ? models::LseBase::k2 : models::LseBase::kE;
      s.launch = i % 4 < 2 ? models::LaunchMode::kEager : models::LaunchMode::kGraph;
      RunConfig c = config(s);
      c.padded_rows = i % 3 == 0 ? 2 : 0;
      c.row_stamps = i % 2 == 0;
      SCOPED_TRACE(s.label());
      const RunResult r = run_step(c, nullptr);
      EXPECT_TRUE(r.check.passed) << r.check.summary;
      EXPECT_EQ(r.check.mismatched_nonfinite, 0);
      EXPECT_GT(r.step_median_ns, 0);
      ++i;
    }
  }
}

TEST(Runner, WritesATraceSection) {
  DCPSIM_REQUIRE_GPU(run_step(config(scenario(2, 8, 1, 128, 128, models::Strategy::kAgRs, {8})), nullptr));
  RunConfig c = config(scenario(3, 24, 3, 128, 128, models::Strategy::kA2a, {100, 5}));
  c.row_stamps = true;
  traces::TraceCollector sink;
  sink.on_header(measured_header(c.mode, {0}, {"dcpsim", "hw", "run"}));
  const RunResult r = run_step(c, &sink);
  sink.finish();
  const traces::Trace& t = sink.trace();
  ASSERT_TRUE(t.header.has_value());
  EXPECT_EQ(t.header->source(), traces::v1::SOURCE_EMULATED);
  ASSERT_EQ(t.header->devices_size(), 1);
  EXPECT_FALSE(t.header->devices(0).uuid().empty());
  ASSERT_EQ(t.sections.size(), 1u);
  const auto& sec = t.sections[0];
  EXPECT_EQ(sec.scenario.dcp(), 3);
  EXPECT_EQ(sec.scenario.strategy(), traces::v1::STRATEGY_A2A);
  int emulated = 0, kernels = 0;
  for (const auto& e : sec.events) {
    emulated += e.emulated();
    kernels += e.kind() == traces::v1::EVENT_KIND_KERNEL;
    EXPECT_LE(e.start_ns(), e.end_ns());
  }
  EXPECT_EQ(emulated, 3 * 2);  // q all-gather and all-to-all on each rank
  EXPECT_EQ(kernels, 3 * 3);   // attention, pack, combine
  EXPECT_EQ(sec.row_results.size(), 3u * 2u);
  EXPECT_FALSE(sec.phase_summaries.empty());
  ASSERT_EQ(sec.summaries.size(), 1u);
  EXPECT_EQ(sec.summaries[0].values().at("check_passed"), 1.0);
  EXPECT_TRUE(r.check.passed);
}

// Row stamps on the correction kernels of both ends of the size table (one vector per thread for small calls,
// four streaming vectors per lane for large ones): every row of every rank is stamped, its LSE no later than
// its output.
TEST(Runner, RowStampsCoverEveryRowOnBothCorrectionPaths) {
  DCPSIM_REQUIRE_GPU(run_step(config(scenario(2, 8, 1, 128, 128, models::Strategy::kAgRs, {8})), nullptr));
  for (int batch : {3, 256}) {
    models::Scenario s = scenario(2, 64, 1, 512, 576, models::Strategy::kAgRs,
                                  std::vector<std::int64_t>(static_cast<std::size_t>(batch), 300));
    s.launch = models::LaunchMode::kGraph;
    RunConfig c = config(s);
    c.row_stamps = true;
    c.padded_rows = 4;
    traces::TraceCollector sink;
    sink.on_header(measured_header(c.mode, {0}, {"dcpsim", "hw", "run"}));
    const RunResult r = run_step(c, &sink);
    sink.finish();
    EXPECT_TRUE(r.check.passed) << r.check.summary;
    const auto& sec = sink.trace().sections.at(0);
    EXPECT_EQ(sec.scenario.params().at("row_stamps"), "on");
    ASSERT_EQ(sec.row_results.size(), 2u * (batch + 4)) << batch;  // padding rows are reported too
    for (const auto& row : sec.row_results) {
      if (row.row() >= batch) continue;
      EXPECT_GT(row.lse_ready_ns(), 0) << batch << " row " << row.row();
      EXPECT_GE(row.output_ready_ns(), row.lse_ready_ns()) << batch << " row " << row.row();
    }
  }
}

TEST(Runner, RejectsWhatItCannotRun) {
  DCPSIM_REQUIRE_GPU(run_step(config(scenario(2, 8, 1, 128, 128, models::Strategy::kAgRs, {8})), nullptr));
  RunConfig row_stream_threads = config(scenario(2, 8, 1, 128, 128, models::Strategy::kRowStream, {8}));
  row_stream_threads.mode = ProcessMode::kThreads;
  row_stream_threads.devices = {0, 0};
  EXPECT_THROW(run_step(row_stream_threads, nullptr), InputError);  // emulation only, for now
  EXPECT_THROW(run_step(config(scenario(2, 8, 1, 64, 64, models::Strategy::kAgRs, {8})), nullptr),
               InputError);
  models::Scenario f32 = scenario(2, 8, 1, 128, 128, models::Strategy::kAgRs, {8});
  f32.kv_dtype = models::DType::kF32;
  EXPECT_THROW(run_step(config(f32), nullptr), InputError);
  RunConfig threads = config(scenario(2, 8, 1, 128, 128, models::Strategy::kAgRs, {8}));
  threads.mode = ProcessMode::kThreads;
  threads.devices = {0};
  EXPECT_THROW(run_step(threads, nullptr), InputError);  // two ranks need two devices
}

TEST(Runner, AgArWithHeadsNotDivisibleByN) {
  DCPSIM_REQUIRE_GPU(run_step(config(scenario(2, 8, 1, 128, 128, models::Strategy::kAgRs, {8})), nullptr));
  const RunResult r =
      run_step(config(scenario(3, 8, 1, 128, 128, models::Strategy::kAgAr, {40, 7})), nullptr);
  EXPECT_TRUE(r.check.passed) << r.check.summary;
}

TEST(Runner, ThreadPerDeviceModeRunsOnOneDevice) {
  // One GPU here: a group of one exercises the thread path, its NCCL communicator and the check. Groups of
  // several GPUs run the same code with one thread per device.
  DCPSIM_REQUIRE_GPU(run_step(config(scenario(1, 8, 1, 128, 128, models::Strategy::kAgRs, {8})), nullptr));
  RunConfig c = config(scenario(1, 16, 2, 128, 128, models::Strategy::kAgRs, {300, 0, 41}));
  c.mode = ProcessMode::kThreads;
  c.devices = {0};
  c.scenario.launch = models::LaunchMode::kGraph;
  const RunResult r = run_step(c, nullptr);
  EXPECT_TRUE(r.check.passed) << r.check.summary;
  ASSERT_EQ(r.phases.size(), 1u);
  EXPECT_EQ(r.phases[0].phase, "attention");
  EXPECT_FALSE(r.phases[0].emulated);
}

}  // namespace
}  // namespace dcpsim::hw

namespace dcpsim::hw {
namespace {

// The GPU timeline: every phase of every rank in every measured repetition comes from CUPTI's activity
// records, eager and graph-replayed, and the trace keeps the records.
TEST(Runner, CuptiTimelineTimesEveryPhase) {
  DCPSIM_REQUIRE_GPU(run_step(config(scenario(2, 8, 1, 128, 128, models::Strategy::kAgRs, {8})), nullptr));
  for (auto launch : {models::LaunchMode::kEager, models::LaunchMode::kGraph, models::LaunchMode::kPdl}) {
    models::Scenario s = scenario(3, 48, 1, 512, 576, models::Strategy::kA2a, {2000, 17, 0, 900});
    s.launch = launch;
    RunConfig c = config(s);
    c.timing = Timing::kCupti;
    c.row_stamps = true;
    traces::TraceCollector sink;
    sink.on_header(measured_header(c.mode, {0}, {"dcpsim", "hw", "run"}));
    const RunResult r = run_step(c, &sink);
    sink.finish();
    SCOPED_TRACE(s.label());
    EXPECT_TRUE(r.check.passed) << r.check.summary;
    EXPECT_EQ(r.timing, Timing::kCupti);
    const auto& sec = sink.trace().sections.at(0);
    EXPECT_EQ(sec.scenario.params().at("timing"), "cupti");
    EXPECT_EQ(sec.scenario.params().at("timeline_records_dropped"), "0");
    for (const PhaseStats& p : r.phases) EXPECT_GT(p.median_ns, 0) << p.rank << " " << p.phase;
    EXPECT_GE(r.outer_step_median_ns, 0.5 * r.step_median_ns);
    // Every rank's attention ran kernels (dcpsim's or FlashInfer's) in every measured repetition; the
    // emulated all-to-all is device copies; kernels carry their launch shape.
    std::vector<int> attention(3 * c.reps, 0);
    int copies = 0;
    for (const auto& a : sec.gpu_activities) {
      ASSERT_GE(a.repetition(), 0);
      ASSERT_LT(a.repetition(), c.reps);
      EXPECT_LE(a.start_ns(), a.end_ns());
      if (a.phase() == "attention" && a.kind() == traces::v1::GpuActivity::KIND_KERNEL)
        ++attention[a.rank() * c.reps + a.repetition()];
      if (a.phase() == "all_to_all") copies += a.kind() == traces::v1::GpuActivity::KIND_MEMCPY;
      if (a.kind() == traces::v1::GpuActivity::KIND_KERNEL) {
        ASSERT_EQ(a.grid_size(), 3);
        EXPECT_GT(a.grid(0) * a.block(0), 0);
      }
    }
    for (int n : attention) EXPECT_GE(n, 1);
    EXPECT_GT(copies, 0);
    // Rows lie on the timeline: every row with KV (rows 0, 1, 3; row 2 is empty) is stamped, its LSE no later
    // than its output.
    for (const auto& row : sec.row_results) {
      if (row.row() >= 4 || row.row() == 2) continue;
      EXPECT_GT(row.output_ready_ns(), 0) << "rank " << row.rank() << " row " << row.row();
      EXPECT_GE(row.output_ready_ns(), row.lse_ready_ns());
    }
  }
}

// CUDA events around a phase include the launch gap before its first kernel; the GPU timeline does not. On
// the same run the timeline's attention is never longer than the events' (5% for noise).
TEST(Runner, CuptiPhasesAreNotLongerThanEvents) {
  DCPSIM_REQUIRE_GPU(run_step(config(scenario(2, 8, 1, 128, 128, models::Strategy::kAgRs, {8})), nullptr));
  models::Scenario s =
      scenario(4, 64, 1, 512, 576, models::Strategy::kAgRs, std::vector<std::int64_t>(8, 4096));
  RunConfig events = config(s), cupti = config(s);
  events.reps = cupti.reps = 10;
  cupti.timing = Timing::kCupti;
  const RunResult e = run_step(events, nullptr), t = run_step(cupti, nullptr);
  ASSERT_EQ(e.phases.size(), t.phases.size());
  for (std::size_t i = 0; i < e.phases.size(); ++i) {
    if (e.phases[i].phase != "attention") continue;
    EXPECT_LE(t.phases[i].median_ns, 1.05 * e.phases[i].median_ns);
  }
}

// Programmatic dependent launch: every strategy stays exact when each kernel may start while its predecessor
// drains.
TEST(Runner, PdlIsExactForEveryStrategy) {
  DCPSIM_REQUIRE_GPU(run_step(config(scenario(2, 8, 1, 128, 128, models::Strategy::kAgRs, {8})), nullptr));
  for (auto strategy : {models::Strategy::kAgRs, models::Strategy::kAgAr, models::Strategy::kA2a,
                        models::Strategy::kDirect}) {
    models::Scenario s = scenario(3, 48, 1, 512, 576, strategy, {1500, 0, 64, 3});
    s.launch = models::LaunchMode::kPdl;
    RunConfig c = config(s);
    c.padded_rows = 2;
    SCOPED_TRACE(s.label());
    const RunResult r = run_step(c, nullptr);
    EXPECT_TRUE(r.check.passed) << r.check.summary;
  }
}

TEST(Runner, StepTimingKeepsOnlyTheStep) {
  DCPSIM_REQUIRE_GPU(run_step(config(scenario(2, 8, 1, 128, 128, models::Strategy::kAgRs, {8})), nullptr));
  RunConfig c = config(scenario(2, 16, 1, 512, 576, models::Strategy::kDirect, {300, 20}));
  c.timing = Timing::kStep;
  const RunResult r = run_step(c, nullptr);
  EXPECT_TRUE(r.check.passed) << r.check.summary;
  EXPECT_TRUE(r.phases.empty());
  EXPECT_GT(r.step_median_ns, 0);
  EXPECT_EQ(r.timing, Timing::kStep);
}

// Row-stream end to end in emulation: the ranks run concurrently, attention pushes from its epilogue (one
// split: the split kernel's own; several, or fp32 out: the split combine's) and the owners' combines merge
// beside it. N = 3, 6, 8; B = 17 with empty and one-token shards; H = 96 (MLA head blocks straddle owners;
// GQA groups of 48 and 16); both bases; eager, graph and PDL; padding rows; every row stamped.
TEST(Runner, RowStreamIsExactInEmulation) {
  DCPSIM_REQUIRE_GPU(run_step(config(scenario(2, 8, 1, 128, 128, models::Strategy::kAgRs, {8})), nullptr));
  const std::vector<std::int64_t> b17 = {0, 1, 700, 2, 64, 5, 0, 1500, 33, 3, 9, 400, 1, 0, 96, 250, 12};
  struct Case {
    models::Scenario s;
    int padded;
    bool early = false;  // --row-early-tail
  };
  std::vector<Case> cases;
  cases.push_back({scenario(3, 96, 1, 512, 576, models::Strategy::kRowStream, b17), 2});
  cases.push_back({scenario(6, 96, 1, 512, 576, models::Strategy::kRowStream, b17), 0});
  cases.push_back({scenario(3, 96, 2, 128, 128, models::Strategy::kRowStream, b17), 3});
  cases.push_back(
      {scenario(6, 96, 6, 128, 128, models::Strategy::kRowStream, std::vector<std::int64_t>(17, 40)), 0});
  cases.push_back(
      {scenario(8, 128, 1, 512, 576, models::Strategy::kRowStream, std::vector<std::int64_t>(64, 2048)), 0});
  for (int i = 0; i < 3; ++i) {
    cases.push_back(cases.back());
    cases.back().early = true;
  }
  cases[0].s.launch = models::LaunchMode::kGraph;
  cases[1].s.lse_base = models::LseBase::k2;
  cases[2].s.launch = models::LaunchMode::kPdl;
  cases[2].s.out_dtype = models::DType::kF32;  // the split combine converts and pushes
  cases[3].s.kv_dtype = models::DType::kF16;   // one split of 40 tokens: the split kernel pushes fp16 itself
  cases[3].s.out_dtype = models::DType::kF16;
  cases[3].s.lse_base = models::LseBase::k2;
  cases[3].s.launch = models::LaunchMode::kGraph;
  // B = 64, H = 128: one split, every rank's chunks interleaved; then with the early tail, released by the
  // last chunk, under each launch mode.
  cases[4].s.launch = models::LaunchMode::kGraph;
  cases[5].s.launch = models::LaunchMode::kGraph;
  cases[6].s.launch = models::LaunchMode::kPdl;
  cases[7].s.launch = models::LaunchMode::kEager;
  for (const Case& k : cases) {
    SCOPED_TRACE(k.s.label() + (k.early ? " early tail" : ""));
    RunConfig c = config(k.s);
    c.padded_rows = k.padded;
    c.row_early_tail = k.early;
    traces::TraceCollector sink;
    sink.on_header(measured_header(c.mode, {0}, {"dcpsim", "hw", "run"}));
    const RunResult r = run_step(c, &sink);
    sink.finish();
    EXPECT_TRUE(r.check.passed) << r.check.summary;
    EXPECT_EQ(r.check.mismatched_nonfinite, 0);
    const auto& sec = sink.trace().sections.at(0);
    EXPECT_EQ(sec.scenario.params().at("attention"), "dcpsim");  // auto: the kernel with the push epilogue
    EXPECT_EQ(sec.scenario.params().at("row_stamps"), "on");
    const int rows = k.s.rows() + k.padded;
    ASSERT_EQ(sec.row_results.size(), static_cast<std::size_t>(k.s.dcp * rows));
    for (const auto& row : sec.row_results) {
      if (row.row() >= k.s.rows()) continue;
      EXPECT_GT(row.lse_ready_ns(), 0) << "rank " << row.rank() << " row " << row.row();
      EXPECT_GE(row.output_ready_ns(), row.lse_ready_ns()) << "rank " << row.rank() << " row " << row.row();
    }
    int combines = 0;
    for (const auto& p : r.phases) combines += p.phase == "row_stream_combine";
    EXPECT_EQ(combines, k.s.dcp);
    // The early tail ran where asked for (each of these cases pushes from the split kernel: one split) and
    // its gate counts exactly the producer blocks that began in every step.
    std::map<std::string, double> f(r.figures.begin(), r.figures.end());
    if (k.early) {
      EXPECT_EQ(f["row_stream.early_tail"], 1.0);
      EXPECT_GT(f["row_stream.early_tail.producer_blocks_per_step"], 0.0);
      EXPECT_EQ(f["row_stream.early_tail.producer_blocks_begun_per_step"],
                f["row_stream.early_tail.producer_blocks_per_step"]);
    } else {
      EXPECT_EQ(f.count("row_stream.early_tail.producer_blocks_per_step"), 0u);
    }
  }
}

// A small step for the sanitizers: the split kernel's own push (every shard within one 32-token tile), the
// split combine's push (longer shards), GQA with fp32 out; eager, so a device that runs kernels one at a time
// still finishes (the combines are launched after the producers).
TEST(Runner, RowStreamSmallStepIsExact) {
  DCPSIM_REQUIRE_GPU(
      run_step(config(scenario(2, 8, 1, 128, 128, models::Strategy::kRowStream, {8})), nullptr));
  std::vector<models::Scenario> cases = {
      scenario(3, 96, 1, 512, 576, models::Strategy::kRowStream, {0, 1, 30, 96, 5}),
      scenario(3, 96, 1, 512, 576, models::Strategy::kRowStream, {0, 600, 2, 1000}),
      scenario(3, 48, 2, 128, 128, models::Strategy::kRowStream, {0, 300, 7})};
  cases[1].lse_base = models::LseBase::k2;
  cases[2].out_dtype = models::DType::kF32;
  for (const auto& s : cases) {
    SCOPED_TRACE(s.label());
    RunConfig c = config(s);
    c.warmup = 0;
    c.reps = 2;
    c.padded_rows = 1;
    const RunResult r = run_step(c, nullptr);
    EXPECT_TRUE(r.check.passed) << r.check.summary;
  }
}

// On the GPU timeline the run reports when the rows became ready after the slowest rank's attention.
TEST(Runner, RowStreamReportsRowReadyTimesOnTheTimeline) {
  DCPSIM_REQUIRE_GPU(run_step(config(scenario(2, 8, 1, 128, 128, models::Strategy::kAgRs, {8})), nullptr));
  models::Scenario s =
      scenario(4, 64, 1, 512, 576, models::Strategy::kRowStream, std::vector<std::int64_t>(32, 4096));
  s.launch = models::LaunchMode::kGraph;
  RunConfig c = config(s);
  c.timing = Timing::kAuto;
  const RunResult r = run_step(c, nullptr);
  EXPECT_TRUE(r.check.passed) << r.check.summary;
  if (r.timing != Timing::kCupti) GTEST_SKIP() << "CUPTI unavailable: " << r.timing_note;
  std::map<std::string, double> f(r.figures.begin(), r.figures.end());
  ASSERT_TRUE(f.count("row_stream.output_after_attention_max_us"));
  EXPECT_LE(f["row_stream.output_after_attention_min_us"], f["row_stream.output_after_attention_p50_us"]);
  EXPECT_LE(f["row_stream.output_after_attention_p50_us"], f["row_stream.output_after_attention_max_us"]);
  // Rows, attention and step on one clock: the last row lands near the slowest attention's end, well
  // inside the step.
  EXPECT_LT(std::fabs(f["row_stream.output_after_attention_max_us"]), r.step_median_ns / 1e3);
  EXPECT_LT(std::fabs(f["row_stream.output_after_attention_min_us"]), r.step_median_ns / 1e3);
}

// --row-probe: every item of every owner is recorded once, by the grid and warp that merged it, with its
// stages in order, and summarised per grid; the early tail's items only with --row-early-tail.
TEST(Runner, RowStreamProbeTimesEveryItemInOrder) {
  DCPSIM_REQUIRE_GPU(run_step(config(scenario(2, 8, 1, 128, 128, models::Strategy::kAgRs, {8})), nullptr));
  struct Case {
    int dcp, heads, rows;
    bool early;
  };
  // N = 4, H = 64, B = 20: several splits, so the split combine pushes and no early tail is launched even
  // when asked for; N = 8, H = 128, B = 64: one split, the early tail beside the tail.
  for (const Case& k : {Case{4, 64, 20, true}, Case{8, 128, 64, false}, Case{8, 128, 64, true}}) {
    SCOPED_TRACE("N=" + std::to_string(k.dcp) + (k.early ? " early tail" : ""));
    models::Scenario s = scenario(k.dcp, k.heads, 1, 512, 576, models::Strategy::kRowStream,
                                  std::vector<std::int64_t>(k.rows, 2048));
    s.launch = models::LaunchMode::kGraph;
    RunConfig c = config(s);
    c.timing = Timing::kAuto;
    c.reps = 3;
    c.row_probe = true;
    c.row_early_tail = k.early;
    const RunResult r = run_step(c, nullptr);
    EXPECT_TRUE(r.check.passed) << r.check.summary;
    // J = 16 heads per owner at D = 512: two heads per item, eight items per row.
    ASSERT_EQ(r.row_probe.size(), static_cast<std::size_t>(k.dcp) * k.rows * 8);
    std::set<std::pair<int, int>> seen;
    std::map<std::string, int> by_grid;
    for (const RowProbeItem& it : r.row_probe) {
      EXPECT_TRUE(seen.insert({it.rank, it.item}).second) << "item " << it.item << " of rank " << it.rank;
      EXPECT_EQ(it.row, it.item / 8);
      for (std::size_t i = 1; i < it.t_ns.size(); ++i)
        EXPECT_LE(it.t_ns[i - 1], it.t_ns[i]) << kRowProbeStages[i] << " of item " << it.item;
      EXPECT_TRUE(it.tail || !it.early) << "item " << it.item;  // the early tail is a tail grid
      ++by_grid[row_probe_grid(it)];
    }
    std::map<std::string, double> f(r.figures.begin(), r.figures.end());
    const bool early = k.early && k.dcp == 8;
    EXPECT_EQ(f["row_stream.early_tail"], early ? 1.0 : 0.0);
    if (!early) {
      EXPECT_EQ(by_grid.count("early"), 0u);
    }
    for (const auto& [grid, n] : by_grid) {
      EXPECT_EQ(f["row_stream.probe." + grid + ".items"], n);
      EXPECT_LE(f["row_stream.probe." + grid + ".first_claim_us"],
                f["row_stream.probe." + grid + ".last_stored_us"]);
      EXPECT_LE(f["row_stream.probe." + grid + ".lse_p50_us"], f["row_stream.probe." + grid + ".lse_max_us"]);
    }
    // Without the flag nothing is recorded.
    c.row_probe = false;
    EXPECT_TRUE(run_step(c, nullptr).row_probe.empty());
  }
}

// FlashInfer's kernels have no epilogue to push rows from: refused in one line, before any device work.
TEST(Runner, RowStreamRefusesFlashInferAttention) {
  DCPSIM_REQUIRE_GPU(run_step(config(scenario(2, 8, 1, 128, 128, models::Strategy::kAgRs, {8})), nullptr));
  RunConfig c = config(scenario(3, 96, 1, 512, 576, models::Strategy::kRowStream, {0, 1, 300, 2000, 7}));
  c.attention = AttentionImpl::kFlashInfer;
  try {
    run_step(c, nullptr);
    FAIL() << "row-stream ran on FlashInfer's attention";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--attention dcpsim"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dcpsim::hw
