#pragma once
// Shared by the libFuzzer targets: the input goes to a scratch file (the parsers read files, some gzip'd),
// and dcpsim's own errors are the expected outcome of a bad input. Anything else escaping — another
// exception, a crash, a sanitizer report — is a finding.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>

#include "dcpsim/error.h"

namespace dcpsim::fuzz {

// A per-process scratch file with `suffix` (the parsers pick the format by extension).
inline std::filesystem::path scratch(const char* suffix, const std::uint8_t* data, std::size_t size) {
  const std::filesystem::path p =
      std::filesystem::temp_directory_path() / ("dcpsim-fuzz-" + std::to_string(::getpid()) + suffix);
  std::FILE* f = std::fopen(p.c_str(), "wb");
  if (f != nullptr) {
    if (size > 0) std::fwrite(data, 1, size, f);
    std::fclose(f);
  }
  return p;
}

template <class F>
int expect_dcpsim_errors(F&& body) {
  try {
    body();
  } catch (const InputError&) {
  } catch (const RuntimeError&) {
  }
  return 0;
}

}  // namespace dcpsim::fuzz
