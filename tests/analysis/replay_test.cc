// Replay of request traces: per-strategy timing of every step on one shared schedule, the exact memo, the
// summary statistics, the CSV, and (with SimGrid) agreement with the simulator run step by step.
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "dcpsim/analysis/replay.h"
#include "dcpsim/error.h"
#include "dcpsim/models/sharding.h"
#if DCPSIM_WITH_SIMGRID
#include "dcpsim/models/profile.h"
#include "dcpsim/sim/simulator.h"
#endif

namespace dcpsim::analysis {
namespace {

namespace fs = std::filesystem;
using models::Strategy;
using ::testing::HasSubstr;

// Analytic: the step reads rank 0's KV at 1 ns per token plus 1 ms; the merge costs 10 µs per rank for ag-rs
// and 5 µs per rank for a2a.
StepTiming analytic(const models::Scenario& s) {
  std::int64_t tokens = 0;
  for (auto c : s.contexts) tokens += models::local_length(c, 0, s.dcp, s.interleave);
  const double merge = (s.strategy == Strategy::kA2a ? 5e-6 : 10e-6) * s.dcp;
  return {1e-3 + 1e-9 * static_cast<double>(tokens) + merge, merge};
}

ReplayConfig config(std::vector<Strategy> strategies, int layers = 1) {
  ReplayConfig c;
  c.batcher.geometry.dcp = 4;
  c.batcher.max_rows = 8;
  c.batcher.kv_capacity_tokens = 1 << 20;
  c.strategies = std::move(strategies);
  c.layers = layers;
  return c;
}

TEST(Replay, EveryStrategyTimedOnTheSameScheduleClockedByTheFirst) {
  const std::vector<Request> requests = {{0, 0, 4000, 3}, {1, 0, 1000, 2}};
  const ReplayResult r = replay_requests(requests, config({Strategy::kAgRs, Strategy::kA2a}, 10), analytic);
  ASSERT_EQ(r.steps.size(), 3u);
  ASSERT_EQ(r.summaries.size(), 2u);
  // Step 0: contexts {4000, 1000} -> rank 0 holds 1000 + 250 tokens.
  const double step0 = 1e-3 + 1250e-9 + 40e-6;
  EXPECT_DOUBLE_EQ(r.steps[0].timing[0].step_s, step0);
  EXPECT_DOUBLE_EQ(r.steps[0].timing[0].merge_s, 40e-6);
  EXPECT_DOUBLE_EQ(r.steps[0].timing[1].merge_s, 20e-6);
  EXPECT_EQ(r.steps[0].sum_context, 5000);
  EXPECT_EQ(r.steps[0].max_context, 4000);
  EXPECT_EQ(r.steps[0].rows, 2);
  EXPECT_EQ(r.steps[0].admitted, 2);
  EXPECT_EQ(r.steps[0].kv_tokens_max, 1001 + 251);  // peaks 4002 and 1001 tokens, sharded over 4
  // The clock advances by layers × the ag-rs step: 10 × step0.
  EXPECT_DOUBLE_EQ(r.steps[1].time_s, 10 * step0);
  EXPECT_EQ(r.steps[1].sum_context, 5002);
  EXPECT_EQ(r.steps[2].rows, 1);  // request 1 left after its 2 tokens
  EXPECT_EQ(r.steps[2].max_context, 4002);
  EXPECT_EQ(r.batcher.finished, 2);
  EXPECT_DOUBLE_EQ(r.summaries[0].merge_p50_s, 40e-6);
  EXPECT_DOUBLE_EQ(r.summaries[1].merge_p99_s, 20e-6);
  double merge = 0, step = 0;
  for (const auto& s : r.steps) {
    merge += s.timing[1].merge_s;
    step += s.timing[1].step_s;
  }
  EXPECT_DOUBLE_EQ(r.summaries[1].merge_share, merge / step);
  EXPECT_THAT(replay_summary(r), HasSubstr("a2a"));
}

TEST(Replay, MemoIsExactAndAnswersRepeatedBatches) {
  // Three identical requests, each alone in the system: the same three batches recur.
  const std::vector<Request> requests = {
      {0, 0, 3000, 3}, {1, 1'000'000'000, 3000, 3}, {2, 2'000'000'000, 3000, 3}};
  int calls = 0;
  const ScenarioTiming counted = [&](const models::Scenario& s) {
    ++calls;
    return analytic(s);
  };
  ReplayConfig c = config({Strategy::kAgRs, Strategy::kDirect});
  const ReplayResult with = replay_requests(requests, c, counted);
  EXPECT_EQ(calls, 6);  // 3 distinct batches × 2 strategies
  EXPECT_EQ(with.simulations, 6);
  EXPECT_EQ(with.memo_hits, 12);
  c.memoise = false;
  const ReplayResult without = replay_requests(requests, c, analytic);
  EXPECT_EQ(without.simulations, 18);
  ASSERT_EQ(with.steps.size(), without.steps.size());
  for (std::size_t i = 0; i < with.steps.size(); ++i) {
    EXPECT_EQ(with.steps[i].time_s, without.steps[i].time_s);
    for (std::size_t k = 0; k < 2; ++k) {
      EXPECT_EQ(with.steps[i].timing[k].step_s, without.steps[i].timing[k].step_s);
      EXPECT_EQ(with.steps[i].timing[k].merge_s, without.steps[i].timing[k].merge_s);
    }
  }
}

TEST(Replay, PercentileIsNearestRank) {
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);
  EXPECT_EQ(percentile(v, 50), 50);
  EXPECT_EQ(percentile(v, 99), 99);
  EXPECT_EQ(percentile(v, 100), 100);
  EXPECT_EQ(percentile({7.0}, 99), 7.0);
  EXPECT_EQ(percentile({1, 2, 3}, 50), 2);
  EXPECT_EQ(percentile({}, 50), 0);
}

TEST(Replay, KvCapacityInTokensCountsEveryLayer) {
  models::Scenario mla;  // 576-wide latent, one KV head, bf16: 1152 B per token per layer
  EXPECT_EQ(kv_capacity_tokens(mla, 57e9, 61), static_cast<std::int64_t>(57e9 / (1152.0 * 61)));
  EXPECT_EQ(kv_capacity_tokens(mla, 1152.0 * 61 * 1000, 61), 1000);
  models::Scenario gqa = mla;
  gqa.heads = 32;
  gqa.kv_heads = 8;
  gqa.head_dim = gqa.qk_dim = 128;  // K and V: 8 heads × 256 elements × 2 B = 4096 B per token per layer
  EXPECT_EQ(kv_capacity_tokens(gqa, 4096.0 * 32 * 10, 32), 10);
  EXPECT_THROW(kv_capacity_tokens(mla, 100.0, 61), InputError);
  EXPECT_THROW(kv_capacity_tokens(mla, 1e9, 0), InputError);
}

TEST(Replay, StepsCsvHasOneRowPerStepAndNoTemporaryLeft) {
  const fs::path dir = fs::temp_directory_path() / ("dcpsim_replay_csv_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const ReplayResult r =
      replay_requests({{0, 0, 100, 2}}, config({Strategy::kAgRs, Strategy::kA2a}), analytic);
  write_steps_csv(r, dir / "steps.csv");
  std::ifstream in(dir / "steps.csv");
  std::string header, row0, row1, extra;
  std::getline(in, header);
  std::getline(in, row0);
  std::getline(in, row1);
  EXPECT_FALSE(std::getline(in, extra));
  EXPECT_EQ(header,
            "step,time_s,rows,admitted,sum_context,max_context,kv_tokens_max,step_latency_us_ag-rs,"
            "merge_latency_us_ag-rs,step_latency_us_a2a,merge_latency_us_a2a");
  std::ostringstream expected;
  expected.precision(12);
  expected << "0,0,1,1,100,100,26," << (1e-3 + 25e-9 + 40e-6) * 1e6 << ",40," << (1e-3 + 25e-9 + 20e-6) * 1e6
           << ",20";
  EXPECT_EQ(row0, expected.str());
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
  EXPECT_THROW(write_steps_csv(r, dir / "missing" / "steps.csv"), InputError);
  fs::remove_all(dir);
}

TEST(Replay, RejectsBadStrategiesLayersAndTimings) {
  EXPECT_THROW(replay_requests({}, config({}), analytic), InputError);
  EXPECT_THROW(replay_requests({}, config({Strategy::kAgRs}, 0), analytic), InputError);
  ReplayConfig c = config({Strategy::kAgAr, Strategy::kA2a});
  c.batcher.geometry.dcp = 3;  // 128 heads cannot be scattered over 3 ranks by a2a
  EXPECT_THROW(replay_requests({}, c, analytic), InputError);
  const auto merge_too_long = [](const models::Scenario&) { return StepTiming{1e-3, 2e-3}; };
  EXPECT_THROW(replay_requests({{0, 0, 10, 1}}, config({Strategy::kAgRs}), merge_too_long), RuntimeError);
  const auto nan_step = [](const models::Scenario&) { return StepTiming{std::nan(""), 0}; };
  EXPECT_THROW(replay_requests({{0, 0, 10, 1}}, config({Strategy::kAgRs}), nan_step), RuntimeError);
}

#if DCPSIM_WITH_SIMGRID
TEST(Replay, SimulatedStepsMatchTheSimulatorRunOnTheirOwn) {
  const auto requests =
      read_requests(fs::path(DCPSIM_SOURCE_DIR) / "tests/data/mooncake_conversation_trace.head20.jsonl");
  ReplayConfig c = config({Strategy::kAgRs, Strategy::kDirect}, 61);
  c.batcher.geometry.dcp = 8;
  c.batcher.max_rows = 256;
  c.batcher.max_steps = 4;
  c.batcher.kv_capacity_tokens = kv_capacity_tokens(c.batcher.geometry, 57e9, 61);
  const sim::Simulator simulator(models::load_profile("h200-sxm"));
  const ScenarioTiming timing = [&](const models::Scenario& s) {
    const sim::StepResult r = simulator.run(s);
    return StepTiming{r.step_latency_s, r.merge_latency_s};
  };
  const ReplayResult r = replay_requests(requests, c, timing);
  ASSERT_EQ(r.steps.size(), 4u);
  EXPECT_EQ(r.steps[0].rows, 10);  // the ten requests at time 0; the next ten arrive at 3 s
  EXPECT_EQ(r.steps[3].rows, 9);   // request 4 generated its 3 tokens
  models::Scenario last = c.batcher.geometry;
  last.strategy = Strategy::kDirect;
  for (std::size_t i = 0; i < 10; ++i) {
    if (requests[i].output_tokens > 3) last.contexts.push_back(requests[i].input_tokens + 3);
  }
  const sim::StepResult direct = simulator.run(last);
  EXPECT_EQ(r.steps[3].timing[1].step_s, direct.step_latency_s);
  EXPECT_EQ(r.steps[3].timing[1].merge_s, direct.merge_latency_s);
  EXPECT_GT(r.steps[3].timing[0].merge_s, 0.0);
  EXPECT_DOUBLE_EQ(r.steps[1].time_s, 61 * r.steps[0].timing[0].step_s);
}
#endif

}  // namespace
}  // namespace dcpsim::analysis
