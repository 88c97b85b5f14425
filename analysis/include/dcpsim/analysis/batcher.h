#pragma once
// Continuous batching of decode steps over a request trace, the way serving engines run decode with DCP.
//
// Model (decode only: prefill is assumed done elsewhere, as in prefill/decode-disaggregated serving):
//  - FCFS: requests are admitted in arrival order (file order among equal arrivals); when the oldest waiting
//    request does not fit, nothing behind it is admitted (no overtaking).
//  - A step holds at most max_rows requests, one query row each.
//  - KV capacity per GPU, in tokens (all layers): a request's KV is sharded over the N ranks by SPEC's local
//    length formula, and it is admitted only if every rank has room for the largest KV it will ever hold
//    (input + output − 1 tokens), so the cache never overflows and nothing is ever preempted. A request that
//    could not fit even into an empty cache is rejected (counted, never admitted) rather than blocking
//    forever.
//  - Decode context of a row = input tokens + tokens generated so far; each step generates one token per row;
//    a request leaves after output_tokens steps. Requests with output_tokens = 0 need no decode step.
//  - Time advances by the step latency that the injected function returns for the step's Scenario (the
//    geometry with one context per row); when nothing is running, time jumps to the next arrival.
//  - With a time window W, requests arriving at or after W are ignored and no step starts at or after W.
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "dcpsim/analysis/requests.h"
#include "dcpsim/models/scenario.h"

namespace dcpsim::analysis {

struct BatcherConfig {
  models::Scenario geometry;  // everything but contexts (dcp, interleave, heads, dims, strategy, ...)
  int max_rows = 256;         // rows per step, >= 1
  std::int64_t kv_capacity_tokens = 0;  // per GPU, >= 1: tokens of KV (all layers) one rank can hold
  std::int64_t max_steps = 0;           // 0: no limit
  double time_window_s = 0.0;           // 0: the whole trace
};

// Throws InputError naming the first bad field.
void validate(const BatcherConfig& config);

struct Step {
  std::int64_t index = 0;
  double start_s = 0.0;
  std::vector<std::int64_t> request_ids;         // per row, in admission order
  models::Scenario scenario;                     // geometry + contexts (one per row, same order)
  std::vector<std::int64_t> kv_tokens_per_rank;  // reserved after this step's admissions
  std::int64_t admitted = 0;                     // requests that joined at this step
};

struct BatcherStats {
  std::int64_t steps = 0;
  std::int64_t requests = 0;  // considered (inside the time window)
  std::int64_t admitted = 0;
  std::int64_t finished = 0;    // left after all their tokens (including those needing no step)
  std::int64_t rejected = 0;    // too large for an empty cache
  std::int64_t unfinished = 0;  // still waiting or running when a step or time limit stopped the replay
  std::int64_t peak_rows = 0;
  std::int64_t peak_kv_tokens = 0;  // the most any rank held at once
  double end_s = 0.0;               // clock when the replay stopped
};

class ContinuousBatcher {
 public:
  ContinuousBatcher(std::vector<Request> requests, BatcherConfig config);

  // Admits what fits and returns the next step, or nullopt when every request is done or a limit is reached.
  // Each step must be completed with finish_step() before the next call.
  std::optional<Step> next_step();
  // Advances the clock by `latency_s` (> 0, finite; RuntimeError otherwise) and retires finished requests.
  void finish_step(double latency_s);

  const BatcherStats& stats() const { return stats_; }
  double clock_s() const { return clock_s_; }

 private:
  struct Running {
    std::int64_t id = 0;
    std::int64_t context = 0;    // input + generated so far
    std::int64_t remaining = 0;  // steps still to run
    std::vector<std::int64_t> reserved;
  };

  bool limit_reached() const;
  std::int64_t admit();
  void finish_unfinished();

  std::vector<Request> requests_;
  BatcherConfig config_;
  std::size_t next_ = 0;
  std::vector<Running> running_;
  std::vector<std::int64_t> used_;  // per rank, reserved tokens
  double clock_s_ = 0.0;
  bool in_step_ = false;
  bool done_ = false;
  BatcherStats stats_;
};

using StepLatency = std::function<double(const models::Scenario&)>;
using StepObserver = std::function<void(const Step&, double latency_s)>;

// Runs the whole schedule: asks `step_latency` for each step's Scenario and reports every step to `observer`.
BatcherStats run_batcher(std::vector<Request> requests, const BatcherConfig& config,
                         const StepLatency& step_latency, const StepObserver& observer = {});

}  // namespace dcpsim::analysis
