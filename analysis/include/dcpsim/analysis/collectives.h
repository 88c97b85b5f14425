#pragma once
// `dcpsim collectives`: the model's collectives in nccl-tests' words (its size convention, algbw, busbw), and
// their comparison with measured nccl-tests tables. Each time is the simulator's (sim::Simulator::
// run_collective: a table's price where the profile's communication tables cover it, else NCCL's tuning
// model realised on SimGrid); builds without SimGrid give models::price_collective's, the same number.
#include <string>
#include <vector>

#include "dcpsim/models/comm_table.h"
#include "dcpsim/models/cost_collectives_price.h"
#include "dcpsim/models/profile.h"

namespace dcpsim::analysis {

struct CollectivesRequest {
  std::vector<models::Collective> ops;
  std::vector<int> gpus;
  std::vector<double> sizes;         // nccl-tests' size (bytes)
  models::CollectiveCall call;       // steady state (default) or in a step; dtype for the tables
  models::CollectiveOptions forced;  // NCCL_ALGO / NCCL_PROTO
};

struct CollectiveRow {
  models::Collective op = models::Collective::kAllGather;
  int gpus = 0;
  double size_bytes = 0;
  double time_s = 0;
  double algbw_Bps = 0, busbw_Bps = 0;
  std::string algorithm, protocol;  // the plan NCCL's tuner (dcpsim's model of it) picks
  models::FigureSource source = models::FigureSource::kAnalytic;
  bool between_groups = false;
  bool anchored = false;  // extrapolated: the model scaled to the nearest measured point
  double in_step_s = 0;
};

// Measured collectives from files: one communication table file (dcpsim-comm-tables/1), or nccl-tests output
// (text, -J JSON, CSV) of any number of runs, imported as `dcpsim import --nccl-tests` would.
models::CommTables load_measured_comm(const std::vector<std::string>& files);

// One row per op × gpus × size, in that order (sizes fastest). A size that is not a whole number of elements
// per rank is rounded as nccl-tests rounds it (down to a multiple of the group × element size, at least one
// element per rank). InputError for a group the profile cannot hold.
std::vector<CollectiveRow> predict_collectives(const models::HardwareProfile& profile,
                                               const CollectivesRequest& request);

// nccl-tests' size of one element of `dtype` ("half" 2, "float" 4, "int8" 1, ...); InputError otherwise.
int dtype_bytes(const std::string& dtype);

// CSV: op,gpus,size_bytes,time_us,algbw_gbs,busbw_gbs,algorithm,protocol,source,extrapolated,in_step_us
std::string collectives_csv(const std::vector<CollectiveRow>& rows);
// The nccl-tests-like printout: one block per op.
std::string collectives_text(const std::vector<CollectiveRow>& rows, const std::string& heading);

// The model against measured tables: every measured out-of-place point of `measured` (of the request's
// dtype when there is one, else any) predicted under `profile` (which should not carry that table).
struct CollectiveComparison {
  models::Collective op = models::Collective::kAllGather;
  int gpus = 0;
  double size_bytes = 0;
  double measured_s = 0, predicted_s = 0;
  double relative_error = 0;  // (predicted − measured) / measured
  models::FigureSource source = models::FigureSource::kAnalytic;
};
struct ComparisonSummary {
  std::string key;  // "all-gather", "all-gather 8 gpus", ..., "all"
  int count = 0;
  double median = 0, p90 = 0, max = 0;  // of |relative error|
};
std::vector<CollectiveComparison> compare_collectives(const models::HardwareProfile& profile,
                                                      const models::CommTables& measured,
                                                      const CollectivesRequest& request);
// Per op, per op and group size, and "all".
std::vector<ComparisonSummary> summarise(const std::vector<CollectiveComparison>& c);
std::string comparison_text(const std::vector<CollectiveComparison>& c, bool per_point);

}  // namespace dcpsim::analysis
