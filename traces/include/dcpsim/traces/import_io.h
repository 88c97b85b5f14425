#pragma once
// Reading the third-party files that importers take in: request traces, profiler timelines. A file may be
// plain or gzip-compressed (recognised by its magic bytes, not its name), and is read as a stream so that a
// trace far larger than memory is never held whole. Every problem — a missing or unreadable file, a corrupt
// or truncated gzip stream — is an InputError that names the file.
#include <cstdint>
#include <filesystem>
#include <istream>
#include <memory>
#include <string>
#include <string_view>

namespace dcpsim::traces {

class InputFile {
 public:
  // Throws InputError when `path` is missing, a directory, or cannot be opened.
  explicit InputFile(std::filesystem::path path);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  // The decompressed bytes. A gzip error ends the stream early; call check() after reading to turn it into an
  // InputError (a parser that fails first should call check() before reporting its own complaint).
  std::istream& stream();

  // The next line without its terminator ("\n" or "\r\n"); false at the end of the data. Counts lines, so
  // that errors can name them; a decompression error is thrown here as soon as it happens.
  bool next_line(std::string& line);
  std::int64_t line_number() const { return line_number_; }

  // Throws InputError naming the file when decompression failed (corrupt or truncated gzip) or a gzip stream
  // expanded past memory::max_input_bytes() (--max-input-gb: a small file must not expand without bound).
  void check() const;

  bool gzipped() const;
  bool too_large() const;  // the stream ended at the --max-input-gb cap
  const std::filesystem::path& path() const { return path_; }

  // "file:line: what" — the prefix every line-oriented importer uses in its errors.
  std::string where(std::int64_t line) const;

 private:
  class GzipBuffer;

  std::filesystem::path path_;
  std::unique_ptr<GzipBuffer> buffer_;
  std::unique_ptr<std::istream> stream_;
  std::int64_t line_number_ = 0;
};

// How often `needle` occurs in what `path` expands to, reading at most `max_bytes` (a quick pass before a
// reader that holds per-occurrence state, for its memory estimate). Throws InputError as InputFile does.
std::int64_t count_occurrences(const std::filesystem::path& path, std::string_view needle, double max_bytes);

// The bytes `path` will expand to when read: its size, or for gzip its trailer's ISIZE (the size modulo 2^32,
// taken as at least the compressed size, and ignored past deflate's 1032:1 ratio: a truncated file's last
// bytes are no size), for memory estimates before reading. 0 when it cannot be read.
double expanded_size_hint(const std::filesystem::path& path);

}  // namespace dcpsim::traces
