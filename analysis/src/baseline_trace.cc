// A baseline's decode steps measured in the user's own profiler trace (baseline_trace.h).
#include "dcpsim/analysis/baseline_trace.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <utility>
#include <vector>

#include "dcpsim/error.h"
#include "dcpsim/models/scenario_proto.h"
#include "dcpsim/traces/import_kineto.h"
#include "dcpsim/traces/import_nsys.h"

namespace dcpsim::analysis {
namespace {

using Interval = std::pair<std::int64_t, std::int64_t>;  // [start, end) in ns

bool gpu_work(const traces::v1::Event& e) {
  const auto k = e.kind();
  return (k == traces::v1::EVENT_KIND_KERNEL || k == traces::v1::EVENT_KIND_COPY ||
          k == traces::v1::EVENT_KIND_COLLECTIVE) &&
         e.lane().rfind("cpu", 0) != 0 && e.lane().rfind("nvtx", 0) != 0 && e.end_ns() > e.start_ns();
}

std::string event_phase(const traces::v1::Event& e) {
  const auto it = e.args().find("phase");
  return it == e.args().end() ? std::string() : it->second;
}

// Sorted disjoint union of intervals (sorted by start on input).
std::vector<Interval> union_of(const std::vector<Interval>& in) {
  std::vector<Interval> out;
  for (const Interval& i : in) {
    if (!out.empty() && i.first <= out.back().second) {
      out.back().second = std::max(out.back().second, i.second);
    } else {
      out.push_back(i);
    }
  }
  return out;
}

// Length of the union `u` inside [t0, t1).
double covered_in(const std::vector<Interval>& u, std::int64_t t0, std::int64_t t1) {
  auto it = std::upper_bound(u.begin(), u.end(), t0,
                             [](std::int64_t t, const Interval& i) { return t < i.second; });
  double sum = 0;
  for (; it != u.end() && it->first < t1; ++it)
    sum += double(std::min(t1, it->second) - std::max(t0, it->first));
  return sum;
}

// The longest stretch inside [t0, t1) that `busy` leaves idle.
double longest_idle_in(const std::vector<Interval>& busy, std::int64_t t0, std::int64_t t1) {
  std::int64_t at = t0;
  double longest = 0;
  auto it = std::upper_bound(busy.begin(), busy.end(), t0,
                             [](std::int64_t t, const Interval& i) { return t < i.second; });
  for (; it != busy.end() && it->first < t1; ++it) {
    longest = std::max(longest, double(it->first - at));
    at = std::max(at, it->second);
  }
  return std::max(longest, double(t1 - at));
}

double step_quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double pos = q * double(v.size() - 1);
  const std::size_t lo = static_cast<std::size_t>(pos);
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - double(lo)) * (v[hi] - v[lo]);
}

bool name_ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

std::string TraceSteps::text() const {
  char b[512];
  std::snprintf(
      b, sizeof b,
      "%d decode steps (%d attention layers each) in %s: %.3f ms = attention %.3f + DCP merge %.3f + "
      "other kernels %.3f + GPU idle %.3f ms (medians; step spread %.0f%%)",
      steps, layers, path.c_str(), period_s * 1e3, attention_s * 1e3, merge_s * 1e3, other_s * 1e3,
      idle_s * 1e3, 100.0 * period_spread);
  return b;
}

