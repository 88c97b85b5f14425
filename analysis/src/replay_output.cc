// The outputs of a replay: statistics (replay_stats.h), the per-step CSV, the CDF CSV, the compact JSON
// summary plots draw, and the printed table.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "dcpsim/analysis/replay.h"
#include "dcpsim/analysis/summary_json.h"
#include "dcpsim/error.h"
#include "dcpsim/json_limits.h"
#include "dcpsim/traces/output_file.h"
#include "replay_stats.h"

namespace dcpsim::analysis {
namespace detail {

void Weighted::sort() {
  if (!sorted_) std::sort(items_.begin(), items_.end());
  sorted_ = true;
}

double Weighted::percentile(double p) {
  if (items_.empty()) return 0.0;
  sort();
  const auto rank =
      std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(p / 100.0 * double(total_))));
  std::int64_t seen = 0;
  for (const auto& [value, weight] : items_) {
    seen += weight;
    if (seen >= rank) return value;
  }
  return items_.back().first;
}

double Weighted::mean() const {
  double sum = 0.0;
  for (const auto& [value, weight] : items_) sum += value * double(weight);
  return total_ > 0 ? sum / double(total_) : 0.0;
}

LatencyStats Weighted::stats() {
  return {percentile(10), percentile(50), percentile(90), percentile(99), percentile(100), mean()};
}

std::vector<std::int64_t> composition_weights(const ReplayResult& r) {
  std::vector<std::int64_t> w(r.timings.size() / std::max<std::size_t>(1, r.strategies.size()), 0);
  for (const ReplayStep& s : r.steps) ++w[static_cast<std::size_t>(s.composition)];
  return w;
}

std::vector<double> non_attention_of(const ReplayResult& r) {
  std::vector<double> out(r.timings.size() / std::max<std::size_t>(1, r.strategies.size()), 0.0);
  for (const ReplayStep& s : r.steps) out[static_cast<std::size_t>(s.composition)] = s.non_attention_s;
  return out;
}

double decode_step_of(const ReplayResult& r, std::size_t c, std::size_t k, const std::vector<double>& na) {
  return r.layers * r.timings[c * r.strategies.size() + k].step_s + na[c];
}

std::vector<StrategySummary> summarise(const ReplayResult& r) {
  std::vector<StrategySummary> out;
  if (r.steps.empty()) return out;
  const std::vector<std::int64_t> weight = composition_weights(r);
  const std::vector<double> na = non_attention_of(r);
  const std::size_t n = r.strategies.size();
  for (std::size_t k = 0; k < n; ++k) {
    Weighted decode, step, merge, comm;
    double merge_sum = 0, comm_sum = 0, step_sum = 0, decode_sum = 0;
    for (std::size_t c = 0; c < weight.size(); ++c) {
      if (weight[c] == 0) continue;
      const StepTiming& t = r.timings[c * n + k];
      const double d = decode_step_of(r, c, k, na);
      decode.add(d, weight[c]);
      step.add(t.step_s, weight[c]);
      merge.add(t.merge_s, weight[c]);
      comm.add(t.comm_s, weight[c]);
      const auto w = double(weight[c]);
      merge_sum += w * t.merge_s;
      comm_sum += w * t.comm_s;
      step_sum += w * t.step_s;
      decode_sum += w * d;
    }
    StrategySummary s;
    s.strategy = r.strategies[k];
    s.decode_step = decode.stats();
    s.layer_step = step.stats();
    s.layer_merge = merge.stats();
    s.layer_comm = comm.stats();
    s.merge_share = merge_sum / step_sum;
    s.comm_share = comm_sum / step_sum;
    s.attention_share = r.layers * step_sum / decode_sum;
    out.push_back(s);
  }
  return out;
}

}  // namespace detail

namespace {

void put(std::string& out, double v, int decimals) {
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, decimals);
  out.append(buf, res.ptr);
}

void put(std::string& out, std::int64_t v) {
  char buf[32];
  const auto res = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, res.ptr);
}

