#pragma once
// `dcpsim replay`: a request trace through continuous batching (batcher.h), every decode step simulated for
// every requested strategy, per-step CSV and a summary (merge latency p50/p99 and its share of the step).
//
// One schedule serves all strategies: the clock advances by `layers` × the step latency of the first strategy
// (the "clock strategy"), and every other strategy is simulated on the very same batches, so the columns
// compare strategies under identical load. Step and merge latencies are per layer, as the simulator reports
// them. Simulated steps are memoised on (strategy, exact contexts in row order): the simulator is
// deterministic, so a repeated batch gives the same timing bit for bit.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "dcpsim/analysis/batcher.h"
#include "dcpsim/models/scenario.h"

namespace dcpsim::analysis {

struct StepTiming {
  double step_s = 0.0;   // the simulated decode step (one layer)
  double merge_s = 0.0;  // what the merge adds after attention
};

// Times one scenario (the CLI passes the SimGrid simulator; tests an analytic function).
using ScenarioTiming = std::function<StepTiming(const models::Scenario&)>;

struct ReplayConfig {
  BatcherConfig batcher;                     // geometry.strategy is ignored: `strategies` says which run
  std::vector<models::Strategy> strategies;  // at least one; the first drives the clock
  int layers = 1;                            // attention layers per decode step (clock = layers × step)
  bool memoise = true;
};

struct ReplayStep {
  std::int64_t step = 0;
  double time_s = 0.0;  // when the step starts
  int rows = 0;
  std::int64_t admitted = 0;
  std::int64_t sum_context = 0;
  std::int64_t max_context = 0;
  std::int64_t kv_tokens_max = 0;  // the fullest rank's reserved KV tokens
  std::vector<StepTiming> timing;  // one per strategy, in ReplayConfig order
};

struct StrategySummary {
  models::Strategy strategy = models::Strategy::kAgRs;
  double merge_p50_s = 0.0, merge_p99_s = 0.0;
  double step_p50_s = 0.0, step_p99_s = 0.0;
  double merge_share = 0.0;  // Σ merge / Σ step over all steps
};

struct ReplayResult {
  std::vector<models::Strategy> strategies;
  std::vector<ReplayStep> steps;
  std::vector<StrategySummary> summaries;  // empty when no step ran
  BatcherStats batcher;
  std::int64_t kv_capacity_tokens = 0;
  int max_rows = 0;
  int layers = 1;
  std::int64_t simulations = 0;  // scenarios actually timed
  std::int64_t memo_hits = 0;    // scenarios answered from the memo
};

// Called after each step (progress reports).
using ReplayProgress = std::function<void(const ReplayStep&)>;

// Throws InputError for an empty strategy list, a strategy the geometry cannot run, layers < 1, or a bad
// batcher configuration; RuntimeError when a timing is not a positive finite step with 0 <= merge <= step.
ReplayResult replay_requests(std::vector<Request> requests, const ReplayConfig& config,
                             const ScenarioTiming& timing, const ReplayProgress& progress = {});

// Tokens of KV (all layers) one GPU can hold: ⌊capacity_bytes / (KV bytes per token per layer × layers)⌋, the
// per-layer bytes from models::kv_bytes_per_token for the geometry. InputError when that is below one token.
std::int64_t kv_capacity_tokens(const models::Scenario& geometry, double capacity_bytes, int layers);

// Nearest-rank percentile (p in (0, 100]) of `values`; 0 for none.
double percentile(std::vector<double> values, double p);

// step,time_s,rows,admitted,sum_context,max_context,kv_tokens_max, then
// step_latency_us_<s>,merge_latency_us_<s> per strategy. Written to a temporary file beside `path` and
// renamed; InputError when the directory is missing.
std::string steps_csv(const ReplayResult& result);  // the same CSV as text
void write_steps_csv(const ReplayResult& result, const std::filesystem::path& path);

// The table printed at the end of a replay.
std::string replay_summary(const ReplayResult& result);

}  // namespace dcpsim::analysis
