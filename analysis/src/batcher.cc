#include "dcpsim/analysis/batcher.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "dcpsim/error.h"
#include "dcpsim/models/sharding.h"

namespace dcpsim::analysis {

void validate(const BatcherConfig& config) {
  models::Scenario probe = config.geometry;
  probe.contexts = {1};  // the geometry's own rules; rows come from the trace
  probe.validate();
  if (config.max_rows < 1) {
    throw InputError("max rows = " + std::to_string(config.max_rows) + "; it must be >= 1");
  }
  if (config.kv_capacity_tokens < 1) {
    throw InputError("KV capacity = " + std::to_string(config.kv_capacity_tokens) +
                     " tokens per GPU; it must be >= 1");
  }
  if (config.max_steps < 0) {
    throw InputError("step limit = " + std::to_string(config.max_steps) + "; it must be >= 0 (0: no limit)");
  }
  if (!(config.time_window_s >= 0.0) || !std::isfinite(config.time_window_s)) {
    throw InputError("time window = " + std::to_string(config.time_window_s) +
                     " s; it must be a finite number >= 0 (0: the whole trace)");
  }
}

ContinuousBatcher::ContinuousBatcher(std::vector<Request> requests, BatcherConfig config)
    : requests_(std::move(requests)), config_(std::move(config)) {
  validate(config_);
  config_.geometry.contexts.clear();
  if (config_.time_window_s > 0.0) {
    std::erase_if(requests_, [&](const Request& r) { return r.arrival_s() >= config_.time_window_s; });
  }
  std::stable_sort(requests_.begin(), requests_.end(),
                   [](const Request& a, const Request& b) { return a.arrival_ns < b.arrival_ns; });
  used_.assign(static_cast<std::size_t>(config_.geometry.dcp), 0);
  stats_.requests = static_cast<std::int64_t>(requests_.size());
}

bool ContinuousBatcher::limit_reached() const {
  if (config_.max_steps > 0 && stats_.steps >= config_.max_steps) return true;
  return config_.time_window_s > 0.0 && clock_s_ >= config_.time_window_s;
}

// FCFS admission at the current clock; returns how many requests joined.
std::int64_t ContinuousBatcher::admit() {
  const int dcp = config_.geometry.dcp;
  const int interleave = config_.geometry.interleave;
  std::int64_t joined = 0;
  while (next_ < requests_.size() && requests_[next_].arrival_s() <= clock_s_ &&
         static_cast<int>(running_.size()) < config_.max_rows) {
    const Request& r = requests_[next_];
    if (r.output_tokens == 0) {
      ++stats_.finished;
      ++next_;
      continue;
    }
    std::vector<std::int64_t> need =
        models::local_lengths(r.input_tokens + r.output_tokens - 1, dcp, interleave);
    if (need.front() > config_.kv_capacity_tokens) {  // rank 0 holds the largest shard
      ++stats_.rejected;
      ++next_;
      continue;
    }
    bool fits = true;
    for (int k = 0; k < dcp; ++k) fits = fits && used_[k] + need[k] <= config_.kv_capacity_tokens;
    if (!fits) break;
    for (int k = 0; k < dcp; ++k) used_[k] += need[k];
    running_.push_back({r.id, r.input_tokens, r.output_tokens, std::move(need)});
    ++joined;
    ++next_;
  }
  stats_.admitted += joined;
  return joined;
}

std::optional<Step> ContinuousBatcher::next_step() {
  if (in_step_) throw RuntimeError("ContinuousBatcher::next_step called before finish_step");
  if (done_) return std::nullopt;
  std::int64_t joined = 0;
  while (true) {
    if (limit_reached()) break;
    joined = admit();
    if (!running_.empty()) break;
    if (next_ >= requests_.size()) break;
    clock_s_ = std::max(clock_s_, requests_[next_].arrival_s());  // idle until the next arrival
  }
  if (running_.empty() || limit_reached()) {
    finish_unfinished();
    return std::nullopt;
  }
  Step step;
  step.index = stats_.steps;
  step.start_s = clock_s_;
  step.admitted = joined;
  step.scenario = config_.geometry;
  for (const auto& r : running_) {
    step.request_ids.push_back(r.id);
    step.scenario.contexts.push_back(r.context);
  }
  step.kv_tokens_per_rank = used_;
  stats_.peak_rows = std::max<std::int64_t>(stats_.peak_rows, static_cast<std::int64_t>(running_.size()));
  stats_.peak_kv_tokens = std::max(stats_.peak_kv_tokens, *std::max_element(used_.begin(), used_.end()));
  in_step_ = true;
  return step;
}

void ContinuousBatcher::finish_step(double latency_s) {
  if (!in_step_) throw RuntimeError("ContinuousBatcher::finish_step called without a step");
  if (!(latency_s > 0.0) || !std::isfinite(latency_s)) {
    throw RuntimeError("step " + std::to_string(stats_.steps) + ": latency " + std::to_string(latency_s) +
                       " s is not a positive finite time");
  }
  in_step_ = false;
  clock_s_ += latency_s;
  ++stats_.steps;
  std::vector<Running> still;
  still.reserve(running_.size());
  for (auto& r : running_) {
    ++r.context;
    if (--r.remaining > 0) {
      still.push_back(std::move(r));
      continue;
    }
    for (std::size_t k = 0; k < used_.size(); ++k) used_[k] -= r.reserved[k];
    ++stats_.finished;
  }
  running_ = std::move(still);
  stats_.end_s = clock_s_;
}

void ContinuousBatcher::finish_unfinished() {
  done_ = true;
  stats_.end_s = clock_s_;
  stats_.unfinished = static_cast<std::int64_t>(running_.size() + (requests_.size() - next_));
}

BatcherStats run_batcher(std::vector<Request> requests, const BatcherConfig& config,
                         const StepLatency& step_latency, const StepObserver& observer) {
  ContinuousBatcher batcher(std::move(requests), config);
  while (auto step = batcher.next_step()) {
    const double latency = step_latency(step->scenario);
    if (observer) observer(*step, latency);
    batcher.finish_step(latency);
  }
  return batcher.stats();
}

}  // namespace dcpsim::analysis