std::string name(models::Strategy s) {
  return std::string(models::to_string(s));
}

nlohmann::json stats_json(const LatencyStats& s, double scale) {
  return {{"p10", s.p10 * scale}, {"p50", s.p50 * scale}, {"p90", s.p90 * scale},
          {"p99", s.p99 * scale}, {"max", s.max * scale}, {"mean", s.mean * scale}};
}

// Per band of the replayed time: weighted percentiles of the steps that start in it.
nlohmann::json bands_json(const ReplayResult& r, int bands) {
  const std::size_t n = r.strategies.size();
  const std::vector<double> na = detail::non_attention_of(r);
  const double t0 = r.steps.front().time_s;
  const double span = std::max(r.batcher.end_s - t0, 1e-9);
  const double width = span / bands;
  nlohmann::json j;
  j["bin_s"] = width;
  std::vector<double> starts;
  std::vector<nlohmann::json> steps, rows_p50, rows_max, max_context;
  struct Series {
    std::vector<nlohmann::json> p10, p50, p90, max;
  };
  std::vector<Series> decode(n), merge(n);
  std::size_t i = 0;
  for (int b = 0; b < bands; ++b) {
    const double end = b + 1 == bands ? r.batcher.end_s + 1.0 : t0 + width * (b + 1);
    std::vector<std::pair<std::int32_t, std::int64_t>> runs;  // (composition, steps), consecutive runs
    std::int64_t count = 0, longest = 0;
    detail::Weighted rows;
    for (; i < r.steps.size() && r.steps[i].time_s < end; ++i) {
      const ReplayStep& s = r.steps[i];
      if (runs.empty() || runs.back().first != s.composition) runs.emplace_back(s.composition, 0);
      ++runs.back().second;
      ++count;
      longest = std::max(longest, s.max_context);
      rows.add(s.rows, 1);
    }
    starts.push_back(t0 + width * b);
    steps.emplace_back(count);
    if (count == 0) {
      for (auto* v : {&rows_p50, &rows_max, &max_context}) v->emplace_back(nullptr);
      for (std::size_t k = 0; k < n; ++k) {
        for (Series* s : {&decode[k], &merge[k]}) {
          s->p10.emplace_back(nullptr), s->p50.emplace_back(nullptr), s->p90.emplace_back(nullptr),
              s->max.emplace_back(nullptr);
        }
      }
      continue;
    }
    rows_p50.emplace_back(rows.percentile(50));
    rows_max.emplace_back(rows.percentile(100));
    max_context.emplace_back(longest);
    for (std::size_t k = 0; k < n; ++k) {
      detail::Weighted d, m;
      for (const auto& [c, w] : runs) {
        d.add(detail::decode_step_of(r, static_cast<std::size_t>(c), k, na) * 1e6, w);
        m.add(r.timings[static_cast<std::size_t>(c) * n + k].merge_s * 1e6, w);
      }
      for (auto [s, x] : {std::pair{&decode[k], &d}, std::pair{&merge[k], &m}}) {
        s->p10.emplace_back(x->percentile(10));
        s->p50.emplace_back(x->percentile(50));
        s->p90.emplace_back(x->percentile(90));
        s->max.emplace_back(x->percentile(100));
      }
    }
  }
  j["time_s"] = starts;
  j["steps"] = steps;
  j["rows_p50"] = rows_p50;
  j["rows_max"] = rows_max;
  j["max_context"] = max_context;
  for (std::size_t k = 0; k < n; ++k) {
    for (auto [key, s] : {std::pair{"decode_step_us", &decode[k]}, std::pair{"layer_merge_us", &merge[k]}}) {
      j[name(r.strategies[k])][key] = {{"p10", s->p10}, {"p50", s->p50}, {"p90", s->p90}, {"max", s->max}};
    }
  }
  return j;
}

}  // namespace

