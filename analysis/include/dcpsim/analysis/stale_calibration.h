#pragma once
// Whether a calibrated profile still describes the tree: `dcpsim hw calibrate` records in the sidecar
// ("fitted_on") the hash of the kernel sources its tables and fit were measured with
// (hw::kernel_sources_hash) and a hash of every table file it lists. When the kernels or the tables change,
// the calibration is stale: refit it with `dcpsim hw calibrate`, or remove it (tests/analysis checks every
// committed sidecar; `dcpsim validate` warns).
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace dcpsim::analysis {

// 64-bit FNV-1a of the bytes, as 16 hex digits: a change detector, not a cryptographic hash.
std::string content_hash(std::string_view bytes);
std::string file_hash(const std::filesystem::path& path);  // InputError when unreadable

// The "fitted_on" block for a profile whose listed table files are `tables` (paths; the sidecar records their
// file names).
nlohmann::json fitted_on_json(const std::vector<std::filesystem::path>& tables);

// What makes `sidecar` stale, one line each (empty: current): no "fitted_on" record, kernel sources other
// than this build's, a table missing or changed. Table files are looked for beside the sidecar, then in each
// of `table_dirs` (the built-in tables: models/tables/).
std::vector<std::string> stale_calibration(const std::filesystem::path& sidecar,
                                           const std::vector<std::filesystem::path>& table_dirs);

}  // namespace dcpsim::analysis
