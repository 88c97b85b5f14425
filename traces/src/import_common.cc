#include "import_common.h"

#include <algorithm>
#include <numeric>
#include <sstream>

#include "dcpsim/checked.h"
#include "dcpsim/error.h"
#include "trace_checker.h"

namespace dcpsim::traces {

std::string describe(const ImportStats& s) {
  std::ostringstream out;
  out << "rank " << s.rank << ": " << s.kernels << " kernels, " << s.collectives << " collectives, "
      << s.copies << " copies, " << s.memsets << " memsets, " << s.cpu_events << " CPU events, " << s.ranges
      << " ranges, " << s.flows << " flows over " << static_cast<double>(s.end_ns) * 1e-6 << " ms";
  if (s.skipped > 0) out << " (" << s.skipped << " malformed activities skipped)";
  return out.str();
}

std::string describe_phases(const ImportStats& s) {
  std::ostringstream out;
  if (s.phases.empty()) {
    out << "phases: no kernel belongs to a DCP step phase (see `dcpsim import --help` for the kernel table; "
           "--phase-map adds rules)";
  } else {
    out << "phases:";
    for (std::size_t i = 0; i < s.phases.size(); ++i) {
      out << (i ? ", " : " ") << s.phases[i].first << " x" << s.phases[i].second;
      if (const auto it = s.implementations.find(s.phases[i].first); it != s.implementations.end())
        out << " (" << it->second << ")";
    }
  }
  std::int64_t other = 0;
  std::vector<std::pair<std::int64_t, std::string>> most;
  for (const auto& [name, count] : s.unphased) {
    other += count;
    most.emplace_back(count, name);
  }
  if (other > 0) {
    std::sort(most.begin(), most.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    out << "; " << other << " kernels of no DCP phase (most:";
    for (std::size_t i = 0; i < std::min<std::size_t>(3, most.size()); ++i) {
      std::string name = most[i].second.substr(0, 60);
      out << (i ? ", " : " ") << name << " x" << most[i].first;
    }
    out << ")";
  }
  return out.str();
}

namespace import_common {

void check_scenario(const ImportOptions& options, int rank, const std::filesystem::path& path) {
  TraceChecker checker;
  if (const std::string why = checker.scenario(options.scenario); !why.empty()) {
    throw InputError("importing '" + path.string() + "': " + why);
  }
  if (rank < 0 || rank >= options.scenario.dcp()) {
    throw InputError("importing '" + path.string() + "': rank " + std::to_string(rank) +
                     " is outside the DCP group [0, " + std::to_string(options.scenario.dcp()) +
                     "); give the scenario's --dcp or the --rank");
  }
}

void emit(Collected collected, v1::Header header, const ImportOptions& options, std::int64_t clock_base_ns,
          const std::filesystem::path& path, ImportStats& stats, TraceSink& sink) {
  auto& events = collected.events;
  if (events.empty()) {
    throw InputError("'" + path.string() +
                     "' holds no activity this importer reads (kernels, copies, ranges)");
  }
  // What the trace writer would refuse later (exit 1) is the input's fault: say so here, naming the event.
  constexpr std::int64_t kMaxEventBytes = std::int64_t(1) << 50;  // 1 PiB: no copy or collective is larger
  for (std::size_t i = 0; i < events.size(); ++i) {
    const std::int64_t bytes = events[i].bytes();
    if (bytes < 0 || bytes > kMaxEventBytes) {
      throw InputError("'" + path.string() + "': activity " + std::to_string(i) + " '" +
                       events[i].name().substr(0, 80) + "' moves " + std::to_string(bytes) +
                       " bytes; a size in [0, 2^50] is needed");
    }
  }
  std::int64_t origin = events.front().start_ns();
  for (const auto& e : events) origin = std::min(origin, e.start_ns());

  std::vector<std::size_t> order(events.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const auto& x = events[a];
    const auto& y = events[b];
    if (x.start_ns() != y.start_ns()) return x.start_ns() < y.start_ns();
    if (x.end_ns() != y.end_ns()) return x.end_ns() > y.end_ns();  // enclosing slices first
    return x.lane() < y.lane();
  });
  std::vector<std::uint64_t> id_of(events.size(), 0);
  for (const auto& link : collected.links) id_of[link.from] = id_of[link.to] = 1;
  std::uint64_t next_id = 1;
  for (std::size_t i : order) {
    if (id_of[i] != 0) id_of[i] = next_id++;
  }

  // Step phases of the rank's kernels, in time order (import_phases.h).
  std::vector<v1::Event*> timeline;
  for (std::size_t i : order) timeline.push_back(&events[i]);
  PhaseClassification phases = classify_phases(timeline, options.scenario, stats.rank, options.phase_rules);
  for (const v1::PhaseSummary& p : phases.summaries) stats.phases.emplace_back(p.phase(), p.repetitions());
  stats.unphased = std::move(phases.unmapped);

  header.set_time_origin_ns(
      checked_add(clock_base_ns, origin, "'" + path.string() + "': clock base + first event"));
  stats.time_origin_ns = header.time_origin_ns();
  sink.on_header(header);
  // The implementations the kernels belong to, where the rules name them (import_phases.h): what the
  // simulator's tables are chosen by, and what `validate` names.
  v1::Scenario scenario = options.scenario;
  record_implementations(phases.implementations, scenario);
  stats.implementations = phases.implementations;
  sink.on_scenario(scenario);
  for (std::size_t i : order) {
    v1::Event& e = events[i];
    e.set_start_ns(e.start_ns() - origin);
    e.set_end_ns(e.end_ns() - origin);
    stats.end_ns = std::max(stats.end_ns, e.end_ns());
    if (id_of[i] != 0) e.set_id(id_of[i]);
    sink.on_event(e);
  }
  std::uint64_t flow_id = 1;
  for (const auto& link : collected.links) {
    v1::Flow f;
    f.set_id(flow_id++);
    f.set_from_event(id_of[link.from]);
    f.set_to_event(id_of[link.to]);
    f.set_name(link.name);
    sink.on_flow(f);
  }
  stats.flows = static_cast<std::int64_t>(collected.links.size());
  for (const v1::PhaseSummary& p : phases.summaries) sink.on_phase_summary(p);
  sink.finish();
}

}  // namespace import_common
}  // namespace dcpsim::traces