std::string steps_csv(const ReplayResult& r) {
  const std::size_t n = r.strategies.size();
  std::string out = "step,time_s,rows,admitted,sum_context,max_context,kv_tokens_max,non_attention_us";
  for (const auto s : r.strategies) {
    out += ",step_us_" + name(s) + ",layer_step_us_" + name(s) + ",layer_merge_us_" + name(s);
  }
  out += '\n';
  out.reserve(out.size() + r.steps.size() * (60 + 36 * n));
  for (const ReplayStep& s : r.steps) {
    put(out, s.step);
    out += ',';
    put(out, s.time_s, 9);
    for (const std::int64_t v :
         {std::int64_t{s.rows}, s.admitted, s.sum_context, s.max_context, s.kv_tokens_max}) {
      out += ',';
      put(out, v);
    }
    out += ',';
    put(out, s.non_attention_s * 1e6, 3);
    for (std::size_t k = 0; k < n; ++k) {
      const StepTiming& t = r.timing(s, k);
      out += ',';
      put(out, r.decode_step_s(s, k) * 1e6, 3);
      out += ',';
      put(out, t.step_s * 1e6, 3);
      out += ',';
      put(out, t.merge_s * 1e6, 3);
    }
    out += '\n';
  }
  return out;
}

void write_steps_csv(const ReplayResult& result, const std::filesystem::path& path) {
  traces::write_file_atomically(path, steps_csv(result));
}

std::string cdf_csv(const ReplayResult& r) {
  const std::size_t n = r.strategies.size();
  std::string out = "quantile";
  for (const auto s : r.strategies) {
    out += ",step_us_" + name(s) + ",layer_step_us_" + name(s) + ",layer_merge_us_" + name(s);
  }
  out += '\n';
  const std::vector<std::int64_t> weight = detail::composition_weights(r);
  const std::vector<double> na = detail::non_attention_of(r);
  std::vector<detail::Weighted> figures(3 * n);
  for (std::size_t c = 0; c < weight.size(); ++c) {
    for (std::size_t k = 0; k < n; ++k) {
      figures[3 * k].add(detail::decode_step_of(r, c, k, na), weight[c]);
      figures[3 * k + 1].add(r.timings[c * n + k].step_s, weight[c]);
      figures[3 * k + 2].add(r.timings[c * n + k].merge_s, weight[c]);
    }
  }
  for (int q = 0; q <= 100; ++q) {
    put(out, q / 100.0, 2);
    for (auto& f : figures) {
      out += ',';
      put(out, f.percentile(q) * 1e6, 3);
    }
    out += '\n';
  }
  return out;
}

nlohmann::json replay_units() {
  return {{"*_us", "microseconds"},
          {"decode_step_us", "one decode step: every layer's attention + the non-attention time"},
          {"layer_step_us, layer_merge_us, layer_comm_us",
           "one attention layer: query all-gather, attention, merge"},
          {"*_share", "fractions: merge and comm of the attention layer, attention of the decode step"},
          {"cdf", "one value per quantile of cdf_quantiles (nearest rank over every step)"},
          {"bands", "one value (or null) per bin of bands.time_s"}};
}

