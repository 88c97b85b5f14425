#pragma once
// `dcpsim replay`: a request trace through continuous batching (batcher.h), every decode step timed for every
// requested strategy; per-step CSV, latency percentiles and CDFs, time bands for plots.
//
// Whole-model steps. One schedule serves all strategies: the clock advances by the first strategy's decode
// step (the "clock strategy"): layers × its simulated attention layer + the non-attention time of the step's
// rows (whole_model.h). Every other strategy is timed on the very same batches, so the columns compare
// strategies under identical load.
//
// Reuse (what makes a replay of an hour of trace take seconds). A batch's contexts all grow by one token per
// step, so consecutive steps of the same requests differ by a token per row. With `bucket_tokens` = w > 1 a
// batch is timed once per w of its steps, at the contexts it has in the middle of those w steps, and the
// steps in between reuse that timing: every row is timed within w/2 tokens of its true context (w = the KV
// block size: a decode kernel reads whole blocks). A batch that changes (a request joins or leaves) starts
// over. Timings are cached on the exact composition timed (rows in admission order), so a composition that
// recurs anywhere in the trace is timed once; the simulator is deterministic, so a cached timing is the same
// bit for bit. `check_every` = n also times the exact contexts of every n-th new composition and reports the
// relative error of the bucketed timing (ReplayResult::bucketing); docs/PERFORMANCE.md has the error of whole
// replays against unbucketed ones.
//
// Processes. SimGrid runs one engine per process, so `jobs` > 1 forks jobs − 1 worker processes (each with
// its own engine, inherited ready from the parent) that time the strategies after the first, while the parent
// runs the batcher, times the clock strategy and takes its share of the others (the load spread evenly).
// Results never depend on `jobs`.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "dcpsim/analysis/batcher.h"
#include "dcpsim/analysis/layouts.h"
#include "dcpsim/models/scenario.h"

namespace dcpsim::analysis {

struct StepTiming {
  double step_s = 0.0;   // one attention layer: query all-gather, attention, merge (as simulated)
  double merge_s = 0.0;  // what the merge adds after the last rank's attention (one layer)
  double comm_s = 0.0;   // the busiest rank's communication phases, query all-gather included (one layer)
};

// Times one scenario (the CLI passes the SimGrid simulator; tests an analytic function). Called in worker
// processes too when jobs > 1.
using ScenarioTiming = std::function<StepTiming(const models::Scenario&)>;
// Non-attention time of a decode step with `rows` rows (whole_model.h); empty: none.
using NonAttentionTime = std::function<double(int rows)>;

struct ReplayConfig {
  BatcherConfig batcher;                     // geometry.strategy is ignored: `strategies` says which run
  std::vector<models::Strategy> strategies;  // at least one; the first drives the clock
  int layers = 1;                            // attention layers per decode step
  NonAttentionTime non_attention;            // per decode step
  int bucket_tokens = 1;                     // w: rows timed within w/2 tokens; 1: every step exactly
  int jobs = 1;                              // processes timing (this one and jobs − 1 forked workers)
  int check_every = 0;                       // also time every n-th new composition exactly; 0: never
  bool memoise = true;                       // false: no reuse at all (every step timed)
};

struct ReplayStep {
  std::int64_t step = 0;
  double time_s = 0.0;  // when the step starts
  int rows = 0;
  std::int64_t admitted = 0;
  std::int64_t sum_context = 0;
  std::int64_t max_context = 0;
  std::int64_t kv_tokens_max = 0;  // the fullest rank's reserved KV tokens
  double non_attention_s = 0.0;    // of this decode step
  std::int32_t composition = 0;    // the timed composition it uses (ReplayResult::timings)
};

// Nearest-rank statistics of one figure over all steps.
struct LatencyStats {
  double p10 = 0, p50 = 0, p90 = 0, p99 = 0, max = 0, mean = 0;
};

struct StrategySummary {
  models::Strategy strategy = models::Strategy::kAgRs;
  LatencyStats decode_step;      // per decode step (all layers + non-attention)
  LatencyStats layer_step;       // one attention layer
  LatencyStats layer_merge;      // per layer
  LatencyStats layer_comm;       // per layer
  double merge_share = 0.0;      // Σ merge / Σ layer step over all steps
  double comm_share = 0.0;       // Σ communication (query all-gather included) / Σ layer step
  double attention_share = 0.0;  // Σ layers × layer step / Σ decode step
};

// The bucketed timing against the exact one on sampled steps, relative (bucketed − exact) / exact.
struct BucketingError {
  std::int64_t samples = 0;
  double layer_step_max = 0.0, layer_step_mean = 0.0;  // |relative error|, over samples and strategies
  double decode_step_max = 0.0, decode_step_mean = 0.0;
};

struct ReplayResult {
  std::vector<models::Strategy> strategies;
  std::vector<ReplayStep> steps;
  // Composition c, strategy k: timings[c × strategies.size() + k].
  std::vector<StepTiming> timings;
  std::vector<StrategySummary> summaries;  // empty when no step ran
  BatcherStats batcher;
  std::int64_t kv_capacity_tokens = 0;
  int max_rows = 0;
  int layers = 1;
  int bucket_tokens = 1;
  int jobs = 1;
  std::int64_t compositions = 0;  // distinct compositions timed (each for every strategy)
  std::int64_t simulations = 0;   // scenarios timed, the bucketing checks included
  BucketingError bucketing;
  double wall_s = 0.0;  // how long the replay took

