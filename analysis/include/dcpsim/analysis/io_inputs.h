#pragma once
// The inputs a command reads through its flags, added to its IoGuard (dcpsim/io_guard.h) exactly as the
// loaders read them: a profile file and the kernel tables it lists, a model file, a contexts file, the
// traces of a --measured directory. Every command builds one IoGuard from these and its own paths, and
// checks it before any work starts.
#include <string>
#include <vector>

#include "dcpsim/analysis/scenario_flags.h"
#include "dcpsim/io_guard.h"

namespace dcpsim::analysis {

// A profile (built-in name or file): the file and each table file it lists (models::profile_files).
void guard_profile(IoGuard& io, const std::string& flag, const std::string& name_or_path);
// A model (preset name, "none" or a dcpsim-model/1 file).
void guard_model(IoGuard& io, const std::string& flag, const std::string& name_or_path);
// The scenario flags' files: --model and --contexts-file.
void guard_scenario_flags(IoGuard& io, const ScenarioFlags& flags);
// Measured traces: files, or directories standing for every trace file (.pb, .pb.gz) under them.
void guard_measured(IoGuard& io, const std::string& flag, const std::vector<std::string>& paths);
// A calibration sidecar: the one named, or the one read beside a profile file when none is named.
void guard_calibration(IoGuard& io, const std::string& flag, const std::string& sidecar,
                       const std::string& profile);

}  // namespace dcpsim::analysis
