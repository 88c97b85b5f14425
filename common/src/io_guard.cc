// IoGuard (io_guard.h): the one check of a command's inputs against its outputs.
#include "dcpsim/io_guard.h"

#include <sys/stat.h>
#include <unistd.h>

#include <system_error>

#include "dcpsim/error.h"

namespace dcpsim {
namespace {

namespace fs = std::filesystem;

std::string quoted(const GuardedPath& p) {
  return p.flag + " '" + p.path.string() + "'";
}

fs::path resolved(const fs::path& p) {
  std::error_code ec;
  fs::path r = fs::weakly_canonical(p, ec);
  return ec ? fs::absolute(p, ec).lexically_normal() : r;
}

bool inside(const fs::path& file, const fs::path& dir) {
  const fs::path f = resolved(file), d = resolved(dir);
  auto fi = f.begin();
  for (auto di = d.begin(); di != d.end(); ++di, ++fi) {
    if (di->empty()) continue;  // a trailing separator
    if (fi == f.end() || *fi != *di) return false;
  }
  return true;
}

void check_input(const GuardedPath& in) {
  struct stat st {};
  if (::stat(in.path.c_str(), &st) != 0) {
    throw InputError(quoted(in) + ": no such file");
  }
  if (S_ISDIR(st.st_mode)) throw InputError(quoted(in) + " is a directory; a file is needed");
  // A pipe is fine (`--requests <(zcat trace.gz)`); a device such as /dev/zero would be read without end.
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) || S_ISSOCK(st.st_mode))
    throw InputError(quoted(in) + " is a device or a socket, not a file");
  if (::access(in.path.c_str(), R_OK) != 0) throw InputError(quoted(in) + " cannot be read (permission)");
}

void check_writable(const GuardedPath& out) {
  std::error_code ec;
  const fs::path name = out.path.filename();
  if (name.empty() || name == "." || name == "..")
    throw InputError(quoted(out) + " names a directory, not a file");
  // Its temporary file beside it is named ".<name>.tmp-<pid>-<n><suffix>": the name must leave room for that.
  constexpr std::size_t kNameMax = 255, kTempExtra = 48;
  if (name.string().size() + kTempExtra > kNameMax) {
    throw InputError(quoted(out) + ": the file name is " + std::to_string(name.string().size()) +
                     " characters long; at most " + std::to_string(kNameMax - kTempExtra) + " are allowed");
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

bool same_file(const fs::path& a, const fs::path& b) {
  if (resolved(a) == resolved(b)) return true;
  struct stat sa {
  }, sb{};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

IoGuard& IoGuard::input(const std::string& flag, const fs::path& path) {
  if (!path.empty()) inputs_.push_back({flag, path});
  return *this;
}

IoGuard& IoGuard::input_if_exists(const std::string& flag, const fs::path& path) {
  std::error_code ec;
  if (!path.empty() && fs::exists(path, ec)) inputs_.push_back({flag, path});
  return *this;
}

IoGuard& IoGuard::input_dir(const std::string& flag, const fs::path& dir, NameFilter reads) {
  if (dir.empty()) return *this;
  dirs_.push_back({{flag, dir}, reads});
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return *this;  // check() says so
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (it->is_regular_file(ec) && (!reads || reads(it->path()))) inputs_.push_back({flag, it->path()});
  }
  return *this;
}

IoGuard& IoGuard::output(const std::string& flag, const fs::path& path) {
  if (!path.empty()) outputs_.push_back({flag, path});
  return *this;
}

void IoGuard::check() const {
  for (const InputDir& d : dirs_) {
    std::error_code ec;
    if (!fs::is_directory(d.dir.path, ec)) throw InputError(quoted(d.dir) + " is not a directory");
  }
  for (const GuardedPath& in : inputs_) check_input(in);
  for (std::size_t i = 0; i < outputs_.size(); ++i) {
    const GuardedPath& out = outputs_[i];
    check_writable(out);
    for (const GuardedPath& in : inputs_) {
      if (same_file(in.path, out.path)) {
        throw InputError(quoted(out) + " is the same file as the input " + quoted(in) +
                         "; it would be overwritten");
      }
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (same_file(outputs_[j].path, out.path)) {
        throw InputError(quoted(out) + " is the same file as " + quoted(outputs_[j]) +
                         "; each output needs its own path");
      }
    }
    for (const InputDir& d : dirs_) {
      if (inside(out.path, d.dir.path) && (!d.reads || d.reads(out.path))) {
        throw InputError(quoted(out) + " lies in the input directory " + quoted(d.dir) +
                         ", which the command reads; write it elsewhere");
      }
    }
  }
}

}  // namespace dcpsim
