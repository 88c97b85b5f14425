#pragma once
// The reference check of a measured step (see check.cc for the tolerance).
#include <vector>

#include "dcpsim/hw/runner.h"
#include "plan.h"
#include "rank_state.h"

namespace dcpsim::hw {

// One rank's final output on the checked rows, downloaded: kept head j is head head_begin + j·head_stride;
// out is [rows][heads][D] and lse [rows][heads] in the order of checked_rows() (lse empty: the strategy
// returns none, and only the output is checked). Host memory: O(checked rows × H × D), whatever B.
struct RankOutputs {
  int head_begin = 0, heads = 0, head_stride = 1;
  std::vector<double> out;
  std::vector<double> lse;
};

// The rows compared with the reference (--check-rows; -1: all up to 16, else 4 spread over the batch) and,
// with padding rows, the last of them (it must come out empty).
std::vector<int> checked_rows(const StepPlan& p, int check_rows);

RankOutputs download_outputs(const StepPlan& p, const RankState& rank, const std::vector<int>& rows);

CheckResult check_outputs(const StepPlan& p, const RunConfig& c, const std::vector<RankOutputs>& outputs);

// Threads the reference uses, and the host bytes the check holds at its peak (reference states and cached
// rows, the downloaded outputs), for hw run's memory estimate.
int reference_threads();
double check_host_bytes(const StepPlan& p, int check_rows);

}  // namespace dcpsim::hw
