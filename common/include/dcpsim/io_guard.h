#pragma once
// Inputs are sacred: every command lists every file it reads and every file it writes in one IoGuard and
// calls check() before any work starts. Inputs must exist and be files (a directory where a file is needed
// is refused with the flag's name); outputs must name files in existing, writable directories, and none may
// be an input, another output, or a file an input directory's scan would read. Paths are compared resolved
// (std::filesystem::weakly_canonical: "a.pb", "./a.pb", "sub/../a.pb" and symlinks are one file) and by
// identity (st_dev + st_ino: hard links too).
//
//   IoGuard io;
//   io.input("--requests", a.requests).output("--out", a.out).output("--plot", a.plot);
//   analysis::guard_profile(io, "--profile", a.profile);  // the profile, the tables it lists (analysis)
//   io.check();  // InputError naming the flags
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace dcpsim {

struct GuardedPath {
  std::string flag;  // "--out", or "input" for a positional; "--profile's table" for derived inputs
  std::filesystem::path path;
};

class IoGuard {
 public:
  // Which file names inside an input directory the command reads.
  using NameFilter = std::function<bool(const std::filesystem::path&)>;

  // A file the command reads: it must exist and be a file or a pipe (not a directory, a device or a socket).
  // Empty paths are skipped.
  IoGuard& input(const std::string& flag, const std::filesystem::path& path);
  // A path that may name a file or something else (a built-in profile's name): guarded when it exists.
  IoGuard& input_if_exists(const std::string& flag, const std::filesystem::path& path);
  // A directory the command reads files from (those `reads` accepts): each such file becomes an input and
  // no output may be a file the directory's scan would read.
  IoGuard& input_dir(const std::string& flag, const std::filesystem::path& dir, NameFilter reads);
  // A file the command writes. Empty paths are skipped.
  IoGuard& output(const std::string& flag, const std::filesystem::path& path);

  // Throws InputError for the first violation; nothing is created or changed.
  void check() const;

  const std::vector<GuardedPath>& inputs() const { return inputs_; }
  const std::vector<GuardedPath>& outputs() const { return outputs_; }

 private:
  struct InputDir {
    GuardedPath dir;
    NameFilter reads;
  };
  std::vector<GuardedPath> inputs_, outputs_;
  std::vector<InputDir> dirs_;
};

// True when `a` and `b` name the same file (resolved paths, or the same device and inode).
bool same_file(const std::filesystem::path& a, const std::filesystem::path& b);

}  // namespace dcpsim
