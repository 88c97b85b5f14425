// A collective's price: measured table first, NCCL's tuning model outside it, plus the in-step terms.
#include "dcpsim/models/cost_collectives_price.h"

#include <algorithm>
#include <cctype>

#include "dcpsim/models/comm_table.h"
#include "dcpsim/models/cost_launch.h"
#include "dcpsim/models/cost_metrics.h"

namespace dcpsim::models {
namespace {

double optional_si(const std::optional<Quantity>& q) {
  return q ? q->si() : 0.0;
}

std::string price_lowered(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

}  // namespace

std::string CollectivePrice::source_text() const {
  if (anchored) return "model anchored to the table (extrapolated)";
  if (source != FigureSource::kTable) return "model (extrapolated)";
  return between_groups ? "table (between groups)" : "table";
}

double in_step_extra(const HardwareProfile& p, LaunchMode launch) {
  return optional_si(launch == LaunchMode::kEager ? p.nccl.in_step_eager : p.nccl.in_step_graph);
}

double arrival_skew(const HardwareProfile& p, LaunchMode launch) {
  return optional_si(launch == LaunchMode::kEager ? p.nccl.arrival_skew_eager : p.nccl.arrival_skew_graph);
}

double event_pair_time(const HardwareProfile& p) {
  return optional_si(p.launch.event_pair);
}

double event_gap_time(const HardwareProfile& p) {
  return optional_si(p.launch.event_gap);
}

double eager_collective_issue(const HardwareProfile& p) {
  return p.nccl.eager_host_issue ? p.nccl.eager_host_issue->si() : cpu_issue_time(p, LaunchMode::kEager);
}

CollectivePrice price_collective(const HardwareProfile& p, Collective c, int ranks, double bytes_per_rank,
                                 const CollectiveOptions& options, const CollectiveCall& call) {
  CollectivePrice price;
  price.plan = plan_collective(p, c, ranks, bytes_per_rank, options);
  price.steady_s = price.plan.analytic_time_s;
  if (price.plan.steps == 0) return price;  // nothing launched: no table, no in-step cost

  CommQuery q;
  q.op = c;
  q.gpus = ranks;
  // The same layout: the hosts the profile puts N ranks on.
  const int per_node = std::max(1, static_cast<int>(p.topology.gpus_per_node.si()));
  q.nodes = (ranks + per_node - 1) / per_node;
  q.extrapolate = call.anchor_to_tables;
  q.size_bytes = nccl_tests_size_bytes(c, ranks, bytes_per_rank);
  q.dtype = call.dtype;
  q.in_place = call.in_place;
  q.algorithm = options.algorithm ? price_lowered(to_string(*options.algorithm)) : "";
  q.protocol = options.protocol ? price_lowered(to_string(*options.protocol)) : "";
  q.implementation = call.implementation;
  // Between measured group sizes the table's ratio to the model is carried along the model's own shape.
  const auto guide = [&](int gpus, double size) {
    return plan_collective(p, c, gpus, bytes_per_rank_of_size(c, gpus, size), options).analytic_time_s;
  };
  if (const std::optional<CommTableHit> hit = lookup_comm_time(p.comm_tables, q, guide)) {
    price.steady_s = hit->time_s;
    price.source = hit->extrapolated ? FigureSource::kAnalytic : FigureSource::kTable;
    price.anchored = hit->extrapolated;
    price.exact = hit->exact;
    price.between_groups = hit->between_groups;
    price.table = (hit->file->origin.empty() ? std::string("inline") : hit->file->origin) + " (" +
                  hit->file->provenance.device + ")";
    price.implementation = call.implementation;
  } else if (!call.implementation.empty()) {
    price.implementation_missing = true;  // NCCL's model stands in for the framework's kernel
  }
  price.in_step_s = call.in_step ? in_step_extra(p, call.launch) : 0.0;
  price.time_s = price.steady_s + price.in_step_s;
  return price;
}

CollectivePlan plan_with_time(CollectivePlan plan, double seconds) {
  if (plan.steps == 0 || !(seconds > 0) || !(plan.analytic_time_s > 0)) return plan;
  const double extra = seconds - plan.analytic_time_s;
  if (extra >= -plan.base_latency_s) {
    plan.base_latency_s += extra;
  } else {
    const double f = seconds / plan.analytic_time_s;
    plan.base_latency_s *= f;
    plan.per_step_latency_s *= f;
    plan.inter_domain_step_latency_s *= f;
    plan.link_bandwidth_Bps /= f;
    plan.bandwidth_scale /= f;
  }
  plan.analytic_time_s = seconds;
  return plan;
}

}  // namespace dcpsim::models
