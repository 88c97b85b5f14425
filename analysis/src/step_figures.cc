#ifdef DCPSIM_WITH_SIMGRID
#include "dcpsim/analysis/step_figures.h"

#include <algorithm>

#include "dcpsim/models/cost_metrics.h"

namespace dcpsim::analysis {

double phase_longest_s(const sim::StepResult& r, std::string_view phase) {
  double longest = 0.0;
  for (const sim::RankTimeline& t : r.ranks) {
    for (const sim::PhaseSpan& p : t.phases) {
      if (p.name == phase) longest = std::max(longest, p.duration_s());
    }
  }
  return longest;
}

namespace {

bool is_communication(std::string_view phase) {
  return phase == sim::kPhaseQueryGather || phase == sim::kPhaseLseGather || phase == sim::kPhaseCollective ||
         phase == sim::kPhaseLseCollective || phase == sim::kPhasePush || phase == sim::kPhaseWait;
}

// Length of the union of the communication spans minus the union of the compute spans of one rank.
double exposed_communication_s(const sim::RankTimeline& t) {
  std::vector<std::pair<double, int>> edges;  // (time, +1/-1 communication, +2/-2 compute)
  for (const sim::PhaseSpan& p : t.phases) {
    if (!(p.end_s > p.begin_s)) continue;
    const int kind = is_communication(p.name) ? 1 : 2;
    edges.emplace_back(p.begin_s, kind);
    edges.emplace_back(p.end_s, -kind);
  }
  std::sort(edges.begin(), edges.end());
  int comm = 0, compute = 0;
  double exposed = 0.0, last = 0.0;
  for (const auto& [time, kind] : edges) {
    if (comm > 0 && compute == 0) exposed += time - last;
    last = time;
    if (kind == 1 || kind == -1) comm += kind;
    if (kind == 2 || kind == -2) compute += kind / 2;
  }
  return exposed;
}

}  // namespace

double communication_s(const sim::StepResult& r) {
  double busiest = 0.0;
  for (const sim::RankTimeline& t : r.ranks) busiest = std::max(busiest, exposed_communication_s(t));
  return std::min(busiest, r.step_latency_s);
}

StepTiming step_timing(const sim::StepResult& r) {
  return {r.step_latency_s, r.merge_latency_s, communication_s(r)};
}

std::vector<CollectiveBandwidth> collective_bandwidths(const sim::StepResult& r) {
  std::vector<CollectiveBandwidth> out;
  for (const sim::PlannedCollective& c : r.collectives) {
    CollectiveBandwidth b;
    b.phase = c.phase;
    b.collective = std::string(models::to_string(c.plan.collective));
    b.plan = std::string(models::to_string(c.plan.algorithm)) + "/" +
             std::string(models::to_string(c.plan.protocol));
    b.size_bytes = models::nccl_tests_size_bytes(c.plan.collective, c.plan.ranks, c.plan.bytes_per_rank);
    b.time_s = phase_longest_s(r, c.phase);
    if (b.time_s > 0) {
      b.algbw_Bps = models::algbw(b.size_bytes, b.time_s);
      b.busbw_Bps = models::busbw(c.plan.collective, c.plan.ranks, b.size_bytes, b.time_s);
    }
    out.push_back(b);
  }
  return out;
}

}  // namespace dcpsim::analysis
#endif