std::string summary_json(const ReplayResult& r, const std::string& about_json, int bands,
                         const Layout* layout) {
  nlohmann::json j = parse_json_checked<nlohmann::json>(about_json.empty() ? "{}" : about_json, "summary");
  if (!j.contains("schema"))
    j.update(summary_document("replay", j.value("profile", ""), j.value("model", "")));
  j["units"] = replay_units();
  j["layers"] = r.layers;
  j["steps"] = r.batcher.steps;
  j["replayed_s"] = r.steps.empty() ? 0.0 : r.batcher.end_s - r.steps.front().time_s;
  j["wall_s"] = r.wall_s;
  j["jobs"] = r.jobs;
  j["compositions"] = r.compositions;
  j["simulations"] = r.simulations;
  j["clock_strategy"] = name(r.strategies.front());
  j["bucketing"] = {{"tokens", r.bucket_tokens},
                    {"samples", r.bucketing.samples},
                    {"layer_step_max_rel_err", r.bucketing.layer_step_max},
                    {"layer_step_mean_rel_err", r.bucketing.layer_step_mean},
                    {"decode_step_max_rel_err", r.bucketing.decode_step_max},
                    {"decode_step_mean_rel_err", r.bucketing.decode_step_mean}};
  Layout fallback;
  fallback.tp = j.value("tp", 1);
  fallback.dcp = j.value("dcp", 1);
  const Layout& l = layout != nullptr ? *layout : fallback;
  j["strategies"] = nlohmann::json::array();
  for (const auto s : r.strategies) j["strategies"].push_back(strategy_entry(s, l, replay_units()));
  if (r.steps.empty()) return j.dump(1) + "\n";
  std::vector<double> p50;
  for (std::size_t k = 0; k < r.summaries.size(); ++k) {
    const StrategySummary& s = r.summaries[k];
    j["strategies"][k]["percentiles"] = {{"decode_step_us", stats_json(s.decode_step, 1e6)},
                                         {"layer_step_us", stats_json(s.layer_step, 1e6)},
                                         {"layer_merge_us", stats_json(s.layer_merge, 1e6)},
                                         {"layer_comm_us", stats_json(s.layer_comm, 1e6)},
                                         {"merge_share", s.merge_share},
                                         {"comm_share", s.comm_share},
                                         {"attention_share", s.attention_share}};
    p50.push_back(s.decode_step.p50);
  }
  const std::size_t n = r.strategies.size();
  const std::vector<std::int64_t> weight = detail::composition_weights(r);
  const std::vector<double> na = detail::non_attention_of(r);
  std::vector<double> quantiles;
  for (int q = 0; q <= 100; ++q) quantiles.push_back(q / 100.0);
  j["cdf_quantiles"] = quantiles;
  for (std::size_t k = 0; k < n; ++k) {
    detail::Weighted decode, merge;
    for (std::size_t c = 0; c < weight.size(); ++c) {
      decode.add(detail::decode_step_of(r, c, k, na) * 1e6, weight[c]);
      merge.add(r.timings[c * n + k].merge_s * 1e6, weight[c]);
    }
    std::vector<double> d, m;
    for (int q = 0; q <= 100; ++q) d.push_back(decode.percentile(q)), m.push_back(merge.percentile(q));
    j["strategies"][k]["cdf"] = {{"decode_step_us", d}, {"layer_merge_us", m}};
  }
  nlohmann::json b = bands_json(r, std::max(1, bands));
  for (std::size_t k = 0; k < n; ++k) {
    j["strategies"][k]["bands"] = b[name(r.strategies[k])];
    b.erase(name(r.strategies[k]));
  }
  j["bands"] = b;
  j["fastest"] = fastest_json(r.strategies, p50, false);
  if (!j["fastest"].is_null()) j["fastest"]["by"] = "p50 of the decode step";
  return j.dump(1) + "\n";
}

