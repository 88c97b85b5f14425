#include "temp_file.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <zlib.h>

#include "dcpsim/error.h"
#include "dcpsim/interrupt.h"
#include "dcpsim/traces/output_file.h"

namespace dcpsim::traces {

std::FILE* open_temp_beside(const std::filesystem::path& target, std::filesystem::path& temp_path) {
  if (target.filename().empty()) throw InputError("output path '" + target.string() + "' names no file");
  // The name is chosen and tracked before the file exists (O_EXCL), so an interruption at any moment finds
  // it in the registry and removes it.
  const std::filesystem::path name = interrupt::temp_name_beside(target);
  const int slot = interrupt::track_file(name);
  const int fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int err = errno;
    interrupt::untrack_file(slot);
    throw InputError("cannot create output file '" + target.string() + "': " + std::strerror(err) +
                     " (its directory must exist and be writable)");
  }
  std::FILE* file = ::fdopen(fd, "wb");
  if (file == nullptr) {
    const int err = errno;
    ::close(fd);
    ::unlink(name.c_str());
    interrupt::untrack_file(slot);
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
    interrupt::untrack_file(temp_path);
    throw RuntimeError("writing '" + target.string() + "' failed (disk full or I/O error)");
  }
  {
    const interrupt::CriticalSection moving;  // an interruption waits until the output is in place
    std::filesystem::rename(temp_path, target, ec);
    if (!ec) interrupt::note_written(target);
  }
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(temp_path, ignored);
    interrupt::untrack_file(temp_path);
    throw RuntimeError("cannot move the finished output into place at '" + target.string() +
                       "': " + ec.message());
  }
  interrupt::untrack_file(temp_path);
}

void commit_temp_gzip(std::FILE*& file, std::filesystem::path& temp_path,
                      const std::filesystem::path& target) {
  const bool write_failed = std::ferror(file) != 0;
  const bool close_failed = std::fclose(file) != 0;
  file = nullptr;
  if (write_failed || close_failed) {
    discard_temp(file, temp_path);
    throw RuntimeError("writing '" + target.string() + "' failed (disk full or I/O error)");
  }
  std::FILE* plain = std::fopen(temp_path.c_str(), "rbe");
  if (plain == nullptr) {
    const int err = errno;
    discard_temp(file, temp_path);
    throw RuntimeError("cannot reopen the temporary file of '" + target.string() +
                       "' to compress it: " + std::strerror(err));
  }
  std::filesystem::path gz_temp;
  std::FILE* out = nullptr;
  try {
    out = open_temp_beside(target, gz_temp);
    std::vector<char> chunk(1 << 20);
    const int fd = ::fcntl(::fileno(out), F_DUPFD_CLOEXEC, 0);
    gzFile gz = fd < 0 ? nullptr : gzdopen(fd, "wb6");
    if (gz == nullptr) {
      const int err = errno;
      if (fd >= 0) ::close(fd);
      throw RuntimeError("cannot start compressing '" + target.string() + "': " + std::strerror(err));
    }
    bool ok = true;
    for (std::size_t n; ok && (n = std::fread(chunk.data(), 1, chunk.size(), plain)) > 0;) {
      ok = gzwrite(gz, chunk.data(), static_cast<unsigned>(n)) == static_cast<int>(n);
    }
    ok = gzclose(gz) == Z_OK && ok && std::ferror(plain) == 0;
    std::fclose(plain);
    plain = nullptr;
    if (!ok)
      throw RuntimeError("writing '" + target.string() +
                         "' failed while compressing (disk full or I/O error)");
    commit_temp(out, gz_temp, target);
  } catch (...) {
    if (plain != nullptr) std::fclose(plain);
    discard_temp(out, gz_temp);
    discard_temp(file, temp_path);
    throw;
  }
  discard_temp(file, temp_path);
}

void discard_temp(std::FILE*& file, std::filesystem::path& temp_path) noexcept {
  if (file != nullptr) std::fclose(file);
  file = nullptr;
  if (!temp_path.empty()) {
    std::error_code ignored;
    std::filesystem::remove(temp_path, ignored);
    interrupt::untrack_file(temp_path);
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
    // Either every file appears or none changes: an interruption waits until all are in place.
    const interrupt::CriticalSection moving;
    for (std::size_t i = 0; i < files.size(); ++i) {
      std::error_code ec;
      std::filesystem::rename(pending[i].temp, files[i].first, ec);
      if (ec) {
        throw RuntimeError("cannot move the finished output into place at '" + files[i].first.string() +
                           "': " + ec.message());
      }
      interrupt::note_written(files[i].first);
      interrupt::untrack_file(pending[i].temp);
      pending[i].temp.clear();
    }
  } catch (...) {
    for (Pending& p : pending) discard_temp(p.file, p.temp);
    throw;
  }
}

}  // namespace dcpsim::traces
