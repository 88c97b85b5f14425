#pragma once
// The last two stages of `dcpsim hw calibrate` (calibration_run.h), which re-simulate steps and so need a
// build with the simulator: the fit (the assembled profile's PDL savings fitted on the PDL steps with
// `calibrate`, every other number as measured) and the held-out validation of the profile written.
#include <string>
#include <vector>

#include "dcpsim/analysis/calibration_run.h"

namespace dcpsim::analysis {

// False in builds without SimGrid.
bool fit_available();

// Writes the assembled profile without its fit (no sidecar) and returns one line saying so.
std::string provisional_profile(const models::HardwareProfile& base, const DeviceRecord& device,
                                const CalibrationPlan& plan, const CalibrationPaths& paths,
                                std::vector<std::string>& lines);

// The written profile's description: the base's, with the clause saying which device and date measured it,
// fitted or not yet (a base that was itself calibrated has its earlier clause replaced, not repeated).
std::string calibrated_description(const std::string& base_description, const DeviceRecord& device,
                                   const std::string& date, bool fitted);

// Assembles, fits and writes the profile and its sidecar (with the plan's fingerprint and the hashes of the
// kernels and tables it was fitted on); `lines` gets what was measured and fitted.
void fit_stage(const models::HardwareProfile& base, const DeviceRecord& device, const CalibrationPlan& plan,
               const CalibrationPaths& paths, const CalibrateRunOptions& options, const std::string& date,
               std::vector<std::string>& lines);

// Validates the profile file written against the held-out steps; writes validation.md and validation.csv in
// the work folder; `lines` gets the summary and the targets (kernel phases median <= 3%, p90 <= 8% with the
// 0.5 us floor).
ValidationReport validate_stage(const CalibrationPaths& paths, const CalibrateRunOptions& options,
                                std::vector<std::string>& lines);

}  // namespace dcpsim::analysis