std::string replay_summary(const ReplayResult& r) {
  const BatcherStats& b = r.batcher;
  std::string out;
  char line[512];
  const double replayed = r.steps.empty() ? 0.0 : b.end_s - r.steps.front().time_s;
  std::snprintf(
      line, sizeof line,
      "replay: %lld steps over %.3f s of trace in %.1f s (%.0fx the trace's time, %d process%s); requests: "
      "%lld considered, %lld admitted, %lld finished, %lld rejected (larger than a GPU's KV), %lld "
      "unfinished\n",
      static_cast<long long>(b.steps), replayed, r.wall_s, r.wall_s > 0 ? replayed / r.wall_s : 0.0, r.jobs,
      r.jobs > 1 ? "es" : "", static_cast<long long>(b.requests), static_cast<long long>(b.admitted),
      static_cast<long long>(b.finished), static_cast<long long>(b.rejected),
      static_cast<long long>(b.unfinished));
  out += line;
  std::snprintf(line, sizeof line,
                "load: peak %lld of %d rows; peak %lld of %lld KV tokens per GPU (%d layers)\n",
                static_cast<long long>(b.peak_rows), r.max_rows, static_cast<long long>(b.peak_kv_tokens),
                static_cast<long long>(r.kv_capacity_tokens), r.layers);
  out += line;
  std::snprintf(
      line, sizeof line,
      "reuse: %lld compositions timed for %lld steps (%lld simulations); rows timed within %d tokens "
      "of their context (--kv-block %d)\n",
      static_cast<long long>(r.compositions), static_cast<long long>(b.steps),
      static_cast<long long>(r.simulations), r.bucket_tokens / 2, r.bucket_tokens);
  out += line;
  if (r.bucketing.samples > 0) {
    std::snprintf(
        line, sizeof line,
        "bucketing error on %lld compositions also timed exactly: layer step max %.3f%%, mean %.4f%%; "
        "decode step max %.3f%%, mean %.4f%%\n",
        static_cast<long long>(r.bucketing.samples), 100 * r.bucketing.layer_step_max,
        100 * r.bucketing.layer_step_mean, 100 * r.bucketing.decode_step_max,
        100 * r.bucketing.decode_step_mean);
    out += line;
  }
  if (r.summaries.empty()) return out + "no step ran\n";
  std::snprintf(line, sizeof line, "per decode step (%d layers + non-attention), ms%s\n", r.layers,
                r.strategies.size() > 1 ? ("   (clock: " + name(r.strategies.front()) + ")").c_str() : "");
  out += line;
  // Strategy names up to 14 characters (flashinfer-a2a).
  out += "  strategy             p10      p50      p90      p99      max   attention share\n";
  for (const StrategySummary& s : r.summaries) {
    std::snprintf(line, sizeof line, "  %-14s %8.3f %8.3f %8.3f %8.3f %8.3f   %6.1f %%\n",
                  name(s.strategy).c_str(), s.decode_step.p10 * 1e3, s.decode_step.p50 * 1e3,
                  s.decode_step.p90 * 1e3, s.decode_step.p99 * 1e3, s.decode_step.max * 1e3,
                  100 * s.attention_share);
    out += line;
  }
  out += "per attention layer, us\n";
  out +=
      "  strategy        step p50  step p99   merge p10  merge p50  merge p90  merge p99  merge max   merge "
      "share  comm share\n";
  for (const StrategySummary& s : r.summaries) {
    std::snprintf(line, sizeof line,
                  "  %-14s %9.2f %9.2f  %10.2f %10.2f %10.2f %10.2f %10.2f   %8.1f %%  %8.1f %%\n",
                  name(s.strategy).c_str(), s.layer_step.p50 * 1e6, s.layer_step.p99 * 1e6,
                  s.layer_merge.p10 * 1e6, s.layer_merge.p50 * 1e6, s.layer_merge.p90 * 1e6,
                  s.layer_merge.p99 * 1e6, s.layer_merge.max * 1e6, 100 * s.merge_share, 100 * s.comm_share);
    out += line;
  }
  std::vector<double> p50;
  for (const StrategySummary& s : r.summaries) p50.push_back(s.decode_step.p50);
  const auto pick = pick_fastest(r.strategies, p50, false);
  const auto any = pick_fastest(r.strategies, p50, true);
  if (pick) {
    out += "fastest production strategy by the p50 decode step: " + name(r.strategies[*pick]) + " (" +
           engine_text(r.strategies[*pick]) + ")\n";
  }
  if (any && (!pick || *any != *pick)) {
    std::snprintf(line, sizeof line, "%s is faster (p50 %.3f ms) but a research strategy: never the pick\n",
                  name(r.strategies[*any]).c_str(), r.summaries[*any].decode_step.p50 * 1e3);
    out += line;
  }
  return out;
}

}  // namespace dcpsim::analysis
