// Continuous batching: a schedule computed by hand, and the invariants (FCFS, capacity, max rows, exact
// output lengths, contexts growing one token per step) over a slice of the Azure code trace.
#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "dcpsim/analysis/batcher.h"
#include "dcpsim/error.h"
#include "dcpsim/models/sharding.h"

namespace dcpsim::analysis {
namespace {

constexpr std::int64_t kMs = 1'000'000;

BatcherConfig config(int dcp, int max_rows, std::int64_t capacity) {
  BatcherConfig c;
  c.geometry.dcp = dcp;
  c.geometry.heads = 128;
  c.max_rows = max_rows;
  c.kv_capacity_tokens = capacity;
  return c;
}

struct Seen {
  std::int64_t index;
  double start_s;
  std::vector<std::int64_t> ids;
  std::vector<std::int64_t> contexts;
  std::vector<std::int64_t> kv;
  std::int64_t admitted;
};

std::vector<Seen> schedule(std::vector<Request> requests, const BatcherConfig& c, const StepLatency& latency,
                           BatcherStats* stats = nullptr) {
  std::vector<Seen> seen;
  const BatcherStats s = run_batcher(std::move(requests), c, latency, [&](const Step& step, double) {
    seen.push_back({step.index, step.start_s, step.request_ids, step.scenario.contexts,
                    step.kv_tokens_per_rank, step.admitted});
  });
  if (stats != nullptr) *stats = s;
  return seen;
}

TEST(Batcher, HandComputedSchedule) {
  // DCP 2, interleave 1, 6 tokens per rank. Peak KV (input + output - 1) sharded by SPEC's local lengths:
  // A 4+2-1=5 -> [3,2]; B 3+3-1=5 -> [3,2]; C 2+1-1=2 -> [1,1]; D 1 -> [1,0]; E 20 -> [10,10] never fits.
  const std::vector<Request> requests = {
      {0, 0, 4, 2},             // A
      {1, 0, 3, 3},             // B
      {2, 500 * kMs, 2, 1},     // C: arrives during step 0, waits for rank 0's room until A leaves
      {3, 10'000 * kMs, 1, 1},  // D: arrives after an idle gap
      {4, 200 * kMs, 20, 1},    // E: rejected, and does not block C behind it
  };
  BatcherStats stats;
  // Analytic step time: 0.25 s per row.
  const auto seen = schedule(
      requests, config(2, 3, 6), [](const models::Scenario& s) { return 0.25 * s.rows(); }, &stats);
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_DOUBLE_EQ(seen[0].start_s, 0.0);
  EXPECT_EQ(seen[0].ids, (std::vector<std::int64_t>{0, 1}));
  EXPECT_EQ(seen[0].contexts, (std::vector<std::int64_t>{4, 3}));
  EXPECT_EQ(seen[0].kv, (std::vector<std::int64_t>{6, 4}));
  EXPECT_EQ(seen[0].admitted, 2);

  EXPECT_DOUBLE_EQ(seen[1].start_s, 0.5);
  EXPECT_EQ(seen[1].ids, (std::vector<std::int64_t>{0, 1}));  // C has arrived but rank 0 is full
  EXPECT_EQ(seen[1].contexts, (std::vector<std::int64_t>{5, 4}));
  EXPECT_EQ(seen[1].admitted, 0);

  EXPECT_DOUBLE_EQ(seen[2].start_s, 1.0);  // A left after its 2 tokens
  EXPECT_EQ(seen[2].ids, (std::vector<std::int64_t>{1, 2}));
  EXPECT_EQ(seen[2].contexts, (std::vector<std::int64_t>{5, 2}));
  EXPECT_EQ(seen[2].kv, (std::vector<std::int64_t>{4, 3}));

  EXPECT_DOUBLE_EQ(seen[3].start_s, 10.0);  // idle until D arrives
  EXPECT_EQ(seen[3].ids, (std::vector<std::int64_t>{3}));
  EXPECT_EQ(seen[3].contexts, (std::vector<std::int64_t>{1}));
  EXPECT_EQ(seen[3].kv, (std::vector<std::int64_t>{1, 0}));

  EXPECT_EQ(stats.steps, 4);
  EXPECT_EQ(stats.requests, 5);
  EXPECT_EQ(stats.admitted, 4);
  EXPECT_EQ(stats.finished, 4);
  EXPECT_EQ(stats.rejected, 1);
  EXPECT_EQ(stats.unfinished, 0);
  EXPECT_EQ(stats.peak_rows, 2);
  EXPECT_EQ(stats.peak_kv_tokens, 6);
  EXPECT_DOUBLE_EQ(stats.end_s, 10.25);
}

TEST(Batcher, InvariantsOnTheAzureCodeTrace) {
  std::vector<Request> requests = read_requests(std::filesystem::path(DCPSIM_SOURCE_DIR) /
                                                "tests/data/AzureLLMInferenceTrace_code.csv.gz");
  requests.resize(400);
  for (auto& r : requests) r.arrival_ns /= 50;  // a 50x busier service, so that rows and KV both run out
  BatcherConfig c = config(4, 24, 15000);
  c.geometry.interleave = 16;
  // Analytic: fixed cost plus a term linear in the KV read, as a memory-bound decode step behaves.
  const auto latency = [](const models::Scenario& s) {
    std::int64_t tokens = 0;
    for (auto t : s.contexts) tokens += t;
    return 2e-3 + 1e-9 * static_cast<double>(tokens);
  };
  BatcherStats stats;
  const auto seen = schedule(requests, c, latency, &stats);
  ASSERT_FALSE(seen.empty());

  std::map<std::int64_t, std::int64_t> last_context;
  std::map<std::int64_t, std::int64_t> last_step;
  std::map<std::int64_t, std::int64_t> steps_of;
  std::int64_t last_admitted = -1;
  double last_start = -1.0;
  for (const auto& step : seen) {
    ASSERT_LE(step.ids.size(), 24u);
    ASSERT_GT(step.start_s, last_start);
    last_start = step.start_s;
    std::vector<std::int64_t> expected_kv(4, 0);
    for (std::size_t row = 0; row < step.ids.size(); ++row) {
      const std::int64_t id = step.ids[row];
      const Request& r = requests[static_cast<std::size_t>(id)];
      ASSERT_GE(step.start_s, r.arrival_s());
      const auto peak = models::local_lengths(r.input_tokens + r.output_tokens - 1, 4, 16);
      for (int k = 0; k < 4; ++k) expected_kv[k] += peak[k];
      if (!last_context.contains(id)) {
        ASSERT_GT(id, last_admitted) << "FCFS: admitted in arrival order";
        last_admitted = id;
        ASSERT_EQ(step.contexts[row], r.input_tokens) << "first decode step attends over the prompt";
      } else {
        ASSERT_EQ(last_step[id], step.index - 1) << "a running request is in every step until it leaves";
        ASSERT_EQ(step.contexts[row], last_context[id] + 1) << "context grows one token per step";
      }
      last_context[id] = step.contexts[row];
      last_step[id] = step.index;
      ++steps_of[id];
    }
    ASSERT_EQ(step.kv, expected_kv);
    for (auto kv : step.kv) ASSERT_LE(kv, 15000);
  }
  ASSERT_EQ(steps_of.size(), requests.size());
  for (const auto& [id, n] : steps_of)
    ASSERT_EQ(n, requests[static_cast<std::size_t>(id)].output_tokens) << id;
  EXPECT_EQ(stats.finished, 400);
  EXPECT_EQ(stats.unfinished, 0);
  EXPECT_EQ(stats.rejected, 0);
  EXPECT_EQ(stats.peak_rows, 24);  // both limits bind on this load
  EXPECT_GT(stats.peak_kv_tokens, 15000 - 1000);
}

TEST(Batcher, StepLimitAndTimeWindowStopTheReplay) {
  const std::vector<Request> requests = {{0, 0, 100, 10}, {1, 1000 * kMs, 100, 50}, {2, 3000 * kMs, 100, 5}};
  const auto every_100ms = [](const models::Scenario&) { return 0.1; };
  BatcherConfig c = config(2, 8, 1000);
  c.max_steps = 7;
  BatcherStats stats;
  EXPECT_EQ(schedule(requests, c, every_100ms, &stats).size(), 7u);
  EXPECT_EQ(stats.steps, 7);
  EXPECT_EQ(stats.unfinished, 3);

  c.max_steps = 0;
  c.time_window_s = 2.0;  // request 2 arrives after the window; no step starts at or after 2 s
  const auto seen = schedule(requests, c, every_100ms, &stats);
  EXPECT_EQ(stats.requests, 2);
  for (const auto& s : seen) {
    EXPECT_LT(s.start_s, 2.0);
    EXPECT_EQ(std::count(s.ids.begin(), s.ids.end(), 2), 0);
  }
  EXPECT_EQ(stats.finished, 1);  // request 0: 10 steps of 0.1 s; request 1 still runs at 2 s
  EXPECT_EQ(stats.unfinished, 1);
}

TEST(Batcher, RequestsWithoutOutputNeedNoStep) {
  BatcherStats stats;
  const auto seen = schedule(
      {{0, 0, 10, 0}, {1, 0, 10, 1}}, config(1, 4, 100), [](const models::Scenario&) { return 1.0; }, &stats);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].ids, (std::vector<std::int64_t>{1}));
  EXPECT_EQ(stats.finished, 2);
}

TEST(Batcher, RejectsBadConfigurationAndBadLatencies) {
  const auto one = [](const models::Scenario&) { return 1.0; };
  EXPECT_THROW(run_batcher({}, config(2, 0, 100), one), InputError);
  EXPECT_THROW(run_batcher({}, config(2, 4, 0), one), InputError);
  BatcherConfig c = config(3, 4, 100);  // 128 heads do not split over 3 ranks for ag-rs
  EXPECT_THROW(run_batcher({}, c, one), InputError);
  c.time_window_s = -1;
  c.geometry.dcp = 2;
  EXPECT_THROW(run_batcher({}, c, one), InputError);
  EXPECT_THROW(run_batcher({{0, 0, 10, 2}}, config(2, 4, 100), [](const models::Scenario&) { return 0.0; }),
               RuntimeError);
  EXPECT_EQ(run_batcher({}, config(2, 4, 100), one).steps, 0);
}

}  // namespace
}  // namespace dcpsim::analysis
