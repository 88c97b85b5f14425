// dcpsim replay: the schedule, the reuse of timed compositions, the worker processes (replay_workers.h) and
// the outputs (replay_output.cc).
#include "dcpsim/analysis/replay.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <sstream>
#include <unordered_map>

#include "dcpsim/error.h"
#include "dcpsim/models/cost_kernels.h"
#include "replay_stats.h"
#include "replay_workers.h"

namespace dcpsim::analysis {
namespace {

// Compositions kept for reuse; past this the cache starts over (reuse is lost, never correctness).
constexpr std::size_t kCacheLimit = std::size_t{1} << 20;

struct ContextsHash {
  std::size_t operator()(const std::vector<std::int64_t>& v) const {
    std::uint64_t h = 1469598103934665603ull;
    for (const std::int64_t x : v) h = (h ^ static_cast<std::uint64_t>(x)) * 1099511628211ull;
    return static_cast<std::size_t>(h ^ (h >> 29));
  }
};

void check_timing(const StepTiming& t, const models::Scenario& s) {
  if (!(t.step_s > 0.0) || !std::isfinite(t.step_s) || !(t.merge_s >= 0.0) || !(t.merge_s <= t.step_s) ||
      !(t.comm_s >= 0.0) || !std::isfinite(t.comm_s)) {
    std::ostringstream what;
    what << "timing of " << s.label() << " is step " << t.step_s << " s, merge " << t.merge_s << " s, comm "
         << t.comm_s << " s; it needs 0 < step, 0 <= merge <= step and 0 <= comm";
    throw RuntimeError(what.str());
  }
}

void validate_config(const ReplayConfig& c) {
  if (c.strategies.empty()) throw InputError("no strategy to replay; give at least one");
  if (c.layers < 1) throw InputError("layers = " + std::to_string(c.layers) + "; it must be >= 1");
  if (c.bucket_tokens < 1)
    throw InputError("bucket = " + std::to_string(c.bucket_tokens) + " tokens; it must be >= 1 (1: exact)");
  if (c.jobs < 1 || c.jobs > 1024)
    throw InputError("jobs = " + std::to_string(c.jobs) + "; it must be in [1, 1024]");
  if (c.check_every < 0) throw InputError("check_every must be >= 0");
  validate(c.batcher);
  for (const models::Strategy s : c.strategies) {
    models::Scenario probe = c.batcher.geometry;
    probe.strategy = s;
    probe.contexts = {1};
    probe.validate();
  }
}

// The schedule and every timing it needs; one object per replay.
class Replayer {
 public:
  Replayer(const ReplayConfig& config, const ScenarioTiming& timing)
      : c_(config), timing_(timing), k_(config.strategies.size()) {
    if (c_.jobs > 1 && k_ > 1) {
      pool_.emplace(c_.jobs - 1, c_.batcher.geometry, timing_);
      // This process times the clock strategy and, to even the load, its share of the others.
      parent_share_ = std::max(0.0, double(k_) / c_.jobs - 1.0) / double(k_ - 1);
    }
  }

  ReplayResult run(std::vector<Request> requests, const ReplayProgressFn& progress);

 private:
  std::int32_t time_composition(const std::vector<std::int64_t>& contexts);
  std::int32_t composition_of(const Step& step);
  double non_attention(int rows);
  void store(std::int64_t slot, const StepTiming& t);
  void finish(ReplayResult& r);

