#pragma once
// The profile JSON files embedded at build time. models/CMakeLists.txt generates the definition from every
// models/profiles/*.json (re-run when one changes), so the files stay the single source of truth.
#include <span>
#include <string_view>

namespace dcpsim::models::detail {

struct EmbeddedProfile {
  std::string_view name;  // the file name without .json
  std::string_view json;  // the file's text, unchanged
};

std::span<const EmbeddedProfile> embedded_profiles();
// models/tables/*.json, by file name ("h200-sxm-attention.json"); built-in profiles reference them.
std::span<const EmbeddedProfile> embedded_tables();
// The text of a built-in table file, or "" when there is none of that name.
inline std::string_view builtin_table_json(std::string_view file) {
  for (const EmbeddedProfile& e : embedded_tables())
    if (e.name == file) return e.json;
  return {};
}

}  // namespace dcpsim::models::detail
