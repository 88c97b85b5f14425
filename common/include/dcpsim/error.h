#pragma once
// The two kinds of failure dcpsim distinguishes. Library code throws; only main() maps them to exit codes:
// InputError -> exit 2 (a bad flag, file, field or impossible request; the message names the value and what
// is allowed), RuntimeError -> exit 1 (the request was valid but running it failed: a CUDA error, a mismatch
// against the reference, a deadlocked simulation).
#include <stdexcept>
#include <string>

namespace dcpsim {

class InputError : public std::invalid_argument {
 public:
  explicit InputError(const std::string& what) : std::invalid_argument(what) {}
};

class RuntimeError : public std::runtime_error {
 public:
  explicit RuntimeError(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace dcpsim
