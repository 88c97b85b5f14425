#pragma once
// `dcpsim hw calibrate`: runs a calibration plan (calibration_plan.h) stage by stage, keeping every stage's
// result in named files, so that a run cut short (by its time budget, a signal, or a machine without a GPU
// or without the simulator) resumes where it stopped when the same command runs again.
//
// Files (calibration_plan.h CalibrationPaths): the profile "<stem>.json" with its tables
// "<stem>-<family>.json" beside it (listed by relative path) and its sidecar "<stem>.calibration.json"; the
// work folder
// "<stem>.calibrate/" with device.json (the GPU, driver, CUDA, NCCL, clocks, copy bandwidth, date, command),
// plan.json (the plan's fingerprint: checkpoints of another plan are refused), one trace per step under
// fit/, pdl/ and holdout/ (a step whose exactness check or run failed leaves <name>.failed.txt instead),
// validation.md and log.txt. Every table and trace carries its own provenance.
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dcpsim/analysis/calibration_plan.h"
#include "dcpsim/analysis/validate.h"
#include "dcpsim/models/profile.h"

namespace dcpsim::analysis {

// What the device stage records (device.json).
struct DeviceRecord {
  std::string name;  // as CUDA reports it: "NVIDIA H100 80GB HBM3"
  std::string uuid, pci_bus_id;
  int sm_count = 0, cc_major = 0, cc_minor = 0;
  std::int64_t memory_bytes = 0, l2_bytes = 0;
  std::string driver, cuda, nccl, clocks, date, command;
  double copy_bandwidth = 0.0;  // device-to-device copy, bytes read + written per second
};
nlohmann::json device_json(const DeviceRecord& d);
DeviceRecord device_from_json(const nlohmann::json& j, const std::string& where);  // InputError naming it

struct CalibrateRunOptions {
  std::string out;          // --out: the profile to write
  std::string base;         // --base: a built-in name or file ("": the built-in that describes the GPU)
  std::string name;         // the profile's name ("": the stem of --out)
  double budget_s = 600.0;  // stop before a stage that would end past this (the stages done are kept)
  int device = 0;
  std::string date;                           // YYYY-MM-DD for the provenance ("": today, UTC)
  std::string command;                        // the command line, for the provenance
  std::uint64_t holdout_seed = kHoldoutSeed;  // --holdout-seed: which held-out steps are drawn
  // Progress lines (stderr) and whether a signal asked to stop; both may be empty.
  std::function<void(const std::string&)> progress;
  std::function<bool()> interrupted;
};

enum class RunOutcome {
  kComplete,        // profile written and validated
  kBudget,          // stopped before a stage the budget had no room for
  kInterrupted,     // a signal stopped it
  kNeedsGpu,        // a measuring stage is left and no GPU is visible
  kNeedsSimulator,  // everything is measured; the fit and validation need a build with SimGrid
};

struct CalibrateRunResult {
  RunOutcome outcome = RunOutcome::kComplete;
  std::string message;             // one line: what was done, what is left, how to resume
  std::vector<std::string> lines;  // the summary printed on stdout (what was fitted, the validation)
  std::optional<ValidationReport> validation;
};

// The base profile: --base, else the built-in whose gpu.devices names `device` (InputError naming the flag
// to pass when none does, or when --base describes another GPU than the one measured).
models::HardwareProfile choose_base(const std::string& base, const std::string& device);

// The plan's stages whose files are all there (and belong to this plan and device).
std::vector<bool> stages_done(const CalibrationPlan& plan, const CalibrationPaths& paths,
                              const std::string& device);

// The profile before its fit on steps: `base` with the device's facts (name in gpu.devices, SMs, L2, memory,
// the copy bandwidth measured), the listed tables of `plan` (by relative path), the launch gaps and the query
// repack off the fit set's GPU timelines, and launch.kernel_after_copy_node from the after-copy sweep
// against the warm one. `notes` gets one line per number written.
models::HardwareProfile assemble_profile(const models::HardwareProfile& base, const DeviceRecord& device,
                                         const CalibrationPlan& plan, const CalibrationPaths& paths,
                                         std::vector<std::string>& notes);

// Runs (or resumes) the whole plan. InputError for bad options; RuntimeError for a device failure.
CalibrateRunResult run_calibration(const CalibrateRunOptions& options);

// The plan for --dry-run, with each stage marked done or to do and what is left (no device touched).
std::string describe_calibration(const CalibrateRunOptions& options);

}  // namespace dcpsim::analysis
