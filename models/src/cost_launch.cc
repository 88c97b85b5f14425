// Launch costs: which profile number applies in which launch mode.
#include <algorithm>

#include "dcpsim/models/cost_launch.h"

namespace dcpsim::models {

double cpu_issue_time(const HardwareProfile& p, LaunchMode mode) {
  switch (mode) {
    case LaunchMode::kEager:
      return p.launch.cpu_issue_eager.si();
    case LaunchMode::kGraph:
      return p.launch.cpu_issue_graph.si();
    case LaunchMode::kPdl:
      return p.launch.cpu_issue_pdl.si();
  }
  return p.launch.cpu_issue_eager.si();
}

double gpu_launch_latency(const HardwareProfile& p) {
  return p.launch.gpu_launch_latency.si();
}

double dependent_kernel_gap(const HardwareProfile& p, LaunchMode mode) {
  switch (mode) {
    case LaunchMode::kPdl:
      return p.launch.dependent_gap_pdl.si();
    case LaunchMode::kEager:
      return (p.launch.dependent_gap_eager ? *p.launch.dependent_gap_eager : p.launch.dependent_gap).si();
    case LaunchMode::kGraph:
      break;
  }
  return p.launch.dependent_gap.si();
}

double kernel_start_time(const HardwareProfile& p, LaunchMode mode, double issued_s, double previous_end_s) {
  const double ready = issued_s + gpu_launch_latency(p);
  if (previous_end_s < 0) return ready;
  return std::max(ready, previous_end_s + dependent_kernel_gap(p, mode));
}

}  // namespace dcpsim::models
