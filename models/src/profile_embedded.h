#pragma once
// The profile JSON files embedded at build time. models/CMakeLists.txt generates the definition from every
// models/profiles/*.json (re-run when one changes), so the files stay the single source of truth.
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
// The text of a built-in table file (inflated), or "" when there is none of that name.
inline std::string builtin_table_json(std::string_view file) {
  for (const EmbeddedProfile& e : embedded_tables())
    if (e.name == file)
      return is_gzip(e.json) ? gunzip(e.json, std::string(file) + " (built-in)") : std::string(e.json);
  return {};
}

}  // namespace dcpsim::models::detail