  const StepTiming& timing(const ReplayStep& s, std::size_t k) const {
    return timings[static_cast<std::size_t>(s.composition) * strategies.size() + k];
  }
  // layers × the strategy's layer step + the step's non-attention time.
  double decode_step_s(const ReplayStep& s, std::size_t k) const {
    return layers * timing(s, k).step_s + s.non_attention_s;
  }
};

struct ReplayProgress {
  double fraction = 0.0;  // requests done (finished or rejected) of those considered
  double clock_s = 0.0;
  std::int64_t steps = 0;
  std::int64_t compositions = 0;
  std::int64_t pending = 0;  // simulations queued to workers, not yet back
  bool draining = false;     // the schedule is done; waiting for the workers
};
// Called every few thousand steps and while draining (progress reports).
using ReplayProgressFn = std::function<void(const ReplayProgress&)>;

// Throws InputError for an empty strategy list, a strategy the geometry cannot run, layers < 1, bucket_tokens
// < 1, jobs < 1, or a bad batcher configuration; RuntimeError when a timing is not a positive finite step
// with 0 <= merge <= step and 0 <= comm, or a worker process fails.
ReplayResult replay_requests(std::vector<Request> requests, const ReplayConfig& config,
                             const ScenarioTiming& timing, const ReplayProgressFn& progress = {});

// Tokens of KV (all layers) one GPU can hold: ⌊capacity_bytes / (KV bytes per token per layer × layers)⌋, the
// per-layer bytes from models::kv_bytes_per_token for the geometry. InputError when that is below one token.
std::int64_t kv_capacity_tokens(const models::Scenario& geometry, double capacity_bytes, int layers);

// Nearest-rank percentile (p in (0, 100]) of `values`; 0 for none.
double percentile(std::vector<double> values, double p);

// The per-step CSV: step,time_s,rows,admitted,sum_context,max_context,kv_tokens_max,non_attention_us, then
// per strategy step_us_<s> (the decode step), layer_step_us_<s>, layer_merge_us_<s> (one attention layer).
std::string steps_csv(const ReplayResult& result);
// Written to a temporary file beside `path` and renamed; InputError when the directory is missing.
void write_steps_csv(const ReplayResult& result, const std::filesystem::path& path);

// The CDF: quantile (0, 0.01, ..., 1) then per strategy step_us_<s>, layer_step_us_<s>, layer_merge_us_<s>,
// nearest rank over all steps.
std::string cdf_csv(const ReplayResult& result);

// The compact summary plots draw, in the one summary shape (summary_json.h, schema "dcpsim-summary/1",
// command "replay"; analysis/README.md): per strategy entry percentiles, CDF and time bands (`bands` bins of
// the replayed time, each with p10/p50/p90/max). `about` is merged in at the top level (schema, layout,
// trace, profile, model, ...); `layout` (optional) is each entry's.
std::string summary_json(const ReplayResult& result, const std::string& about_json, int bands = 200,
                         const Layout* layout = nullptr);

// The table printed at the end of a replay.
std::string replay_summary(const ReplayResult& result);

}  // namespace dcpsim::analysis
