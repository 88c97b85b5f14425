// Launch gaps and the query repack's line off measured GPU timelines (timeline_fit.h).
#include "dcpsim/analysis/timeline_fit.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "dcpsim/models/scenario_proto.h"
#include "dcpsim/traces/trace_collector.h"

namespace dcpsim::analysis {
namespace {

namespace v1 = traces::v1;

constexpr int kTlMinPairs = 20;

GapStats tl_stats(std::vector<double> v) {
  GapStats g;
  g.pairs = static_cast<int>(v.size());
  if (v.empty()) return g;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  g.median_s = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  g.p10_s = v[n / 10];
  g.p90_s = v[(9 * n) / 10];
  return g;
}

struct TlSection {
  models::Scenario scenario;
  bool row_stream = false;
  const std::vector<v1::GpuActivity>* activities = nullptr;
};

// Gaps between consecutive kernels of one repetition (all ranks: an emulated step runs on one stream).
void tl_add_gaps(const TlSection& s, double min_first_s, std::vector<double>& out) {
  std::map<int, std::vector<const v1::GpuActivity*>> by_rep;
  for (const v1::GpuActivity& a : *s.activities) by_rep[a.repetition()].push_back(&a);
  for (auto& [rep, v] : by_rep) {
    std::sort(v.begin(), v.end(), [](auto* a, auto* b) { return a->start_ns() < b->start_ns(); });
    for (std::size_t i = 0; i + 1 < v.size(); ++i) {
      const v1::GpuActivity& a = *v[i];
      const v1::GpuActivity& b = *v[i + 1];
      if (a.kind() != v1::GpuActivity::KIND_KERNEL || b.kind() != v1::GpuActivity::KIND_KERNEL) continue;
      const double gap = double(b.start_ns() - a.end_ns()) * 1e-9;
      if (double(a.end_ns() - a.start_ns()) * 1e-9 >= min_first_s && gap >= 0) out.push_back(gap);
    }
  }
}

// (bytes, seconds) of the query repacks of ranks after the first.
void tl_add_repacks(const TlSection& s, std::vector<std::pair<double, double>>& out) {
  const double bytes = 2.0 * s.scenario.rows() * s.scenario.heads * s.scenario.qk_dim *
                       double(models::dtype_bytes(s.scenario.kv_dtype));
  for (const v1::GpuActivity& a : *s.activities) {
    if (a.kind() != v1::GpuActivity::KIND_KERNEL || a.rank() == 0) continue;
    if (a.name().find("repack_q") == std::string::npos) continue;
    out.push_back({bytes, double(a.end_ns() - a.start_ns()) * 1e-9});
  }
}

std::optional<LineFit> tl_line_fit(const std::vector<std::pair<double, double>>& points) {
  std::map<double, int> sizes;
  for (const auto& [x, y] : points) ++sizes[x];
  if (sizes.size() < 2) return std::nullopt;
  double mx = 0, my = 0;
  for (const auto& [x, y] : points) {
    mx += x;
    my += y;
  }
  mx /= double(points.size());
  my /= double(points.size());
  double sxx = 0, sxy = 0;
  for (const auto& [x, y] : points) {
    sxx += (x - mx) * (x - mx);
    sxy += (x - mx) * (y - my);
  }
  const double slope = sxy / sxx;
  if (!(slope > 0)) return std::nullopt;
  LineFit f;
  f.points = static_cast<int>(points.size());
  f.sizes = static_cast<int>(sizes.size());
  f.floor_s = std::max(0.0, my - slope * mx);
  f.bandwidth = 1.0 / slope;
  return f;
}

std::string tl_us(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f us", s * 1e6);
  return buf;
}

}  // namespace

TimelineFit fit_timelines(const std::vector<std::filesystem::path>& paths, double min_first_s) {
  TimelineFit fit;
  std::vector<double> graph, eager;
  std::vector<std::pair<double, double>> repacks;
  for (const std::filesystem::path& path : paths) {
    const traces::Trace trace = traces::read_trace(path);
    for (const traces::TraceSection& ts : trace.sections) {
      if (ts.gpu_activities.empty()) continue;
      TlSection s;
      s.scenario = models::from_proto(ts.scenario);
      s.row_stream = s.scenario.strategy == models::Strategy::kRowStream;
      s.activities = &ts.gpu_activities;
      ++fit.sections;
      if (s.row_stream) continue;
      if (s.scenario.launch == models::LaunchMode::kGraph) tl_add_gaps(s, min_first_s, graph);
      if (s.scenario.launch == models::LaunchMode::kEager) tl_add_gaps(s, min_first_s, eager);
      tl_add_repacks(s, repacks);
    }
  }
  fit.graph = tl_stats(std::move(graph));
  fit.eager = tl_stats(std::move(eager));
  fit.q_repack = tl_line_fit(repacks);
  return fit;
}

std::vector<std::string> apply_timeline_fit(const TimelineFit& fit, models::HardwareProfile& p,
                                            const std::string& what) {
  std::vector<std::string> lines;
  using models::Unit;
  const auto gap_source = [&](const GapStats& g) {
    return "measured on the GPU timeline of " + what +
           ": a kernel's end to the next queued kernel's start, "
           "median of " +
           std::to_string(g.pairs) + " pairs after kernels of 10 us or more (p10 " + tl_us(g.p10_s) +
           ", p90 " + tl_us(g.p90_s) + "; dcpsim hw calibrate)";
  };
  if (fit.graph.pairs >= kTlMinPairs) {
    p.launch.dependent_gap =
        models::quantity_from_si(fit.graph.median_s, Unit::kMicroseconds, gap_source(fit.graph));
    lines.push_back("launch.dependent_gap " + tl_us(fit.graph.median_s) + " (" +
                    std::to_string(fit.graph.pairs) + " pairs)");
  }
  if (fit.eager.pairs >= kTlMinPairs) {
    p.launch.dependent_gap_eager =
        models::quantity_from_si(fit.eager.median_s, Unit::kMicroseconds, gap_source(fit.eager));
    lines.push_back("launch.dependent_gap_eager " + tl_us(fit.eager.median_s) + " (" +
                    std::to_string(fit.eager.pairs) + " pairs)");
  }
  if (fit.q_repack) {
    const LineFit& f = *fit.q_repack;
    const double eff = std::min(1.0, f.bandwidth / p.gpu.hbm_bandwidth_measured.si());
    const std::string src = "least squares over " + std::to_string(f.points) + " query repacks (" +
                            std::to_string(f.sizes) +
                            " sizes) of emulated ranks after the first on the GPU "
                            "timeline of " +
                            what + " (dcpsim hw calibrate)";
    models::MemoryKernelSpec spec;
    spec.floor = models::quantity_from_si(f.floor_s, Unit::kMicroseconds, "the intercept of the " + src);
    spec.hbm_efficiency_max = {eff, Unit::kRatio,
                               "the slope of the " + src + ", over hbm_bandwidth_measured"};
    spec.half_efficiency_bytes = {1, Unit::kKiB,
                                  "the same fit is a straight line (floor + bytes / bandwidth)"};
    p.kernel.per_type[static_cast<std::size_t>(models::MemoryKernel::kQRepack)] = spec;
    char buf[128];
    std::snprintf(buf, sizeof buf, "kernel.q_repack floor %s, %.2f TB/s (%d repacks)",
                  tl_us(f.floor_s).c_str(), f.bandwidth / 1e12, f.points);
    lines.push_back(buf);
  }
  return lines;
}

}  // namespace dcpsim::analysis
