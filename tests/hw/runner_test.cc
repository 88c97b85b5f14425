// `hw run` end to end in emulation: every strategy, N not a power of two, GQA and MLA, eager and graph,
// padding rows and row stamps; the step's own reference check must pass, and the trace section must say what
// ran.
#include <gtest/gtest.h>

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
  return c;
}

TEST(Runner, EveryStrategyIsExactInEmulation) {
  DCPSIM_REQUIRE_GPU(run_step(config(scenario(2, 8, 1, 128, 128, models::Strategy::kAgRs, {8})), nullptr));
  const std::vector<models::Strategy> strategies = {models::Strategy::kAgRs, models::Strategy::kAgAr,
                                                    models::Strategy::kA2a, models::Strategy::kDirect};
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

// Row stamps on both paths of the correction kernel (one vector per thread for small calls, streaming blocks
// for large ones): every row of every rank is stamped, its LSE no later than its output.
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
  EXPECT_THROW(run_step(config(scenario(2, 8, 1, 128, 128, models::Strategy::kRowStream, {8})), nullptr),
               InputError);
  EXPECT_THROW(run_step(config(scenario(2, 8, 1, 64, 64, models::Strategy::kAgRs, {8})), nullptr),
               InputError);
  models::Scenario pdl = scenario(2, 8, 1, 128, 128, models::Strategy::kAgRs, {8});
  pdl.launch = models::LaunchMode::kPdl;
  EXPECT_THROW(run_step(config(pdl), nullptr), InputError);
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
