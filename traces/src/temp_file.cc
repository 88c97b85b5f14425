#include "temp_file.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "dcpsim/error.h"
#include "dcpsim/traces/output_file.h"

namespace dcpsim::traces {

std::FILE* open_temp_beside(const std::filesystem::path& target, std::filesystem::path& temp_path) {
  if (target.filename().empty()) throw InputError("output path '" + target.string() + "' names no file");
  const std::filesystem::path dir = target.has_parent_path() ? target.parent_path() : ".";
  std::string name = (dir / ("." + target.filename().string() + ".tmp-XXXXXX")).string();
  const int fd = ::mkstemp(name.data());
  if (fd < 0) {
    throw InputError("cannot create output file '" + target.string() + "': " + std::strerror(errno) +
                     " (its directory must exist and be writable)");
  }
  // mkstemp makes the file private (0600); a trace is an ordinary output file.
  ::fchmod(fd, 0644);
  std::FILE* file = ::fdopen(fd, "wb");
  if (file == nullptr) {
    const int err = errno;
    ::close(fd);
    ::unlink(name.c_str());
    throw RuntimeError("cannot open output file '" + target.string() + "': " + std::strerror(err));
  }
  temp_path = name;
  return file;
}

void commit_temp(std::FILE*& file, const std::filesystem::path& temp_path,
                 const std::filesystem::path& target) {
  const bool write_failed = std::ferror(file) != 0;
  const bool close_failed = std::fclose(file) != 0;
  file = nullptr;
  std::error_code ec;
  if (write_failed || close_failed) {
    std::filesystem::remove(temp_path, ec);
    throw RuntimeError("writing '" + target.string() + "' failed (disk full or I/O error)");
  }
  std::filesystem::rename(temp_path, target, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(temp_path, ignored);
    throw RuntimeError("cannot move the finished output into place at '" + target.string() +
                       "': " + ec.message());
  }
}

void discard_temp(std::FILE*& file, std::filesystem::path& temp_path) noexcept {
  if (file != nullptr) std::fclose(file);
  file = nullptr;
  if (!temp_path.empty()) {
    std::error_code ignored;
    std::filesystem::remove(temp_path, ignored);
    temp_path.clear();
  }
}

void write_file_atomically(const std::filesystem::path& path, std::string_view text) {
  std::filesystem::path temp;
  std::FILE* file = open_temp_beside(path, temp);
  try {
    if (!text.empty()) std::fwrite(text.data(), 1, text.size(), file);
    commit_temp(file, temp, path);
  } catch (...) {
    discard_temp(file, temp);
    throw;
  }
}

}  // namespace dcpsim::traces

namespace dcpsim::traces {

void write_files_atomically(const std::vector<std::pair<std::filesystem::path, std::string>>& files) {
  struct Pending {
    std::FILE* file = nullptr;
    std::filesystem::path temp;
  };
  std::vector<Pending> pending(files.size());
  try {
    for (std::size_t i = 0; i < files.size(); ++i) {
      pending[i].file = open_temp_beside(files[i].first, pending[i].temp);
      const std::string& text = files[i].second;
      if (!text.empty()) std::fwrite(text.data(), 1, text.size(), pending[i].file);
      const bool failed = std::ferror(pending[i].file) != 0;
      const bool close_failed = std::fclose(pending[i].file) != 0;
      pending[i].file = nullptr;
      if (failed || close_failed) {
        throw RuntimeError("writing '" + files[i].first.string() + "' failed (disk full or I/O error)");
      }
    }
    for (std::size_t i = 0; i < files.size(); ++i) {
      std::error_code ec;
      std::filesystem::rename(pending[i].temp, files[i].first, ec);
      if (ec) {
        throw RuntimeError("cannot move the finished output into place at '" + files[i].first.string() +
                           "': " + ec.message());
      }
      pending[i].temp.clear();
    }
  } catch (...) {
    for (Pending& p : pending) discard_temp(p.file, p.temp);
    throw;
  }
}

}  // namespace dcpsim::traces