  const ReplayConfig& c_;
  const ScenarioTiming& timing_;
  const std::size_t k_;
  std::optional<detail::WorkerPool> pool_;
  std::vector<StepTiming> timings_;
  std::vector<char> have_;
  std::unordered_map<std::vector<std::int64_t>, std::int32_t, ContextsHash> cache_;
  std::vector<double> non_attention_;  // by rows; NaN until computed
  // The current batch (same requests since `age` steps) and the composition its current window uses.
  std::vector<std::int64_t> batch_ids_, anchor_, timed_;
  std::int64_t age_ = 0, window_ = -1;
  std::int32_t current_ = -1;
  std::int64_t new_compositions_ = 0;
  std::int64_t simulations_ = 0;
  struct Check {
    std::int32_t bucketed, exact;
    int rows;
  };
  std::vector<Check> checks_;
  bool fresh_ = false;                        // a composition was queued since the last pump
  double parent_share_ = 0.0, credit_ = 0.0;  // of the non-clock timings, the share this process takes
};

void Replayer::store(std::int64_t slot, const StepTiming& t) {
  const auto k = static_cast<std::size_t>(slot) % k_;
  models::Scenario s = c_.batcher.geometry;
  s.strategy = c_.strategies[k];
  s.contexts = {1};
  check_timing(t, s);
  timings_[static_cast<std::size_t>(slot)] = t;
  have_[static_cast<std::size_t>(slot)] = 1;
}

std::int32_t Replayer::time_composition(const std::vector<std::int64_t>& contexts) {
  const auto c = static_cast<std::int32_t>(timings_.size() / k_);
  timings_.resize(timings_.size() + k_);
  have_.resize(have_.size() + k_, 0);
  models::Scenario s = c_.batcher.geometry;
  s.contexts = contexts;
  for (std::size_t k = 0; k < k_; ++k) {
    const std::int64_t slot =
        static_cast<std::int64_t>(c) * static_cast<std::int64_t>(k_) + static_cast<std::int64_t>(k);
    ++simulations_;
    if (k > 0 && pool_) {  // the clock strategy is needed now; the others can come later
      credit_ += parent_share_;
      if (credit_ < 1.0) {
        pool_->submit({slot, c_.strategies[k], contexts});
        fresh_ = true;
        continue;
      }
      credit_ -= 1.0;
    }
    s.strategy = c_.strategies[k];
    const StepTiming t = timing_(s);
    check_timing(t, s);
    store(slot, t);
  }
  return c;
}

std::int32_t Replayer::composition_of(const Step& step) {
  const std::vector<std::int64_t>& contexts = step.scenario.contexts;
  if (!c_.memoise) return time_composition(contexts);
  const std::int64_t w = c_.bucket_tokens;
  if (step.request_ids != batch_ids_) {  // a request joined or left: the batch starts over
    batch_ids_ = step.request_ids;
    anchor_ = contexts;
    age_ = 0;
    window_ = -1;
  }
  const std::int64_t window = age_++ / w;
  if (window == window_) return current_;
  window_ = window;
  // Every row at the contexts it has in the middle of this window's w steps.
  timed_ = anchor_;
  for (std::int64_t& x : timed_) x += window * w + (w - 1) / 2;
  if (const auto it = cache_.find(timed_); it != cache_.end()) return current_ = it->second;
  if (cache_.size() >= kCacheLimit) cache_.clear();
  current_ = time_composition(timed_);
  cache_.emplace(timed_, current_);
  ++new_compositions_;
  if (w > 1 && c_.check_every > 0 && new_compositions_ % c_.check_every == 0) {
    checks_.push_back({current_, time_composition(contexts), step.scenario.rows()});
  }
  return current_;
}

double Replayer::non_attention(int rows) {
  if (!c_.non_attention) return 0.0;
  const auto r = static_cast<std::size_t>(rows);
  if (r >= non_attention_.size()) non_attention_.resize(r + 1, std::nan(""));
  if (std::isnan(non_attention_[r])) {
    const double t = c_.non_attention(rows);
    if (!(t >= 0.0) || !std::isfinite(t))
      throw RuntimeError("non-attention time of " + std::to_string(rows) + " rows is " + std::to_string(t) +
                         " s");
    non_attention_[r] = t;
  }
  return non_attention_[r];
}

ReplayResult Replayer::run(std::vector<Request> requests, const ReplayProgressFn& progress) {
  const auto started = std::chrono::steady_clock::now();
  ReplayResult r;
  r.strategies = c_.strategies;
  r.kv_capacity_tokens = c_.batcher.kv_capacity_tokens;
  r.max_rows = c_.batcher.max_rows;
  r.layers = c_.layers;
  r.bucket_tokens = c_.memoise ? c_.bucket_tokens : 1;
  r.jobs = pool_ ? c_.jobs : 1;
  ContinuousBatcher batcher(std::move(requests), c_.batcher);
  const auto report = [&](bool draining) {
    if (!progress) return;
    ReplayProgress p;
    const BatcherStats& b = batcher.stats();
    p.fraction = b.requests > 0 ? double(b.finished + b.rejected) / double(b.requests) : 1.0;
    p.clock_s = batcher.clock_s();
    p.steps = b.steps;
    p.compositions = static_cast<std::int64_t>(timings_.size() / k_);
    p.pending = pool_ ? pool_->pending() : 0;
    p.draining = draining;
    progress(p);
  };
  const auto stored = [this](std::int64_t slot, const StepTiming& t) { store(slot, t); };
  while (auto step = batcher.next_step()) {
    ReplayStep s;
    s.step = step->index;
    s.time_s = step->start_s;
    s.rows = step->scenario.rows();
    s.admitted = step->admitted;
    for (const auto ctx : step->scenario.contexts) {
      s.sum_context += ctx;
      s.max_context = std::max(s.max_context, ctx);
    }
    s.kv_tokens_max = *std::max_element(step->kv_tokens_per_rank.begin(), step->kv_tokens_per_rank.end());
    s.composition = composition_of(*step);
    s.non_attention_s = non_attention(s.rows);
    const double clock =
        c_.layers * timings_[static_cast<std::size_t>(s.composition) * k_].step_s + s.non_attention_s;
    r.steps.push_back(s);
    batcher.finish_step(clock);
    if (pool_ && (fresh_ || (s.step & 255) == 0)) {
      pool_->pump(false, stored);
      fresh_ = false;
    }
    if ((s.step & 4095) == 4095) report(false);
  }
  if (pool_) {
    while (pool_->pending() > 0) {
      pool_->pump(true, stored);
      report(true);
    }
  }
  if (std::find(have_.begin(), have_.end(), 0) != have_.end())
    throw RuntimeError("replay: a timing never came back from the worker processes");
  r.batcher = batcher.stats();
  r.timings = std::move(timings_);
  r.compositions =
      static_cast<std::int64_t>(r.timings.size() / k_) - static_cast<std::int64_t>(checks_.size());
  r.simulations = simulations_;
  finish(r);
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return r;
}

void Replayer::finish(ReplayResult& r) {
  r.summaries = detail::summarise(r);
  BucketingError& e = r.bucketing;
  double layer_sum = 0.0, decode_sum = 0.0;
  std::int64_t n = 0;
  for (const Check& check : checks_) {
    const double na = non_attention(check.rows);
    for (std::size_t k = 0; k < k_; ++k) {
      const double b = r.timings[static_cast<std::size_t>(check.bucketed) * k_ + k].step_s;
      const double x = r.timings[static_cast<std::size_t>(check.exact) * k_ + k].step_s;
      const double layer = std::abs(b - x) / x;
      const double decode = std::abs(r.layers * (b - x)) / (r.layers * x + na);
      e.layer_step_max = std::max(e.layer_step_max, layer);
      e.decode_step_max = std::max(e.decode_step_max, decode);
      layer_sum += layer;
      decode_sum += decode;
      ++n;
    }
  }
  e.samples = static_cast<std::int64_t>(checks_.size());
  if (n > 0) {
    e.layer_step_mean = layer_sum / double(n);
    e.decode_step_mean = decode_sum / double(n);
  }
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
         << layers << " layers); give a larger --kv-capacity-gb or a smaller --weight-reserve-gib";
    throw InputError(what.str());
  }
  return static_cast<std::int64_t>(tokens);
}

ReplayResult replay_requests(std::vector<Request> requests, const ReplayConfig& config,
                             const ScenarioTiming& timing, const ReplayProgressFn& progress) {
  validate_config(config);
  Replayer replayer(config, timing);
  return replayer.run(std::move(requests), progress);
}

}  // namespace dcpsim::analysis
