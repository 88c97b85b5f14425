#include "dcpsim/traces/trace_reader.h"

#include <google/protobuf/stubs/logging.h>

#include <cstdio>
#include <limits>
#include <system_error>
#include <utility>

#include "dcpsim/error.h"
#include "dcpsim/traces/import_io.h"
#include "dcpsim/traces/phases.h"
#include "dcpsim/traces/protobuf_writer.h"
#include "trace_checker.h"

namespace dcpsim::traces {
namespace {

// Protobuf's latest log message on this thread (route_protobuf_logging).
std::string& protobuf_log() {
  thread_local std::string last;
  return last;
}

void keep_protobuf_log(google::protobuf::LogLevel level, const char*, int, const std::string& message) {
  if (level >= google::protobuf::LOGLEVEL_FATAL) {
    std::fprintf(stderr, "dcpsim: error: Protobuf: %s\n", message.c_str());
    return;
  }
  protobuf_log() = message.substr(0, 300);
  for (char& c : protobuf_log()) {
    if (c == '\n') c = ' ';
  }
}

}  // namespace

void route_protobuf_logging() {
  google::protobuf::SetLogHandler(&keep_protobuf_log);
}

TraceReader::TraceReader(std::filesystem::path path)
    : path_(std::move(path)), checker_(std::make_unique<TraceChecker>()) {
  std::error_code ec;
  if (!std::filesystem::exists(path_, ec))
    throw InputError("trace file '" + path_.string() + "' does not exist");
  if (std::filesystem::is_directory(path_, ec)) {
    throw InputError("trace file '" + path_.string() + "' is a directory, not a trace");
  }
  try {
    file_ = std::make_unique<InputFile>(path_);
  } catch (const InputError& e) {
    throw InputError("cannot open trace file '" + path_.string() + "' for reading (" + e.what() + ")");
  }
  in_ = &file_->stream();
  file_size_ = std::filesystem::file_size(path_, ec);
  // Not a regular file, or compressed: the reads say where it ends.
  if (ec || file_->gzipped()) file_size_ = std::numeric_limits<std::uint64_t>::max();

  char magic[kTraceMagicSize] = {};
  in_->read(magic, kTraceMagicSize);
  gzip_check();
  if (static_cast<std::size_t>(in_->gcount()) != kTraceMagicSize ||
      !is_trace_magic(std::string_view(magic, kTraceMagicSize))) {
    fail(0, "not a dcpsim trace (its first bytes are not the magic \"DCPTRC1\\n\" or \"DCPTRC2\\n\")");
  }
  checksummed_ = std::string_view(magic, kTraceMagicSize) == std::string_view(kTraceMagicV2, kTraceMagicSize);
  offset_ = kTraceMagicSize;
}

TraceReader::~TraceReader() = default;

void TraceReader::gzip_check() const {
  try {
    file_->check();
  } catch (const InputError& e) {
    if (file_->too_large()) throw;  // the --max-input-gb cap: its own message
    throw InputError("trace file '" + path_.string() + "', offset " + std::to_string(offset_) +
                     ": corrupt or truncated gzip data");
  }
}

void TraceReader::fail(std::uint64_t at, const std::string& what) const {
  throw InputError("trace file '" + path_.string() + "', offset " + std::to_string(at) + ": " + what);
}

// Reads the varint length prefix; false at a clean end of file (no byte at all).
bool TraceReader::read_length(std::uint64_t& length) {
  length = 0;
  for (int i = 0; i < 10; ++i) {
    const int c = in_->get();
    if (c == std::char_traits<char>::eof()) {
      gzip_check();
      if (i == 0) return false;
      fail(offset_, "truncated record (the file ends inside its length prefix)");
    }
    length |= static_cast<std::uint64_t>(c & 0x7f) << (7 * i);
    if ((c & 0x80) == 0) {
      buffer_.resize(static_cast<std::size_t>(i) + 1);  // remember the prefix size for the offset arithmetic
      return true;
    }
  }
  fail(offset_, "corrupt record length (a varint longer than 10 bytes)");
}

bool TraceReader::next(v1::Record& record) {
  std::uint64_t length = 0;
  if (!read_length(length)) return false;
  const std::uint64_t body_at = offset_ + buffer_.size();
  if (length > kMaxRecordBytes) {
    fail(offset_, "record length " + std::to_string(length) + " exceeds the limit of " +
                      std::to_string(kMaxRecordBytes) + " bytes (corrupt file?)");
  }
  const std::uint64_t trailer = checksummed_ ? 4 : 0;
  if (file_size_ != std::numeric_limits<std::uint64_t>::max() && body_at + length + trailer > file_size_) {
    fail(offset_, "truncated record: it declares " + std::to_string(length) + " bytes but only " +
                      std::to_string(file_size_ - body_at) + " remain");
  }
  buffer_.resize(length);
  in_->read(buffer_.data(), static_cast<std::streamsize>(length));
  if (static_cast<std::uint64_t>(in_->gcount()) != length) {
    gzip_check();
    fail(offset_, "truncated record: it declares " + std::to_string(length) + " bytes but only " +
                      std::to_string(in_->gcount()) + " remain");
  }
  const std::string record_name = "record " + std::to_string(records_);
  if (checksummed_) {
    unsigned char crc_bytes[4] = {};
    in_->read(reinterpret_cast<char*>(crc_bytes), 4);
    if (in_->gcount() != 4) gzip_check();
    if (in_->gcount() != 4) fail(offset_, record_name + " is truncated (its checksum is missing)");
    const std::uint32_t stored = static_cast<std::uint32_t>(crc_bytes[0]) |
                                 (std::uint32_t{crc_bytes[1]} << 8) | (std::uint32_t{crc_bytes[2]} << 16) |
                                 (std::uint32_t{crc_bytes[3]} << 24);
    if (stored != masked_crc32c(buffer_)) {
      fail(offset_, record_name + " fails its CRC32C checksum (the file is corrupt)");
    }
  }
  protobuf_log().clear();
  if (!record.ParseFromString(buffer_)) {
    const std::string said = protobuf_log();
    fail(offset_, record_name + " is unparseable (not a dcpsim.trace.v1.Record" +
                      (said.empty() ? std::string(")") : "; Protobuf: " + said + ")"));
  }
  if (auto why = checker_->check(record); !why.empty()) fail(offset_, record_name + ": " + why);
  rename_legacy_phases(record);  // older traces' phase names, as the step vocabulary names them now
  offset_ = body_at + length + trailer;
  ++records_;
  return true;
}

bool is_trace_file_name(const std::filesystem::path& path) {
  const std::string name = path.filename().string();
  const auto ends_with = [&](std::string_view tail) {
    return name.size() > tail.size() && name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
  };
  return ends_with(".pb") || ends_with(".pb.gz");
}

void stream_trace(const std::filesystem::path& path, TraceSink& sink) {
  TraceReader reader(path);
  v1::Record record;
  while (reader.next(record)) deliver(record, sink);
  sink.finish();
}

}  // namespace dcpsim::traces
