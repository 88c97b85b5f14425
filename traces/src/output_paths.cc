// check_output_paths: refuse, before anything runs, an output that would overwrite an input, collide with
// another output, or could not be written at the end of a long job.
#include <unistd.h>

#include <system_error>

#include "dcpsim/error.h"
#include "dcpsim/traces/output_file.h"

namespace dcpsim::traces {
namespace {

namespace fs = std::filesystem;

std::string quoted(const PathFlag& p) {
  return p.flag + " '" + p.path.string() + "'";
}

fs::path resolved(const fs::path& p) {
  std::error_code ec;
  fs::path r = fs::weakly_canonical(p, ec);
  return ec ? fs::absolute(p, ec).lexically_normal() : r;
}

bool same_file(const fs::path& a, const fs::path& b) {
  if (resolved(a) == resolved(b)) return true;
  std::error_code ec;
  return fs::exists(a, ec) && fs::exists(b, ec) && fs::equivalent(a, b, ec) && !ec;
}

void check_writable(const PathFlag& out) {
  std::error_code ec;
  if (out.path.filename().empty() || out.path.filename() == "." || out.path.filename() == "..") {
    throw InputError(quoted(out) + " names a directory, not a file");
  }
  const fs::file_status st = fs::status(out.path, ec);
  if (fs::is_directory(st)) throw InputError(quoted(out) + " is a directory; give a file name");
  if (fs::exists(st) && !fs::is_regular_file(st)) {
    throw InputError(quoted(out) + " exists and is not a regular file");
  }
  const fs::path dir = out.path.has_parent_path() ? out.path.parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec)) {
    throw InputError(quoted(out) + ": directory '" + dir.string() + "' does not exist");
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    throw InputError(quoted(out) + ": directory '" + dir.string() + "' is not writable");
  }
}

}  // namespace

void check_output_paths(const std::vector<PathFlag>& inputs, const std::vector<PathFlag>& outputs) {
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const PathFlag& out = outputs[i];
    if (out.path.empty()) continue;
    check_writable(out);
    for (const PathFlag& in : inputs) {
      if (!in.path.empty() && same_file(in.path, out.path)) {
        throw InputError(quoted(out) + " is the same file as the input " + quoted(in) +
                         "; it would be overwritten");
      }
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (!outputs[j].path.empty() && same_file(outputs[j].path, out.path)) {
        throw InputError(quoted(out) + " is the same file as " + quoted(outputs[j]) +
                         "; each output needs its own path");
      }
    }
  }
}

}  // namespace dcpsim::traces
