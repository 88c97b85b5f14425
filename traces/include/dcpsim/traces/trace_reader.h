#pragma once
// TraceReader: reads a .pb trace one record at a time, so a trace far larger than memory can be scanned. The
// file may be gzip-compressed (`gzip -9n x.pb` → x.pb.gz: recognised by its magic bytes, not its name;
// offsets then count uncompressed bytes). Every problem with the file — missing, wrong magic, a truncated or
// unparseable record, records out of order, corrupt gzip data — is an InputError naming the file and the byte
// offset of the record at fault.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "dcpsim/traces/trace_sink.h"

namespace dcpsim::traces {

class TraceChecker;
class InputFile;

class TraceReader {
 public:
  explicit TraceReader(std::filesystem::path path);
  ~TraceReader();
  TraceReader(const TraceReader&) = delete;
  TraceReader& operator=(const TraceReader&) = delete;

  // Reads the next record into `record`; false at the clean end of the file.
  bool next(v1::Record& record);
  // Byte offset of the next record (after the last one read).
  std::uint64_t offset() const { return offset_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  [[noreturn]] void fail(std::uint64_t at, const std::string& what) const;
  void gzip_check() const;  // InputError when the compressed stream was corrupt or cut short
  bool read_length(std::uint64_t& length);

  std::filesystem::path path_;
  std::unique_ptr<InputFile> file_;
  std::istream* in_ = nullptr;
  std::uint64_t offset_ = 0;
  std::uint64_t file_size_ = 0;
  std::string buffer_;
  std::unique_ptr<TraceChecker> checker_;
  bool checksummed_ = false;  // version 2: a CRC32C after every record
  std::uint64_t records_ = 0;
};

// Sends Protobuf's own log lines (e.g. "Can't parse message ...") to dcpsim's error handling instead of
// stderr: the reader's one-line error then says what Protobuf said. Called once by main().
void route_protobuf_logging();

// Whether a file's name is a trace's: "*.pb", or "*.pb.gz" compressed (what a directory given for traces is
// searched for).
bool is_trace_file_name(const std::filesystem::path& path);

// Reads the whole file and hands each record to `sink`, then calls sink.finish(). Memory stays bounded by the
// largest record (plus whatever the sink keeps).
void stream_trace(const std::filesystem::path& path, TraceSink& sink);

}  // namespace dcpsim::traces
