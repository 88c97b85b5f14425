#include "step_graph.h"

#include <string>

namespace dcpsim::sim::detail {

RankStream::RankStream(StepGraph& step, int rank, std::string lane)
    : step_(step), rank_(rank), lane_(std::move(lane)), cpu_(std::make_shared<NodeId>(-1)) {}

NodeId RankStream::arrival() {
  const double at = static_cast<std::size_t>(rank_) < step_.arrival_s.size() ? step_.arrival_s[rank_] : 0.0;
  return at > 0 ? step_.graph.latency(at) : -1;
}

NodeId RankStream::reached() {
  std::vector<NodeId> before;
  if (last_end_ >= 0) before.push_back(last_end_);
  if (*cpu_ >= 0) before.push_back(*cpu_);
  if (before.empty()) {
    const NodeId a = arrival();
    return a >= 0 ? a : step_.graph.join_of({});
  }
  return step_.graph.join_of(before);
}

NodeId RankStream::begin(std::string_view name, std::optional<double> gap, std::optional<double> issue_s) {
  ActivityGraph& g = step_.graph;
  const models::HardwareProfile& p = step_.profile;
  const models::LaunchMode mode = step_.scenario.launch;

  const NodeId issue =
      g.exec(step_.platform.gpu(rank_), issue_s ? *issue_s : models::cpu_issue_time(p, mode));
  if (*cpu_ >= 0) {
    g.after(*cpu_, issue);
  } else if (const NodeId a = arrival(); a >= 0) {
    g.after(a, issue);
  }
  *cpu_ = issue;
  step_.add_span({rank_, "cpu", traces::v1::EVENT_KIND_LAUNCH, std::string(name), issue, issue});

  const NodeId start = g.join();
  g.after(g.after_latency(issue, models::gpu_launch_latency(p)), start);
  if (last_end_ >= 0)
    g.after(g.after_latency(last_end_, gap ? *gap : models::dependent_kernel_gap(p, mode)), start);
  g.label(start, "rank " + std::to_string(rank_) + " " + std::string(name) + " kernel");
  open_begin_ = start;
  open_name_ = name;
  return start;
}

void RankStream::finish(NodeId end, traces::v1::EventKind kind, double bytes) {
  step_.add_span({rank_, lane_, kind, open_name_, open_begin_, end, bytes});
  last_end_ = end;
}

NodeId RankStream::kernel(std::string_view name, double seconds, double bytes, std::optional<double> gap) {
  const NodeId start = begin(name, gap);
  const NodeId body = step_.graph.exec(step_.platform.gpu(rank_), seconds);
  step_.graph.after(start, body);
  finish(body, traces::v1::EVENT_KIND_KERNEL, bytes);
  return body;
}

}  // namespace dcpsim::sim::detail