TraceSteps measure_trace_steps(const traces::Trace& trace, int layers, const std::string& where) {
  if (layers < 1) throw InputError(where + ": layers per decode step must be >= 1");
  if (trace.sections.empty()) throw InputError(where + ": the trace holds no events");
  const auto& events = trace.sections.front().events;
  int rank = std::numeric_limits<int>::max();
  for (const auto& e : events)
    if (gpu_work(e)) rank = std::min(rank, e.rank());
  struct GpuEvent {
    Interval at;
    bool attention = false;
  };
  std::vector<GpuEvent> gpu;
  std::vector<Interval> all, attention, phased_in;
  for (const auto& e : events) {
    if (!gpu_work(e) || e.rank() != rank) continue;
    const std::string phase = event_phase(e);
    gpu.push_back({{e.start_ns(), e.end_ns()}, phase == "attention"});
  }
  std::sort(gpu.begin(), gpu.end(),
            [](const GpuEvent& a, const GpuEvent& b) { return a.at.first < b.at.first; });
  for (const auto& e : events) {
    if (!gpu_work(e) || e.rank() != rank || event_phase(e).empty()) continue;
    phased_in.push_back({e.start_ns(), e.end_ns()});  // attention and the DCP merge phases
  }
  std::sort(phased_in.begin(), phased_in.end());
  // Attention occurrences: an attention kernel and the attention kernels right after it (its split-KV
  // combine), with no other GPU work between them.
  std::vector<Interval> occ;
  bool previous_attention = false;
  for (const GpuEvent& g : gpu) {
    all.push_back(g.at);
    if (g.attention) {
      attention.push_back(g.at);
      if (previous_attention) {
        occ.back().second = std::max(occ.back().second, g.at.second);
      } else {
        occ.push_back(g.at);
      }
    }
    previous_attention = g.attention;
  }
  const std::vector<Interval> busy = union_of(all), attn = union_of(attention), phased = union_of(phased_in);
  TraceSteps out;
  out.path = where;
  out.rank = rank == std::numeric_limits<int>::max() ? 0 : rank;
  out.layers = layers;
  out.occurrences = static_cast<int>(occ.size());
  const int n = out.occurrences;
  if (n < 2 * layers + 1) {
    throw InputError(
        where + ": " + std::to_string(n) + " attention kernels found; measuring decode steps of " +
        std::to_string(layers) + " attention layers needs at least " + std::to_string(2 * layers + 1) +
        " (two whole steps; the importers know vLLM's, FlashInfer's, FlashMLA's and FlashAttention's "
        "kernel names, --phase-map on dcpsim import adds others)");
  }
  // The step boundary: the offset whose step starts follow the longest idle stretches.
  int offset = 0;
  double best = -1;
  for (int o = 0; o < layers; ++o) {
    double score = 0;
    for (int i = o + layers; i < n; i += layers)
      score += longest_idle_in(busy, occ[i - 1].second, occ[i].first);
    if (score > best) best = score, offset = o;
  }
  std::vector<double> period, busy_s, attention_s, phased_s;
  for (int i = offset; i + layers < n; i += layers) {
    const std::int64_t t0 = occ[i].first, t1 = occ[i + layers].first;
    period.push_back(double(t1 - t0));
    busy_s.push_back(covered_in(busy, t0, t1));
    attention_s.push_back(covered_in(attn, t0, t1));
    phased_s.push_back(covered_in(phased, t0, t1));
  }
  out.steps = static_cast<int>(period.size());
  if (out.steps < 2)
    throw InputError(where + ": fewer than two whole decode steps of " + std::to_string(layers) +
                     " attention layers in the trace");
  std::vector<double> other, merge, idle;
  for (std::size_t k = 0; k < period.size(); ++k) {
    merge.push_back(phased_s[k] - attention_s[k]);
    other.push_back(busy_s[k] - phased_s[k]);
    idle.push_back(period[k] - busy_s[k]);
  }
  out.period_s = step_quantile(period, 0.5) * 1e-9;
  out.busy_s = step_quantile(busy_s, 0.5) * 1e-9;
  out.attention_s = step_quantile(attention_s, 0.5) * 1e-9;
  out.merge_s = step_quantile(merge, 0.5) * 1e-9;
  out.other_s = step_quantile(other, 0.5) * 1e-9;
  out.idle_s = step_quantile(idle, 0.5) * 1e-9;
  out.period_spread = (step_quantile(period, 0.9) - step_quantile(period, 0.1)) / step_quantile(period, 0.5);
  return out;
}

TraceSteps baseline_trace_steps(const std::filesystem::path& path, const models::Scenario& scenario,
                                int layers) {
  const std::string name = path.filename().string();
  traces::Trace trace;
  if (name_ends_with(name, ".pb") || name_ends_with(name, ".pb.gz")) {
    trace = traces::read_trace(path);
  } else {
    traces::ImportOptions options;
    options.scenario = models::to_proto(scenario);
    options.rank = 0;  // one GPU's timeline, filed as rank 0 of the stated layout
    options.flows = false;
    options.nvtx = false;
    traces::TraceCollector collector;
    if (name_ends_with(name, ".sqlite") || name_ends_with(name, ".sqlite.gz")) {
      traces::import_nsys(path, collector, options);
    } else {
      traces::import_kineto(path, collector, options);
    }
    trace = collector.take();
  }
  return measure_trace_steps(trace, layers, path.string());
}

}  // namespace dcpsim::analysis
