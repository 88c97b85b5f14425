#pragma once
// The reference check of a measured step (see check.cc for the tolerance).
#include <vector>

#include "dcpsim/hw/runner.h"
#include "plan.h"
#include "rank_state.h"

namespace dcpsim::hw {

// One rank's final output, downloaded: kept head j of every row is head head_begin + j·head_stride, stored as
// [B'][heads][D], and its merged LSE is at lse[b·lse_row_stride + lse_offset + j] (lse empty: the strategy
// returns none, and only the output is checked).
struct RankOutputs {
  int head_begin = 0, heads = 0, head_stride = 1, lse_offset = 0, lse_row_stride = 0;
  std::vector<double> out;
  std::vector<double> lse;
};

RankOutputs download_outputs(const StepPlan& p, const RankState& rank);

CheckResult check_outputs(const StepPlan& p, const RunConfig& c, const std::vector<RankOutputs>& outputs);

}  // namespace dcpsim::hw
