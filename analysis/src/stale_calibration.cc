// Hashes of the kernels and tables a calibration was fitted on (stale_calibration.h).
#include "dcpsim/analysis/stale_calibration.h"

#include <cstdio>

#include "dcpsim/error.h"
#include "dcpsim/hw/kernel_sources.h"
#include "dcpsim/json_limits.h"
#include "dcpsim/text_file.h"

namespace dcpsim::analysis {

std::string content_hash(std::string_view bytes) {
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ULL;
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::string file_hash(const std::filesystem::path& path) {
  return content_hash(read_text_file(path, "table file"));
}

nlohmann::json fitted_on_json(const std::vector<std::filesystem::path>& tables) {
  nlohmann::json t = nlohmann::json::object();
  for (const auto& p : tables) {
    std::string name = p.filename().string();  // X.json.gz recorded as X.json, the name profiles list
    if (name.ends_with(".json.gz")) name.resize(name.size() - 3);
    t[name] = file_hash(p);
  }
  return {{"kernel_sources", std::string(hw::kernel_sources_hash())},
          {"kernel_sources_rule",
           "SHA-256 over the hw/ops/ files behind the tables' kernels (hw/CMakeLists.txt)"},
          {"tables", t},
          {"tables_rule", "64-bit FNV-1a of each file's bytes (inflated, where it is stored as gzip)"}};
}

std::vector<std::string> stale_calibration(const std::filesystem::path& sidecar,
                                           const std::vector<std::filesystem::path>& table_dirs) {
  const auto j =
      parse_json_checked<nlohmann::json>(read_text_file(sidecar, "calibration sidecar"), sidecar.string());
  const std::string name = sidecar.filename().string();
  if (!j.is_object() || !j.contains("fitted_on"))
    return {name +
            ": records no hash of the kernels and tables it was fitted on (refit it with dcpsim hw "
            "calibrate, or remove it)"};
  std::vector<std::string> out;
  const nlohmann::json& f = j["fitted_on"];
  if (f.value("kernel_sources", "") != hw::kernel_sources_hash())
    out.push_back(name + ": fitted on kernels " + f.value("kernel_sources", "?").substr(0, 12) +
                  ", the tree's are " + std::string(hw::kernel_sources_hash()).substr(0, 12) +
                  " (hw/ops/ changed since: refit with dcpsim hw calibrate, or remove it)");
  if (!f.contains("tables") || !f["tables"].is_object()) return out;
  for (const auto& [file, hash] : f["tables"].items()) {
    std::vector<std::filesystem::path> places{sidecar.parent_path() / file};
    for (const auto& d : table_dirs) places.push_back(d / file);
    std::string found, unreadable;
    for (const auto& p : places) {
      std::error_code ec;
      if (!std::filesystem::is_regular_file(existing_or_gz(p), ec)) continue;
      try {
        found = file_hash(p);
      } catch (const InputError& e) {  // a damaged file (a cut .gz, say): stale, said, not a failure here
        unreadable = e.what();
      }
      break;
    }
    if (!unreadable.empty())
      out.push_back(name + ": table " + file + " cannot be read (" + unreadable + ")");
    else if (found.empty())
      out.push_back(name + ": table " + file + " is gone");
    else if (!hash.is_string() || found != hash.get<std::string>())
      out.push_back(name + ": table " + file + " changed since the fit (refit, or remove the calibration)");
  }
  return out;
}

}  // namespace dcpsim::analysis
