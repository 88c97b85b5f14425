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

}  // namespace dcpsim::models::detail
