#pragma once
// One collective's price: what every part of dcpsim that needs a collective's time asks (the simulator's
// strategies, `dcpsim collectives`, the deployed step's TP all-reduce and EP all-to-all).
//
//   steady state  the time nccl-tests reports for back-to-back calls: from the profile's measured
//                 communication tables (comm_table.h) where they cover the op, group size and size (exact at
//                 measured points, interpolated between), else NCCL's tuning model (cost_collectives.h,
//                 plan_collective) — marked extrapolated;
//   in a step     plus what issuing one call after a kernel adds (profile nccl.in_step_graph /
//   in_step_eager):
//                 no back-to-back pipelining of its launch and setup.
// What a step adds around the call — the ranks' arrival skew absorbed by the first collective, an eager NCCL
// call's host time — is the simulator's (it knows the step); the profile numbers are nccl.arrival_skew_*,
// nccl.eager_host_issue.
#include <string>

#include "dcpsim/models/cost_collectives.h"
#include "dcpsim/models/cost_kernels.h"
#include "dcpsim/models/types.h"

namespace dcpsim::models {

// How the collective is issued.
struct CollectiveCall {
  bool in_step = false;  // inside a decode step after a kernel; false: nccl-tests' steady state
  LaunchMode launch = LaunchMode::kGraph;  // the step's launch mode (read when in_step)
  std::string dtype = "bfloat16";          // the element type, for table lookups (nccl-tests' names)
  bool in_place = false;
  // Outside the tables, scale the model by measured / model at the nearest measured point of the same layout
  // (still marked extrapolated); false: the model alone.
  bool anchor_to_tables = true;
  // Which library runs it: "" = NCCL; a framework's own kernel ("vllm-custom", "deepep-ll") is priced only
  // from a table of that implementation (CollectivePrice::source kTable), else from NCCL's model as NCCL's
  // call (source kAnalytic, `implementation_missing` set): the caller then knows the framework's kernel had
  // no data.
  std::string implementation = "";
};

struct CollectivePrice {
  CollectivePlan plan;     // the plan NCCL's tuner picks, with its analytic (model) time
  double steady_s = 0.0;   // back-to-back time: the table's where one covers the call, else the plan's
  double in_step_s = 0.0;  // what being issued inside a step adds (0 in steady state)
  double time_s = 0.0;     // steady_s + in_step_s
  FigureSource source = FigureSource::kAnalytic;  // kTable: steady_s from a measured table
  bool exact = false;                             // a measured point, as measured
  bool between_groups = false;                    // interpolated between two measured group sizes
  bool anchored = false;  // extrapolated: the model scaled to the nearest measured point of the same layout
  std::string table;      // which table: its file (or "inline") and device
  std::string implementation;           // the table's implementation ("" = NCCL's)
  bool implementation_missing = false;  // a framework kernel was asked for and no table of it covers the call
  // "table", "table (between groups)", "model anchored to the table (extrapolated)" or "model
  // (extrapolated)": what every output prints
  std::string source_text() const;
};

// Prices one collective of `bytes_per_rank` (cost_collectives.h's convention) on `ranks` ranks. N = 1 or 0
// bytes cost 0. A forced algorithm or protocol is looked up only in tables measured with the same forcing.
CollectivePrice price_collective(const HardwareProfile& p, Collective c, int ranks, double bytes_per_rank,
                                 const CollectiveOptions& options = {}, const CollectiveCall& call = {});

// What issuing a collective inside a step adds in launch mode `launch` (profile nccl.in_step_*; 0 without).
double in_step_extra(const HardwareProfile& p, LaunchMode launch);
// The spread of the ranks' arrival at a step's first collective (profile nccl.arrival_skew_*; 0 without).
double arrival_skew(const HardwareProfile& p, LaunchMode launch);
// What a CUDA event pair around a phase adds to it as event-timed traces measure it (profile
// launch.event_pair; 0 without).
double event_pair_time(const HardwareProfile& p);
// What separates two consecutive event-timed phases (profile launch.event_gap; 0 without).
double event_gap_time(const HardwareProfile& p);
// Host time of one eager NCCL call (profile nccl.eager_host_issue; without it the eager kernel issue cost).
double eager_collective_issue(const HardwareProfile& p);

// `plan` with its analytic time made `seconds`: the base latency takes the difference; when that is not
// enough (a table faster than the plan's step latencies and bytes), every latency and the bandwidth are
// scaled together. The simulator realises this plan, so an uncontended collective takes `seconds`.
CollectivePlan plan_with_time(CollectivePlan plan, double seconds);

}  // namespace dcpsim::models
