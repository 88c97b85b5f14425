#include "trace_output.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "dcpsim/models/scenario_proto.h"
#include "dcpsim/sim/simulator.h"
#include "dcpsim/traces/provenance.h"

namespace dcpsim::sim {
namespace detail {
namespace {

namespace v1 = traces::v1;

std::int64_t ns(double seconds) {
  return std::llround(seconds * 1e9);
}

std::string describe(const models::CollectivePlan& plan) {
  return std::string(models::to_string(plan.algorithm)) + "/" +
         std::string(models::to_string(plan.protocol)) + ", " + std::to_string(plan.steps) + " steps";
}

v1::Scenario scenario_record(const StepResult& result) {
  v1::Scenario s = models::to_proto(result.scenario);
  s.set_name(result.scenario.label());
  (*s.mutable_params())["profile"] = result.profile;
  for (const PlannedCollective& c : result.collectives)
    (*s.mutable_params())["plan." + c.phase] = describe(c.plan);
  // Which kernel times were measured (a profile table) and which analytic (extrapolated).
  (*s.mutable_params())["kernel_figures"] = result.kernel_figures_text();
  return s;
}

v1::Event transfer_event(const ActivityGraph& g, const TransferSpan& t) {
  const bool to_switch = t.to_rank < 0;
  const bool from_switch = t.from_rank < 0;
  const int rank = from_switch ? t.to_rank : t.from_rank;
  const std::string lane = t.inter_node ? "net" : (to_switch || from_switch ? "nvswitch" : "nvlink");
  std::string name = std::string(t.what);
  if (t.what != kPhasePush) name += " step " + std::to_string(t.step);
  name += t.peers > 1    ? " to " + std::to_string(t.peers) + " ranks via nvswitch"
          : t.peers == 1 ? " to one rank via nvswitch"
          : to_switch    ? " to nvswitch"
          : from_switch  ? " from nvswitch"
                         : " to rank " + std::to_string(t.to_rank);
  v1::Event e = traces::make_event(rank, lane, v1::EVENT_KIND_COPY, name, ns(g.start(t.node)),
                                   ns(g.end(t.node)), std::llround(t.bytes));
  return e;
}

std::string flag_name(const Span& s) {
  if (s.flag_peers <= 1) return "flag to rank " + std::to_string(s.flag_first);
  return "flags to " + std::to_string(s.flag_peers) + " ranks (" + std::to_string(s.flag_first) + " … " +
         std::to_string(s.flag_last) + ")";
}

// A rank's phases in the step vocabulary (traces/phases.h), the names the hardware runner writes: the
// simulator's phase groups (step_result.h) become the kernels they stand for; direct's and flashinfer-a2a's
// push, wait and combine are one kernel; row-stream's wait and combine are one kernel, which polls for the
// flags and then combines.
std::vector<PhaseSpan> step_phases(const RankTimeline& r, models::Strategy strategy) {
  using models::Strategy;
  std::vector<PhaseSpan> out;
  // The one-kernel merges: stores, flags, wait and combine are one kernel per rank.
  if (strategy == Strategy::kDirect || strategy == Strategy::kFlashInferA2a) {
    double begin = 0.0, end = 0.0;
    bool any = false;
    for (const PhaseSpan& p : r.phases) {
      if (p.name == kPhasePush || p.name == kPhaseWait || p.name == kPhaseCombine) {
        begin = any ? std::min(begin, p.begin_s) : p.begin_s;
        end = any ? std::max(end, p.end_s) : p.end_s;
        any = true;
      } else {
        std::string name = p.name == kPhaseQueryGather ? "query_all_gather" : p.name;
        out.push_back({std::move(name), p.begin_s, p.end_s});
      }
    }
    if (any) out.push_back({strategy == Strategy::kDirect ? "direct_merge" : "flashinfer_merge", begin, end});
    return out;
  }
  const bool one_shot = strategy == Strategy::kRowStream;
  for (const PhaseSpan& p : r.phases) {
    std::string name = p.name;
    if (p.name == kPhaseQueryGather) {
      name = "query_all_gather";
    } else if (p.name == kPhaseLseGather) {
      name = "lse_all_gather";
    } else if (p.name == kPhaseCollective) {
      name = strategy == Strategy::kAgRs   ? "reduce_scatter"
             : strategy == Strategy::kAgAr ? "all_reduce"
                                           : "all_to_all";
    } else if (p.name == kPhaseLseCollective) {
      name = "all_to_all_lse";
    } else if (p.name == kPhasePack) {
      name = "a2a_pack";
    } else if (p.name == kPhasePush) {
      name = "row_stream_push";
    } else if (p.name == kPhaseWait && one_shot) {
      continue;  // the start of the combine kernel
    } else if (p.name == kPhaseCombine) {
      if (!one_shot) {
        name = "a2a_combine";
      } else {
        const PhaseSpan* wait = nullptr;
        for (const PhaseSpan& q : r.phases) {
          if (q.name == kPhaseWait) wait = &q;
        }
        out.push_back({"row_stream_combine", wait != nullptr ? std::min(wait->begin_s, p.begin_s) : p.begin_s,
                       p.end_s});
        continue;
      }
    }
    out.push_back({std::move(name), p.begin_s, p.end_s});
  }
  return out;
}

}  // namespace

void emit_trace(const StepGraph& step, const StepResult& result, traces::TraceSink& sink) {
  const ActivityGraph& g = step.graph;
  v1::Scenario scenario = scenario_record(result);
  // How all-pairs sends were simulated (fanout.h): the grain chosen for this group and the peers in flight.
  (*scenario.mutable_params())["flows"] = step.bundle_flows ? "bundle" : "pair";
  (*scenario.mutable_params())["peers_in_flight"] = std::to_string(step.peers_in_flight);
  sink.on_scenario(scenario);

  std::vector<bool> linked(step.spans.size(), false);
  for (const auto& [from, to] : step.flows) linked[from] = linked[to] = true;
  for (std::size_t i = 0; i < step.spans.size(); ++i) {
    const Span& s = step.spans[i];
    v1::Event e = traces::make_event(s.rank, s.lane, s.kind, s.name.empty() ? flag_name(s) : s.name,
                                     ns(g.start(s.first)), ns(g.end(s.last)), std::llround(s.bytes),
                                     s.rows_begin, s.rows_end);
    if (linked[i]) e.set_id(i + 1);
    sink.on_event(e);
  }
  for (const TransferSpan& t : step.transfers) sink.on_event(transfer_event(g, t));
  std::uint64_t flow_id = 1;
  for (const auto& [from, to] : step.flows) {
    v1::Flow f;
    f.set_id(flow_id++);
    f.set_from_event(static_cast<std::uint64_t>(from) + 1);
    f.set_to_event(static_cast<std::uint64_t>(to) + 1);
    f.set_name("flag");
    sink.on_flow(f);
  }
  for (const RankTimeline& r : result.ranks) {
    for (std::size_t b = 0; b < r.lse_ready_s.size(); ++b) {
      v1::RowResult row;
      row.set_row(static_cast<int>(b));
      row.set_rank(r.rank);
      row.set_lse_ready_ns(ns(r.lse_ready_s[b]));
      row.set_output_ready_ns(ns(r.output_ready_s[b]));
      sink.on_row_result(row);
    }
  }
  for (const RankTimeline& r : result.ranks) {
    for (const PhaseSpan& p : step_phases(r, result.scenario.strategy)) {
      v1::PhaseSummary ph;
      ph.set_rank(r.rank);
      ph.set_phase(p.name);
      const double d = p.duration_s() * 1e9;
      ph.set_median_ns(d);
      ph.set_min_ns(d);
      ph.set_max_ns(d);
      ph.set_repetitions(1);
      sink.on_phase_summary(ph);
    }
  }
  v1::Summary summary;
  summary.set_step_latency_ns(result.step_latency_s * 1e9);
  summary.set_merge_latency_ns(result.merge_latency_s * 1e9);
  for (const RankTimeline& r : result.ranks) summary.add_kv_bytes_per_rank(r.kv_bytes);
  (*summary.mutable_values())["attention_end_ns"] = result.attention_end_s * 1e9;
  (*summary.mutable_values())["simgrid_activities"] = double(result.activities);
  (*summary.mutable_values())["pipe_transfers"] = double(result.pipe_transfers);
  sink.on_summary(summary);
}

}  // namespace detail

traces::v1::Header sim_trace_header(const models::HardwareProfile& p, std::vector<std::string> argv) {
  traces::v1::Header h = traces::make_header(traces::v1::SOURCE_SIM, std::move(argv));
  auto* profile = h.mutable_profile();
  profile->set_name(p.name);
  auto& numbers = *profile->mutable_numbers();
  numbers["sm_count"] = p.gpu.sm_count.si();
  numbers["hbm_bandwidth_measured_bytes_per_s"] = p.gpu.hbm_bandwidth_measured.si();
  numbers["nvlink_bandwidth_measured_bytes_per_s"] = p.nvlink.measured_bandwidth.si();
  numbers["nvlink_hop_latency_s"] = p.nvlink.hop_latency.si();
  numbers["internode_bandwidth_bytes_per_s"] = p.internode.bandwidth.si();
  numbers["internode_latency_s"] = p.internode.latency.si();
  numbers["gpus_per_nvlink_domain"] = p.topology.gpus_per_nvlink_domain.si();
  profile->set_json(models::to_json(p));
  return h;
}

}  // namespace dcpsim::sim
