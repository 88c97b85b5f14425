// Replay of request traces: per-strategy timing of every step on one shared schedule clocked by whole-model
// steps, the reuse of timed compositions (exact, and bucketed within half a KV block), worker processes, the
// statistics, the CSVs and the summary JSON, and (with SimGrid) agreement with the simulator run step by
// step.
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "dcpsim/analysis/replay.h"
#include "dcpsim/error.h"
#include "dcpsim/models/sharding.h"
#if DCPSIM_WITH_SIMGRID
#include "dcpsim/analysis/step_figures.h"
#include "dcpsim/models/profile.h"
#include "dcpsim/sim/simulator.h"
#endif

namespace dcpsim::analysis {
namespace {

namespace fs = std::filesystem;
using models::Strategy;
using ::testing::HasSubstr;

// Analytic: the step reads rank 0's KV at 1 ns per token plus 1 ms; the merge costs 10 µs per rank for ag-rs
// and 5 µs per rank for a2a; communication is half the merge.
StepTiming analytic(const models::Scenario& s) {
  std::int64_t tokens = 0;
  for (auto c : s.contexts) tokens += models::local_length(c, 0, s.dcp, s.interleave);
  const double merge = (s.strategy == Strategy::kA2a ? 5e-6 : 10e-6) * s.dcp;
  return {1e-3 + 1e-9 * static_cast<double>(tokens) + merge, merge, merge / 2};
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

TEST(Replay, EveryStrategyTimedOnTheSameScheduleClockedByTheFirstsWholeStep) {
  const std::vector<Request> requests = {{0, 0, 4000, 3}, {1, 0, 1000, 2}};
  ReplayConfig c = config({Strategy::kAgRs, Strategy::kA2a}, 10);
  c.non_attention = [](int rows) { return 1e-4 * rows; };  // 100 µs per row per decode step
  const ReplayResult r = replay_requests(requests, c, analytic);
  ASSERT_EQ(r.steps.size(), 3u);
  ASSERT_EQ(r.summaries.size(), 2u);
  // Step 0: contexts {4000, 1000} -> rank 0 holds 1000 + 250 tokens.
  const double step0 = 1e-3 + 1250e-9 + 40e-6;
  EXPECT_DOUBLE_EQ(r.timing(r.steps[0], 0).step_s, step0);
  EXPECT_DOUBLE_EQ(r.timing(r.steps[0], 0).merge_s, 40e-6);
  EXPECT_DOUBLE_EQ(r.timing(r.steps[0], 1).merge_s, 20e-6);
  EXPECT_DOUBLE_EQ(r.timing(r.steps[0], 1).comm_s, 10e-6);
  EXPECT_EQ(r.steps[0].sum_context, 5000);
  EXPECT_EQ(r.steps[0].max_context, 4000);
  EXPECT_EQ(r.steps[0].rows, 2);
  EXPECT_EQ(r.steps[0].admitted, 2);
  EXPECT_EQ(r.steps[0].kv_tokens_max, 1001 + 251);  // peaks 4002 and 1001 tokens, sharded over 4
  EXPECT_DOUBLE_EQ(r.steps[0].non_attention_s, 2e-4);
  // The clock advances by the ag-rs decode step: 10 layers × step0 + the non-attention time of 2 rows.
  EXPECT_DOUBLE_EQ(r.steps[1].time_s, 10 * step0 + 2e-4);
  EXPECT_DOUBLE_EQ(r.decode_step_s(r.steps[0], 0), 10 * step0 + 2e-4);
  EXPECT_EQ(r.steps[1].sum_context, 5002);
  EXPECT_EQ(r.steps[2].rows, 1);  // request 1 left after its 2 tokens
  EXPECT_EQ(r.steps[2].max_context, 4002);
  EXPECT_EQ(r.batcher.finished, 2);
  EXPECT_DOUBLE_EQ(r.summaries[0].layer_merge.p50, 40e-6);
  EXPECT_DOUBLE_EQ(r.summaries[1].layer_merge.p99, 20e-6);
  double merge = 0, step = 0, comm = 0, decode = 0;
  for (const auto& s : r.steps) {
    merge += r.timing(s, 1).merge_s;
    comm += r.timing(s, 1).comm_s;
    step += r.timing(s, 1).step_s;
    decode += r.decode_step_s(s, 1);
  }
  EXPECT_DOUBLE_EQ(r.summaries[1].merge_share, merge / step);
  EXPECT_DOUBLE_EQ(r.summaries[1].comm_share, comm / step);
  EXPECT_DOUBLE_EQ(r.summaries[1].attention_share, 10 * step / decode);
  EXPECT_THAT(replay_summary(r), HasSubstr("a2a"));
  EXPECT_THAT(replay_summary(r), HasSubstr("per decode step (10 layers + non-attention)"));
}

TEST(Replay, ExactReuseAnswersRepeatedBatchesWithTheSameTimings) {
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
  EXPECT_EQ(with.compositions, 3);
  c.memoise = false;
  const ReplayResult without = replay_requests(requests, c, analytic);
  EXPECT_EQ(without.simulations, 18);
  ASSERT_EQ(with.steps.size(), without.steps.size());
  for (std::size_t i = 0; i < with.steps.size(); ++i) {
    EXPECT_EQ(with.steps[i].time_s, without.steps[i].time_s);
    for (std::size_t k = 0; k < 2; ++k) {
      EXPECT_EQ(with.timing(with.steps[i], k).step_s, without.timing(without.steps[i], k).step_s);
      EXPECT_EQ(with.timing(with.steps[i], k).merge_s, without.timing(without.steps[i], k).merge_s);
    }
  }
}

TEST(Replay, BucketedStepsAreTimedWithinHalfABlockOfTheirContexts) {
  // Two requests together for 10 steps, then one alone: w = 4 times each batch once per 4 of its steps.
  const std::vector<Request> requests = {{0, 0, 4001, 14}, {1, 0, 2003, 10}};
  std::vector<std::vector<std::int64_t>> asked;
  const ScenarioTiming recorded = [&](const models::Scenario& s) {
    if (s.strategy == Strategy::kAgRs) asked.push_back(s.contexts);
    std::int64_t tokens = 0;
    for (auto ctx : s.contexts) tokens += ctx;
    return StepTiming{1e-3 + 1e-9 * double(tokens), 1e-5, 0};
  };
  ReplayConfig c = config({Strategy::kAgRs, Strategy::kAgAr});
  c.bucket_tokens = 4;
  const ReplayResult r = replay_requests(requests, c, recorded);
  ASSERT_EQ(r.steps.size(), 14u);
  EXPECT_EQ(r.compositions, 3 + 1);  // steps 0-3, 4-7, 8-9 of the pair; 10-13 alone
  ASSERT_EQ(asked.size(), 4u);
  EXPECT_EQ(asked[0], (std::vector<std::int64_t>{4001 + 1, 2003 + 1}));  // the middle of steps 0..3
  EXPECT_EQ(asked[2], (std::vector<std::int64_t>{4001 + 9, 2003 + 9}));  // steps 8..11 (the pair ends at 9)
  EXPECT_EQ(asked[3], (std::vector<std::int64_t>{4001 + 10 + 1}));
  for (const ReplayStep& s : r.steps) {
    // Every row within w/2 = 2 tokens: the analytic step is off by at most 2 ns per row.
    const double exact = 1e-3 + 1e-9 * double(s.sum_context);
    EXPECT_LE(std::abs(r.timing(s, 0).step_s - exact), 2e-9 * s.rows + 1e-15) << "step " << s.step;
  }
  // The clock follows the bucketed timing.
  EXPECT_DOUBLE_EQ(r.steps[1].time_s, r.timing(r.steps[0], 0).step_s);
  EXPECT_THAT(replay_summary(r), HasSubstr("within 2 tokens"));
}

TEST(Replay, BucketingErrorIsMeasuredOnCompositionsTimedExactlyToo) {
  const std::vector<Request> requests = {{0, 0, 1000, 12}};
  const ScenarioTiming linear = [](const models::Scenario& s) {
    return StepTiming{1e-6 * double(s.contexts.front()), 0, 0};
  };
  ReplayConfig c = config({Strategy::kAgRs});
  c.bucket_tokens = 4;
  c.check_every = 1;
  c.non_attention = [](int) { return 1e-3; };
  const ReplayResult r = replay_requests(requests, c, linear);
  EXPECT_EQ(r.compositions, 3);
  EXPECT_EQ(r.simulations, 6);  // each composition also at the exact contexts of its first step
  EXPECT_EQ(r.bucketing.samples, 3);
  // First steps of the windows: contexts 1000, 1004, 1008 against 1001, 1005, 1009.
  const double worst = (1.0 / 1000.0);
  EXPECT_NEAR(r.bucketing.layer_step_max, worst, 1e-12);
  EXPECT_NEAR(r.bucketing.decode_step_max, 1e-6 / (1e-3 + 1e-3), 1e-12);
  EXPECT_THAT(replay_summary(r), HasSubstr("bucketing error on 3 compositions"));
}

TEST(Replay, WorkerProcessesGiveTheSameResultAndPassErrorsOn) {
  std::vector<Request> requests;
  for (int i = 0; i < 40; ++i) requests.push_back({i, i * 20'000'000LL, 500 + 37 * i, 5 + i % 7});
  ReplayConfig c = config({Strategy::kAgRs, Strategy::kAgAr, Strategy::kA2a});
  c.bucket_tokens = 8;
  const ReplayResult one = replay_requests(requests, c, analytic);
  c.jobs = 3;
  const ReplayResult three = replay_requests(requests, c, analytic);
  EXPECT_EQ(three.jobs, 3);
  ASSERT_EQ(one.steps.size(), three.steps.size());
  ASSERT_EQ(one.timings.size(), three.timings.size());
  for (std::size_t i = 0; i < one.timings.size(); ++i) {
    EXPECT_EQ(one.timings[i].step_s, three.timings[i].step_s);
    EXPECT_EQ(one.timings[i].merge_s, three.timings[i].merge_s);
  }
  for (std::size_t i = 0; i < one.steps.size(); ++i) EXPECT_EQ(one.steps[i].time_s, three.steps[i].time_s);
  const ScenarioTiming a2a_fails = [](const models::Scenario& s) {
    if (s.strategy == Strategy::kA2a) throw InputError("a2a cannot run this");
    return analytic(s);
  };
  EXPECT_THROW(replay_requests(requests, c, a2a_fails), InputError);
}

TEST(Replay, PercentilesAreNearestRankOverAllSteps) {
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);
  EXPECT_EQ(percentile(v, 50), 50);
  EXPECT_EQ(percentile(v, 99), 99);
  EXPECT_EQ(percentile(v, 100), 100);
  EXPECT_EQ(percentile({7.0}, 99), 7.0);
  EXPECT_EQ(percentile({1, 2, 3}, 50), 2);
  EXPECT_EQ(percentile({}, 50), 0);

  std::vector<Request> requests;
  for (int i = 0; i < 30; ++i) requests.push_back({i, i * 3'000'000LL, 100 + 450 * i, 3 + i % 5});
  ReplayConfig c = config({Strategy::kAgRs, Strategy::kA2a}, 3);
  c.non_attention = [](int rows) { return 2e-5 * rows; };
  const ReplayResult r = replay_requests(requests, c, analytic);
  for (std::size_t k = 0; k < 2; ++k) {
    std::vector<double> decode, merge;
    double sum = 0;
    for (const ReplayStep& s : r.steps) {
      decode.push_back(r.decode_step_s(s, k));
      merge.push_back(r.timing(s, k).merge_s);
      sum += r.decode_step_s(s, k);
    }
    const StrategySummary& s = r.summaries[k];
    EXPECT_EQ(s.decode_step.p10, percentile(decode, 10));
    EXPECT_EQ(s.decode_step.p50, percentile(decode, 50));
    EXPECT_EQ(s.decode_step.p90, percentile(decode, 90));
    EXPECT_EQ(s.decode_step.p99, percentile(decode, 99));
    EXPECT_EQ(s.decode_step.max, percentile(decode, 100));
    EXPECT_NEAR(s.decode_step.mean, sum / double(decode.size()), 1e-15);
    EXPECT_EQ(s.layer_merge.p50, percentile(merge, 50));
  }
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

TEST(Replay, StepsCdfAndSummaryFilesSayWhatIsPerLayerAndPerStep) {
  const fs::path dir = fs::temp_directory_path() / ("dcpsim_replay_csv_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  ReplayConfig c = config({Strategy::kAgRs, Strategy::kA2a}, 2);
  c.non_attention = [](int) { return 5e-6; };
  const ReplayResult r = replay_requests({{0, 0, 100, 2}}, c, analytic);
  write_steps_csv(r, dir / "steps.csv");
  std::ifstream in(dir / "steps.csv");
  std::string header, row0, row1, extra;
  std::getline(in, header);
  std::getline(in, row0);
  std::getline(in, row1);
  EXPECT_FALSE(std::getline(in, extra));
  EXPECT_EQ(header,
            "step,time_s,rows,admitted,sum_context,max_context,kv_tokens_max,non_attention_us,step_us_ag-rs,"
            "layer_step_us_ag-rs,layer_merge_us_ag-rs,step_us_a2a,layer_step_us_a2a,layer_merge_us_a2a");
  // Rank 0 holds 25 of 100 tokens: the ag-rs layer takes 1000.025 + 40 us, the decode step 2 of them + 5 us.
  EXPECT_EQ(row0, "0,0.000000000,1,1,100,100,26,5.000,2085.050,1040.025,40.000,2045.050,1020.025,20.000");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
  EXPECT_THROW(write_steps_csv(r, dir / "missing" / "steps.csv"), InputError);
  fs::remove_all(dir);

  const std::string cdf = cdf_csv(r);
  EXPECT_EQ(std::count(cdf.begin(), cdf.end(), '\n'), 102);
  EXPECT_THAT(cdf, HasSubstr("\n0.00,2085.050,1040.025,40.000,"));

  const auto j = nlohmann::json::parse(summary_json(r, R"({"trace": "t.jsonl"})", 4));
  // The one summary shape (summary_json.h): a list of self-describing strategy entries.
  EXPECT_EQ(j["schema"], "dcpsim-summary/1");
  EXPECT_EQ(j["command"], "replay");
  EXPECT_EQ(j["trace"], "t.jsonl");
  EXPECT_EQ(j["layers"], 2);
  ASSERT_EQ(j["strategies"].size(), 2u);
  EXPECT_EQ(j["strategies"][0]["strategy"], "ag-rs");
  EXPECT_EQ(j["strategies"][1]["strategy"], "a2a");
  for (const auto& e : j["strategies"]) {
    EXPECT_EQ(e["tier"], "production");
    EXPECT_TRUE(e["units"].contains("decode_step_us"));
    EXPECT_TRUE(e["layout"].contains("tp"));
    EXPECT_EQ(e["cdf"]["decode_step_us"].size(), 101u);
    EXPECT_EQ(e["bands"]["decode_step_us"]["p50"].size(), 4u);
  }
  EXPECT_DOUBLE_EQ(j["strategies"][1]["percentiles"]["layer_merge_us"]["p50"].get<double>(), 20.0);
  EXPECT_EQ(j["cdf_quantiles"].size(), 101u);
  EXPECT_EQ(j["bands"]["time_s"].size(), 4u);
  EXPECT_EQ(j["fastest"]["strategy"], "a2a");  // the shorter p50 decode step
  int steps = 0;
  for (const auto& n : j["bands"]["steps"]) steps += n.get<int>();
  EXPECT_EQ(steps, 2);
}

TEST(Replay, RejectsBadStrategiesLayersBucketsJobsAndTimings) {
  EXPECT_THROW(replay_requests({}, config({}), analytic), InputError);
  EXPECT_THROW(replay_requests({}, config({Strategy::kAgRs}, 0), analytic), InputError);
  ReplayConfig c = config({Strategy::kAgAr, Strategy::kA2a});
  c.batcher.geometry.dcp = 3;  // 128 heads cannot be scattered over 3 ranks by a2a
  EXPECT_THROW(replay_requests({}, c, analytic), InputError);
  ReplayConfig bucket = config({Strategy::kAgRs});
  bucket.bucket_tokens = 0;
  EXPECT_THROW(replay_requests({}, bucket, analytic), InputError);
  ReplayConfig jobs = config({Strategy::kAgRs});
  jobs.jobs = 0;
  EXPECT_THROW(replay_requests({}, jobs, analytic), InputError);
  const auto merge_too_long = [](const models::Scenario&) { return StepTiming{1e-3, 2e-3, 0}; };
  EXPECT_THROW(replay_requests({{0, 0, 10, 1}}, config({Strategy::kAgRs}), merge_too_long), RuntimeError);
  const auto nan_step = [](const models::Scenario&) { return StepTiming{std::nan(""), 0, 0}; };
  EXPECT_THROW(replay_requests({{0, 0, 10, 1}}, config({Strategy::kAgRs}), nan_step), RuntimeError);
  ReplayConfig bad_rest = config({Strategy::kAgRs});
  bad_rest.non_attention = [](int) { return -1.0; };
  EXPECT_THROW(replay_requests({{0, 0, 10, 1}}, bad_rest, analytic), RuntimeError);
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
  c.jobs = 2;
  const sim::Simulator simulator(models::load_profile("h200-sxm"));
  simulator.prepare();
  const ScenarioTiming timing = [&](const models::Scenario& s) { return step_timing(simulator.run(s)); };
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
  EXPECT_EQ(r.timing(r.steps[3], 1).step_s, direct.step_latency_s);
  EXPECT_EQ(r.timing(r.steps[3], 1).merge_s, direct.merge_latency_s);
  EXPECT_EQ(r.timing(r.steps[3], 1).comm_s, communication_s(direct));
  EXPECT_GT(r.timing(r.steps[3], 0).merge_s, 0.0);
  EXPECT_GT(r.timing(r.steps[3], 0).comm_s, r.timing(r.steps[3], 0).merge_s);  // the query all-gather too
  EXPECT_DOUBLE_EQ(r.steps[1].time_s, 61 * r.timing(r.steps[0], 0).step_s);
}
#endif

}  // namespace
}  // namespace dcpsim::analysis
