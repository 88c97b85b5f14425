#include "dcpsim/analysis/replay.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <sstream>
#include <unordered_map>

#include "dcpsim/error.h"
#include "dcpsim/models/cost_kernels.h"
#include "dcpsim/traces/output_file.h"

namespace dcpsim::analysis {
namespace {

// Bounded so that a replay of millions of distinct batches does not keep them all; clearing loses only speed.
constexpr std::size_t kMemoLimit = 1 << 16;

class TimingMemo {
 public:
  explicit TimingMemo(bool enabled) : enabled_(enabled) {}

  template <typename Compute>
  StepTiming get(const models::Scenario& s, Compute&& compute, ReplayResult& counts) {
    if (!enabled_) {
      ++counts.simulations;
      return compute();
    }
    std::string key(1, static_cast<char>(s.strategy));
    key.append(reinterpret_cast<const char*>(s.contexts.data()), s.contexts.size() * sizeof(std::int64_t));
    if (const auto it = memo_.find(key); it != memo_.end()) {
      ++counts.memo_hits;
      return it->second;
    }
    ++counts.simulations;
    const StepTiming t = compute();
    if (memo_.size() >= kMemoLimit) memo_.clear();
    memo_.emplace(std::move(key), t);
    return t;
  }

 private:
  bool enabled_;
  std::unordered_map<std::string, StepTiming> memo_;
};

void check_timing(const StepTiming& t, const models::Scenario& s) {
  if (!(t.step_s > 0.0) || !std::isfinite(t.step_s) || !(t.merge_s >= 0.0) || !(t.merge_s <= t.step_s)) {
    std::ostringstream what;
    what << "timing of " << s.label() << " is step " << t.step_s << " s, merge " << t.merge_s
         << " s; it needs 0 < step and 0 <= merge <= step";
    throw RuntimeError(what.str());
  }
}

void validate_config(const ReplayConfig& c) {
  if (c.strategies.empty()) throw InputError("no strategy to replay; give at least one");
  if (c.layers < 1) throw InputError("layers = " + std::to_string(c.layers) + "; it must be >= 1");
  validate(c.batcher);
  for (const models::Strategy s : c.strategies) {
    models::Scenario probe = c.batcher.geometry;
    probe.strategy = s;
    probe.contexts = {1};
    probe.validate();
  }
}

ReplayStep describe_step(const Step& step, std::vector<StepTiming> timing) {
  ReplayStep r;
  r.step = step.index;
  r.time_s = step.start_s;
  r.rows = step.scenario.rows();
  r.admitted = step.admitted;
  for (const auto c : step.scenario.contexts) {
    r.sum_context += c;
    r.max_context = std::max(r.max_context, c);
  }
  r.kv_tokens_max = *std::max_element(step.kv_tokens_per_rank.begin(), step.kv_tokens_per_rank.end());
  r.timing = std::move(timing);
  return r;
}

std::vector<StrategySummary> summarise(const ReplayResult& result) {
  std::vector<StrategySummary> out;
  if (result.steps.empty()) return out;
  for (std::size_t k = 0; k < result.strategies.size(); ++k) {
    std::vector<double> merge, step;
    double merge_sum = 0.0, step_sum = 0.0;
    for (const auto& s : result.steps) {
      merge.push_back(s.timing[k].merge_s);
      step.push_back(s.timing[k].step_s);
      merge_sum += s.timing[k].merge_s;
      step_sum += s.timing[k].step_s;
    }
    out.push_back({result.strategies[k], percentile(merge, 50), percentile(merge, 99), percentile(step, 50),
                   percentile(step, 99), merge_sum / step_sum});
  }
  return out;
}

}  // namespace

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0.0;
  const auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(values.size())));
  const std::size_t index = std::clamp<std::size_t>(rank, 1, values.size()) - 1;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(index), values.end());
  return values[index];
}

