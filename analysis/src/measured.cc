// Reading traces into the per-phase figures calibrate and validate compare.
#include "dcpsim/analysis/measured.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "dcpsim/analysis/phase_map.h"
#include "dcpsim/error.h"
#include "dcpsim/models/scenario_proto.h"
#include "dcpsim/traces/trace_collector.h"

namespace dcpsim::analysis {
namespace {

constexpr double kNs = 1e-9;

std::string file_name(const std::filesystem::path& p) {
  return p.string();
}

void check_duration(double ns, const std::string& where, const std::string& what) {
  if (!std::isfinite(ns) || ns < 0) {
    throw InputError(where + ": " + what + " is " + std::to_string(ns) + " ns; a finite time >= 0 is needed");
  }
}

std::vector<MeasuredPhase> read_phases(const traces::TraceSection& s, traces::v1::Source source,
                                       const std::string& where) {
  std::vector<MeasuredPhase> per_rank, all_ranks;
  for (const auto& ps : s.phase_summaries) {
    const std::string what = "phase '" + ps.phase() + "' rank " + std::to_string(ps.rank());
    const std::optional<std::vector<std::string>> sim_phases = map_phase(ps.phase(), source, where);
    if (!sim_phases) continue;
    if (ps.rank() < -1 || ps.rank() >= s.scenario.dcp()) {
      throw InputError(where + ": " + what + ": rank out of range (-1 for all ranks, or 0.." +
                       std::to_string(s.scenario.dcp() - 1) + ")");
    }
    check_duration(ps.median_ns(), where, what + " median");
    MeasuredPhase m{ps.rank(),         ps.phase(),           figure_name(*sim_phases),
                    *sim_phases,       ps.median_ns() * kNs, ps.min_ns() * kNs,
                    ps.max_ns() * kNs, ps.repetitions()};
    (ps.rank() < 0 ? all_ranks : per_rank).push_back(std::move(m));
  }
  // A phase a rank ran in several pieces (or under two names that map to one simulator phase) is compared as
  // their sum, as the prediction sums the simulator's spans of that phase.
  std::vector<MeasuredPhase> merged;
  std::set<std::pair<int, std::string>> seen;
  for (MeasuredPhase& m : per_rank) {
    auto it = std::find_if(merged.begin(), merged.end(),
                           [&](const MeasuredPhase& x) { return x.rank == m.rank && x.phase == m.phase; });
    if (it == merged.end()) {
      seen.emplace(m.rank, m.phase);
      merged.push_back(std::move(m));
      continue;
    }
    it->median_s += m.median_s;
    it->min_s += m.min_s;
    it->max_s += m.max_s;
    it->measured_name += "+" + m.measured_name;
  }
  per_rank = std::move(merged);
  for (MeasuredPhase& m : all_ranks) {
    const bool has_rank_figures = std::any_of(per_rank.begin(), per_rank.end(),
                                              [&](const MeasuredPhase& r) { return r.phase == m.phase; });
    if (!has_rank_figures && seen.emplace(-1, m.phase).second) per_rank.push_back(std::move(m));
  }
  return per_rank;
}

std::vector<MeasuredRow> read_rows(const traces::TraceSection& s, const std::string& where) {
  std::vector<MeasuredRow> rows;
  if (s.row_results.empty()) return rows;
  // Row times are on the trace's clock; the step starts with the section's first event.
  double origin_ns = 0;
  if (!s.events.empty()) {
    origin_ns = double(std::numeric_limits<int64_t>::max());
    for (const auto& e : s.events) origin_ns = std::min(origin_ns, double(e.start_ns()));
  }
  const int n_rows = s.scenario.contexts_size();
  const int padded = std::max(0, s.scenario.padded_rows());
  for (const auto& r : s.row_results) {
    if (r.row() < 0 || r.row() >= n_rows + padded || r.rank() < 0 || r.rank() >= s.scenario.dcp()) {
      throw InputError(where + ": row result for row " + std::to_string(r.row()) + " rank " +
                       std::to_string(r.rank()) + " is outside the scenario's " + std::to_string(n_rows) +
                       " rows (+" + std::to_string(padded) + " padding) and " +
                       std::to_string(s.scenario.dcp()) + " ranks");
    }
    if (r.row() >= n_rows) continue;  // CUDA-graph padding: masked like an empty shard, nothing to compare
    rows.push_back({r.row(), r.rank(), (double(r.lse_ready_ns()) - origin_ns) * kNs,
                    (double(r.output_ready_ns()) - origin_ns) * kNs});
  }
  return rows;
}

// MeasuredPhase::largest_inner_gap_s of every phase from the section's GPU activities.
void add_inner_gaps(const traces::TraceSection& s, std::vector<MeasuredPhase>& phases) {
  // (rank, runner phase, repetition) -> its activities' [start, end], in ns.
  std::map<std::tuple<int, std::string, int>, std::vector<std::pair<std::int64_t, std::int64_t>>> spans;
  for (const auto& a : s.gpu_activities)
    spans[{a.rank(), a.phase(), a.repetition()}].push_back({a.start_ns(), a.end_ns()});
  std::map<std::pair<int, std::string>, std::vector<double>> gaps;  // per repetition
  for (auto& [key, v] : spans) {
    std::sort(v.begin(), v.end());
    double largest = 0.0;
    std::int64_t busy_until = v.front().second;
    for (std::size_t i = 1; i < v.size(); ++i) {
      largest = std::max(largest, double(v[i].first - busy_until));
      busy_until = std::max(busy_until, v[i].second);
    }
    gaps[{std::get<0>(key), std::get<1>(key)}].push_back(largest * kNs);
  }
  for (MeasuredPhase& m : phases) {
    // A figure summed from several runner phases ("a+b", read_phases): the largest of theirs.
    std::size_t from = 0;
    while (from <= m.measured_name.size()) {
      const std::size_t plus = std::min(m.measured_name.find('+', from), m.measured_name.size());
      const auto it = gaps.find({m.rank, m.measured_name.substr(from, plus - from)});
      from = plus + 1;
      if (it == gaps.end()) continue;
      std::vector<double>& g = it->second;
      std::nth_element(g.begin(), g.begin() + g.size() / 2, g.end());
      m.largest_inner_gap_s = std::max(m.largest_inner_gap_s, g[g.size() / 2]);
    }
  }
}

MeasuredSection read_section(const std::filesystem::path& path, int index, traces::v1::Source source,
                             const traces::TraceSection& s) {
  MeasuredSection out;
  out.trace = path;
  out.index = index;
  out.source = source;
  try {
    out.scenario = models::from_proto(s.scenario);
    // The runner records which attention kernels ran; the simulator prices attention from their table.
    if (const auto it = s.scenario.params().find("attention"); it != s.scenario.params().end())
      out.scenario.attention_impl = it->second;
    if (const auto it = s.scenario.params().find("merge"); it != s.scenario.params().end())
      out.scenario.merge_impl = it->second;
    for (const auto& [key, value] : s.scenario.params())
      if (key.rfind("impl.", 0) == 0) out.implementations[key.substr(5)] = value;
    if (const auto it = s.scenario.params().find("row_stamps"); it != s.scenario.params().end())
      out.row_stamps = it->second == "on";
    // The runner records `timing` since it learned CUPTI (2026-12-01); its real multi-GPU runs before that
    // were timed with an event pair around each phase.
    const auto timing = s.scenario.params().find("timing");
    out.event_timed =
        timing != s.scenario.params().end() ? timing->second == "events" : source == traces::v1::SOURCE_HW;
    out.label = out.scenario.label();
    out.scenario.validate();
  } catch (const InputError& e) {
    if (out.label.empty()) out.label = traces::describe(s.scenario);
    throw InputError(out.where() + ": " + e.what());
  }
  const std::string where = out.where();
  if (s.phase_summaries.empty()) {
    throw InputError(where +
                     ": no phase summaries (calibrate and validate compare per-phase medians; a trace "
                     "from `dcpsim simulate` or `dcpsim hw run` has them)");
  }
  out.phases = read_phases(s, source, where);
  add_inner_gaps(s, out.phases);
  out.rows = read_rows(s, where);
  if (!s.summaries.empty() && s.summaries.back().step_latency_ns() > 0) {
    check_duration(s.summaries.back().step_latency_ns(), where, "step latency");
    out.step_s = s.summaries.back().step_latency_ns() * kNs;
  }
  return out;
}

}  // namespace

std::string MeasuredSection::where() const {
  return file_name(trace) + "#" + std::to_string(index) + " (" + label + ")";
}

MeasuredTrace load_measured(const std::filesystem::path& path) {
  traces::Trace trace = traces::read_trace(path);
  MeasuredTrace out;
  out.path = path;
  if (!trace.header) {
    throw InputError(file_name(path) +
                     ": no header record, so the trace's source (sim, hw or emulated) is unknown");
  }
  out.header = *trace.header;
  const traces::v1::Source source = out.header.source();
  if (source != traces::v1::SOURCE_SIM && source != traces::v1::SOURCE_HW &&
      source != traces::v1::SOURCE_EMULATED) {
    throw InputError(file_name(path) + ": header source is '" + std::string(traces::to_string(source)) +
                     "'; sim, hw or emulated is needed");
  }
  if (trace.sections.empty())
    throw InputError(file_name(path) + ": no scenario sections (nothing was measured)");
  for (std::size_t i = 0; i < trace.sections.size(); ++i) {
    out.sections.push_back(read_section(path, static_cast<int>(i), source, trace.sections[i]));
  }
  return out;
}

std::vector<MeasuredSection> all_sections(const std::vector<MeasuredTrace>& traces) {
  std::vector<MeasuredSection> out;
  for (const MeasuredTrace& t : traces) out.insert(out.end(), t.sections.begin(), t.sections.end());
  return out;
}

}  // namespace dcpsim::analysis
