#pragma once
// Figures of one simulated step that several commands print: the communication time (query all-gather
// included), the longest duration of a phase, and nccl-tests' algbw/busbw for every collective the step ran.
#ifdef DCPSIM_WITH_SIMGRID
#include <string>
#include <string_view>
#include <vector>

#include "dcpsim/analysis/replay.h"
#include "dcpsim/sim/step_result.h"

namespace dcpsim::analysis {

// The longest duration of `phase` over the ranks (0 when no rank has it).
double phase_longest_s(const sim::StepResult& r, std::string_view phase);
// The busiest rank's exposed communication: time in communication phases (query all-gather, LSE all-gather,
// the output collective, pushes, flag waits) while no kernel of the rank computes (attention, correction,
// pack, combine). Row-stream's pushes under attention do not count; its query all-gather and tail do.
double communication_s(const sim::StepResult& r);
// step, merge and communication of one layer, for replay.
StepTiming step_timing(const sim::StepResult& r);

// One collective as nccl-tests reports it (models/cost_metrics.h): size is nccl-tests' size (for all-gather
// the whole receive buffer), time the phase's longest duration over the ranks in the simulation.
struct CollectiveBandwidth {
  std::string phase;       // query_gather, lse_gather, collective
  std::string collective;  // all-gather, reduce-scatter, all-reduce, all-to-all
  std::string plan;        // ring/ll, ...
  double size_bytes = 0.0;
  double time_s = 0.0;
  double algbw_Bps = 0.0;
  double busbw_Bps = 0.0;
};
std::vector<CollectiveBandwidth> collective_bandwidths(const sim::StepResult& r);

}  // namespace dcpsim::analysis
#endif