std::int64_t kv_capacity_tokens(const models::Scenario& geometry, double capacity_bytes, int layers) {
  if (layers < 1) throw InputError("layers = " + std::to_string(layers) + "; it must be >= 1");
  const double per_token = models::kv_bytes_per_token(models::attention_shape(geometry)) * layers;
  const double tokens = std::floor(capacity_bytes / per_token);
  if (!(tokens >= 1.0)) {
    std::ostringstream what;
    what << "KV capacity " << capacity_bytes << " B per GPU holds no token of " << per_token << " B ("
         << layers << " layers); give a larger --kv-capacity-gb";
    throw InputError(what.str());
  }
  return static_cast<std::int64_t>(tokens);
}

ReplayResult replay_requests(std::vector<Request> requests, const ReplayConfig& config,
                             const ScenarioTiming& timing, const ReplayProgress& progress) {
  validate_config(config);
  ReplayResult result;
  result.strategies = config.strategies;
  result.kv_capacity_tokens = config.batcher.kv_capacity_tokens;
  result.max_rows = config.batcher.max_rows;
  result.layers = config.layers;
  TimingMemo memo(config.memoise);
  std::vector<StepTiming> current;

  const StepLatency clock = [&](const models::Scenario& scenario) {
    current.clear();
    for (const models::Strategy s : config.strategies) {
      models::Scenario each = scenario;
      each.strategy = s;
      const StepTiming t = memo.get(
          each, [&] { return timing(each); }, result);
      check_timing(t, each);
      current.push_back(t);
    }
    return current.front().step_s * config.layers;
  };
  const StepObserver observe = [&](const Step& step, double) {
    result.steps.push_back(describe_step(step, current));
    if (progress) progress(result.steps.back());
  };
  result.batcher = run_batcher(std::move(requests), config.batcher, clock, observe);
  result.summaries = summarise(result);
  return result;
}

void write_steps_csv(const ReplayResult& result, const std::filesystem::path& path) {
  traces::write_file_atomically(path, steps_csv(result));
}

std::string steps_csv(const ReplayResult& result) {
  std::ostringstream out;
  out << "step,time_s,rows,admitted,sum_context,max_context,kv_tokens_max";
  for (const auto s : result.strategies) {
    out << ",step_latency_us_" << models::to_string(s) << ",merge_latency_us_" << models::to_string(s);
  }
  out << "\n" << std::setprecision(12);
  for (const auto& r : result.steps) {
    out << r.step << ',' << r.time_s << ',' << r.rows << ',' << r.admitted << ',' << r.sum_context << ','
        << r.max_context << ',' << r.kv_tokens_max;
    for (const auto& t : r.timing) out << ',' << t.step_s * 1e6 << ',' << t.merge_s * 1e6;
    out << '\n';
  }
  return out.str();
}

std::string replay_summary(const ReplayResult& r) {
  std::ostringstream out;
  const BatcherStats& b = r.batcher;
  out << std::fixed << std::setprecision(3);
  out << "replay: " << b.steps << " steps over " << b.end_s << " s simulated; requests: " << b.requests
      << " considered, " << b.admitted << " admitted, " << b.finished << " finished, " << b.rejected
      << " rejected (larger than a GPU's KV), " << b.unfinished << " unfinished\n";
  out << "load: peak " << b.peak_rows << " of " << r.max_rows << " rows; peak " << b.peak_kv_tokens << " of "
      << r.kv_capacity_tokens << " KV tokens per GPU (" << r.layers << " layers); " << r.simulations
      << " simulations, " << r.memo_hits << " memo hits\n";
  if (r.summaries.empty()) return out.str() + "no step ran\n";
  out << "per layer, over all steps (µs)        merge p50   merge p99    step p50    step p99  merge share";
  if (r.strategies.size() > 1) out << "  (clock: " << models::to_string(r.strategies.front()) << ")";
  out << "\n";
  for (const auto& s : r.summaries) {
    out << "  " << std::left << std::setw(34) << models::to_string(s.strategy) << std::right
        << std::setprecision(2) << std::setw(11) << s.merge_p50_s * 1e6 << std::setw(12)
        << s.merge_p99_s * 1e6 << std::setw(12) << s.step_p50_s * 1e6 << std::setw(12) << s.step_p99_s * 1e6
        << std::setw(12) << std::setprecision(1) << s.merge_share * 100.0 << " %\n";
  }
  return out.str();
}

}  // namespace dcpsim::analysis
