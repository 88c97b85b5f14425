// The inputs behind a command's flags, for its IoGuard (io_inputs.h).
#include "dcpsim/analysis/io_inputs.h"

#include <algorithm>
#include <filesystem>

#include "dcpsim/analysis/calibrate.h"
#include "dcpsim/models/model_preset.h"
#include "dcpsim/models/profile.h"
#include "dcpsim/traces/trace_reader.h"

namespace dcpsim::analysis {

void guard_profile(IoGuard& io, const std::string& flag, const std::string& name_or_path) {
  const std::vector<std::filesystem::path> files = models::profile_files(name_or_path);
  for (std::size_t i = 0; i < files.size(); ++i) io.input(i == 0 ? flag : flag + "'s table", files[i]);
}

void guard_model(IoGuard& io, const std::string& flag, const std::string& name_or_path) {
  const auto& presets = models::builtin_model_names();
  if (name_or_path.empty() || name_or_path == "none" ||
      std::find(presets.begin(), presets.end(), name_or_path) != presets.end())
    return;
  io.input_if_exists(flag, name_or_path);  // a name that is neither: load_model says so
}

void guard_scenario_flags(IoGuard& io, const ScenarioFlags& flags) {
  guard_model(io, "--model", flags.model);
  io.input("--contexts-file", flags.contexts_file);
}

void guard_measured(IoGuard& io, const std::string& flag, const std::vector<std::string>& paths) {
  for (const std::string& p : paths) {
    std::error_code ec;
    if (std::filesystem::is_directory(p, ec)) {
      io.input_dir(flag, p, [](const std::filesystem::path& f) { return traces::is_trace_file_name(f); });
    } else {
      io.input(flag, p);
    }
  }
}

void guard_calibration(IoGuard& io, const std::string& flag, const std::string& sidecar,
                       const std::string& profile) {
  if (!sidecar.empty()) {
    io.input(flag, sidecar);
    return;
  }
  std::error_code ec;
  if (profile.empty() || !std::filesystem::is_regular_file(profile, ec)) return;
  io.input_if_exists("--profile's sidecar", calibration_sidecar(profile));
}

}  // namespace dcpsim::analysis
