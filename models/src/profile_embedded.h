#pragma once
// The profile JSON files embedded at build time. models/CMakeLists.txt generates the definition from every
// models/profiles/*.json (re-run when one changes), so the files stay the single source of truth.
#include <functional>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <string_view>

#include "dcpsim/text_file.h"

namespace dcpsim::models::detail {

struct EmbeddedProfile {
  std::string_view name;  // the file name without .json
  std::string_view json;  // the file's text, unchanged
};

std::span<const EmbeddedProfile> embedded_profiles();
// models/tables/*.json and *.json.gz, by file name without .gz ("h200-sxm-attention.json"); built-in profiles
// reference them. A compressed file's `json` is its gzip bytes, as stored.
std::span<const EmbeddedProfile> embedded_tables();
// The text of a built-in table file (inflated once per process, then kept), or "" when there is none of that
// name. Not capped by --max-input-gb: the bytes are the binary's own.
inline std::string builtin_table_json(std::string_view file) {
  static std::mutex lock;
  static std::map<std::string, std::string, std::less<>> inflated;
  for (const EmbeddedProfile& e : embedded_tables()) {
    if (e.name != file) continue;
    if (!is_gzip(e.json)) return std::string(e.json);
    const std::lock_guard<std::mutex> hold(lock);
    auto it = inflated.find(file);
    if (it == inflated.end())
      it =
          inflated.emplace(std::string(file), gunzip(e.json, std::string(file) + " (built-in)", false)).first;
    return it->second;
  }
  return {};
}

}  // namespace dcpsim::models::detail
