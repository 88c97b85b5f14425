#pragma once
// `dcpsim calibrate --comm-tables`: NCCL's tuning-model numbers of a profile fitted to measured collective
// tables (models/comm_table.h: imported nccl-tests runs). How a GB200 NVL72 owner calibrates communication:
// run nccl-tests on the rack, `dcpsim import --nccl-tests`, then this. The fit is calibrate.h's (bounded,
// Huber-weighted Gauss–Newton on log(predicted / measured)); only the collective parameters of fit_params.h
// are candidates, and the in-step terms (which steady-state tables cannot show) keep the base values.
#include <vector>

#include "dcpsim/analysis/calibrate.h"
#include "dcpsim/models/comm_table.h"

namespace dcpsim::analysis {

// Every out-of-place, back-to-back point of NCCL's own choice whose node count matches the profile's layout
// (ceil(gpus / gpus_per_node)) is a figure, named "<op> <N> gpus". The model is priced without the
// profile's communication tables; the result keeps them. InputError when no point fits the profile.
CalibrationResult calibrate_comm(const models::HardwareProfile& base,
                                 const std::vector<models::CommTables>& fit_tables,
                                 const std::vector<models::CommTables>& holdout_tables,
                                 const CalibrateOptions& options = {});

}  // namespace dcpsim::analysis
