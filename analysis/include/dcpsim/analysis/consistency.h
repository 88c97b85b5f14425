#pragma once
// No silent mismatch: a file made for another profile or GPU is refused, or — where mixing them is meaningful
// (validating or calibrating a profile against another GPU's traces, as a starting point for a new GPU) —
// named in a one-line warning, never used quietly.
#include <string>
#include <vector>

#include "dcpsim/analysis/measured.h"
#include "dcpsim/analysis/validate.h"
#include "dcpsim/models/profile.h"

namespace dcpsim::analysis {

// A calibration sidecar whose calibrated profile is not `profile`: InputError naming both (its prediction
// bands describe another profile's fit). Sidecars that predate the profile field pass.
void require_calibration_matches(const CalibrationInfo& calibration, const models::HardwareProfile& profile);

// One line naming the traces measured on a GPU other than the profile's gpu.name ("" when every trace that
// names its device matches; names match when one starts with the other, case aside).
std::string device_mismatch(const models::HardwareProfile& profile, const std::vector<MeasuredTrace>& traces);

}  // namespace dcpsim::analysis
