#pragma once
// What `dcpsim hw calibrate` measures on a GPU, in what order, how long each part should take and which file
// keeps it, so that the plan can be printed (--dry-run), cut to a time budget and resumed after an
// interruption. Making a plan needs no device.
//
// Stages, in order:
//   device    the GPU, driver, CUDA, NCCL and clocks, and the device-to-device copy bandwidth
//   tables    one `hw sweep` per kernel-table family the simulator reads (table_families): attention of
//             each implementation and geometry the runner runs, the merge kernels warm, cold, cold with the
//             LSEs warm, stamped warm and cold, and the kernels after a copy node of their graph
//   steps     `hw run --emulate --strategy all` over three committed sets (calibration_steps.h): the fit set
//             (graph and eager), its PDL launches, and the held-out set (drawn with a fixed seed before any
//             fit, off every table grid, from real model geometries)
//   fit       the profile: device facts, the tables, launch gaps read off the fit set's GPU timelines, and
//             `dcpsim calibrate` on the fit and PDL sets (needs the simulator)
//   validate  the held-out set against the profile written (needs the simulator)
// Every stage leaves named files beside the profile; a stage whose files are there is not run again.
#include <cstdint>
#include <string>
#include <vector>

#include "dcpsim/analysis/calibration_steps.h"
#include "dcpsim/hw/sweep.h"
#include "dcpsim/models/profile.h"

namespace dcpsim::analysis {

enum class StageKind { kDevice, kTables, kSteps, kFit, kValidate };
std::string_view to_string(StageKind k);

struct CalibrationStage {
  StageKind kind = StageKind::kDevice;
  std::string name;                    // "device", "tables merge-cold", "steps fit", "fit", "validate"
  TableFamily family;                  // kTables
  std::string set;                     // kSteps: "fit", "pdl" or "holdout"
  std::vector<CalibrationStep> steps;  // kSteps
  double estimate_s = 0.0;             // expected wall time on the GPU machine
  int points = 0;                      // kTables: points timed; kSteps: trace files
};

// Where a calibration keeps its files, from --out: "<dir>/<stem>.json" (the profile), its sidecar
// "<stem>.calibration.json", its tables "<stem>-<family>.json", and the work folder "<stem>.calibrate/"
// (device.json, plan.json, <set>/<step>.pb, validation.md, log.txt).
struct CalibrationPaths {
  std::string dir;   // "" or ending in '/'
  std::string stem;  // "my-gpu"
  std::string profile() const { return dir + stem + ".json"; }
  std::string sidecar() const { return dir + stem + ".calibration.json"; }
  std::string table_file(const std::string& family) const { return stem + "-" + family + ".json"; }
  std::string table(const std::string& family) const { return dir + table_file(family); }
  std::string work() const { return dir + stem + ".calibrate/"; }
  // Where a step's trace is written (`hw run` writes .pb; a gzipped copy, .pb.gz, is read as well).
  std::string step(const std::string& set, const std::string& name) const {
    return work() + set + "/" + name + ".pb";
  }
  // The step's trace if one is there (.pb or .pb.gz), else "".
  std::string measured_step(const std::string& set, const std::string& name) const;
};
// From --out ("my-gpu.json"); InputError unless it ends in .json and names a file.
CalibrationPaths calibration_paths(const std::string& out);

struct CalibrationPlan {
  std::string base;                // the base profile's name
  std::uint64_t holdout_seed = 0;  // the seed the held-out steps were drawn with
  std::vector<CalibrationStage> stages;
  double estimate_s() const;
  // A fingerprint of everything the plan measures (grids, steps, their options): checkpoints made under
  // another plan are not reused.
  std::string fingerprint() const;
};

// The plan for a GPU that `base` describes. Estimates price each point from `base`'s analytic model plus a
// per-point overhead read off the H200 sweeps of 2026-12-02 and 2026-12-03 (docs/PERFORMANCE.md).
// `holdout_seed` draws the held-out steps (kHoldoutSeed: the committed list; another seed: a fresh draw for
// re-validating a profile on steps nobody has seen).
CalibrationPlan make_calibration_plan(const models::HardwareProfile& base, bool flashinfer = true,
                                      std::uint64_t holdout_seed = kHoldoutSeed);

// Seconds one sweep should take with `base`'s analytic kernel times (an estimate, not a measurement).
double sweep_estimate_s(const hw::KernelSweepConfig& sweep, const models::HardwareProfile& base);
// Seconds one step file (`hw run --emulate --strategy all`, 3 warm-ups and 10 repetitions) should take.
double step_estimate_s(const CalibrationStep& step, const models::HardwareProfile& base);

// The plan as --dry-run prints it: one line per stage with its points or files, its estimate and its
// checkpoint, then the held-out steps one per line and the total.
std::string describe_plan(const CalibrationPlan& plan, const CalibrationPaths& paths);

// The sweep as `dcpsim hw sweep` flags (the provenance of the tables a stage writes).
std::string hw_sweep_flags(const hw::KernelSweepConfig& sweep);

// "4:05" for 245 s.
std::string minutes_seconds(double seconds);

}  // namespace dcpsim::analysis
