#pragma once
// The measured steps and kernel grids of `dcpsim hw calibrate` (calibration_plan.h): which kernel-table
// families it sweeps, which steps it fits on and which it holds out.
//
// The held-out steps are drawn by a seeded generator (holdout_steps) from real model geometries on a rank
// (DeepSeek-V3 and Kimi-K2: MLA; Llama-3.1-70B and Qwen3-235B: GQA; heads and KV heads as
// models::rank_geometry gives them for DCP size N and tensor parallel size TP), N = 2 to 8 with 3, 5 and 7
// each more than once, rows and per-rank tokens off every table grid, graph, PDL and eager launches in turn.
// The list the committed seed gives is fixed in a test (tests/analysis/calibration_plan_test.cc), written
// before any profile was fitted with it: changing the generator or the grids so that it moves fails that
// test.
#include <cstdint>
#include <string>
#include <vector>

#include "dcpsim/hw/sweep.h"
#include "dcpsim/models/scenario.h"

namespace dcpsim::analysis {

// One kernel-table family: one `hw sweep` and one table file, "<stem>-<name>.json" beside the profile.
struct TableFamily {
  std::string name;    // "merge-cold"
  std::string prices;  // which step figures the simulator prices from it
  hw::KernelSweepConfig sweep;
  bool listed = true;  // referenced by the profile (false: read by the fit only, kept in the work folder)
};

// The families a profile needs for every kernel phase the runner's emulated steps have: attention (dcpsim's
// GQA kernel at query-head groups 1, 4, 8 and 16; FlashInfer's MLA kernel when `flashinfer`; dcpsim's MLA
// kernel, which row stamps and row-stream run), the merge kernels warm, cold (as an emulated step's later
// ranks find them), cold with the gathered LSEs warm, stamped warm and cold (as `hw run --row-stamps` runs
// them), A2A pack and combine in a2a-2call's layout warm and cold, and the merge kernels after a copy node of
// their graph (for launch.kernel_after_copy_node; not listed by the profile: its keys are the warm ones').
std::vector<TableFamily> table_families(bool flashinfer = true);

// One `hw run --emulate --strategy all` (one trace file, a section per strategy the emulation runs).
struct CalibrationStep {
  std::string name;           // the file's stem, e.g. "mla_n3_h96_b24_ctx12k_graph"
  models::Scenario scenario;  // the strategy is ignored: every strategy runs
  int check_rows = 2;         // rows compared with the fp64 reference
  bool row_stamps = false;    // `hw run --row-stamps`
  int padded_rows = 0;        // `hw run --padded-rows`
  std::string origin;         // the real model and TP the geometry is from ("llama-3.1-70b tp8"), or ""
};

// The fit set: N in {2, 3, 4, 8}, MLA with 16 N heads and GQA with 8 N heads and N KV heads; 1 row of 32k,
// 16 rows of 8k (graph and eager), 64 rows of 1k with row stamps and 4 padding rows (graph). 32 files.
std::vector<CalibrationStep> fit_steps();
// The fit set's 16-row and 64-row steps launched with PDL: what PDL saves a merge kernel in a step. 16 files.
std::vector<CalibrationStep> pdl_steps();

inline constexpr std::uint64_t kHoldoutSeed = 20261206;
inline constexpr int kHoldoutSteps = 16;
// `count` held-out steps drawn with `seed` (module comment), each off the grids of `families`.
std::vector<CalibrationStep> holdout_steps(const std::vector<TableFamily>& families,
                                           std::uint64_t seed = kHoldoutSeed, int count = kHoldoutSteps);

// Where `step` coincides with a grid of `families` (the rows, or the per-rank tokens, on a grid value), one
// line; empty when it is off every grid in both.
std::string on_table_grid(const CalibrationStep& step, const std::vector<TableFamily>& families);

// The step's runner flags, as `dcpsim hw run` takes them (for logs and the plan).
std::string step_flags(const CalibrationStep& step);

}  // namespace dcpsim::analysis
