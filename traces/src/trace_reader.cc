#include "dcpsim/traces/trace_reader.h"

#include <limits>
#include <system_error>
#include <utility>

#include "dcpsim/error.h"
#include "dcpsim/traces/protobuf_writer.h"
#include "trace_checker.h"

namespace dcpsim::traces {

TraceReader::TraceReader(std::filesystem::path path)
    : path_(std::move(path)), checker_(std::make_unique<TraceChecker>()) {
  std::error_code ec;
  if (!std::filesystem::exists(path_, ec))
    throw InputError("trace file '" + path_.string() + "' does not exist");
  if (std::filesystem::is_directory(path_, ec)) {
    throw InputError("trace file '" + path_.string() + "' is a directory, not a trace");
  }
  in_.open(path_, std::ios::binary);
  if (!in_) throw InputError("cannot open trace file '" + path_.string() + "' for reading");
  file_size_ = std::filesystem::file_size(path_, ec);
  if (ec) file_size_ = std::numeric_limits<std::uint64_t>::max();  // not a regular file: rely on reads

  char magic[kTraceMagicSize] = {};
  in_.read(magic, kTraceMagicSize);
  if (static_cast<std::size_t>(in_.gcount()) != kTraceMagicSize ||
      std::string_view(magic, kTraceMagicSize) != std::string_view(kTraceMagic, kTraceMagicSize)) {
    fail(0, "not a dcpsim trace (its first bytes are not the magic \"DCPTRC1\\n\")");
  }
  offset_ = kTraceMagicSize;
}

TraceReader::~TraceReader() = default;

void TraceReader::fail(std::uint64_t at, const std::string& what) const {
  throw InputError("trace file '" + path_.string() + "', offset " + std::to_string(at) + ": " + what);
}

// Reads the varint length prefix; false at a clean end of file (no byte at all).
bool TraceReader::read_length(std::uint64_t& length) {
  length = 0;
  for (int i = 0; i < 10; ++i) {
    const int c = in_.get();
    if (c == std::char_traits<char>::eof()) {
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
  if (file_size_ != std::numeric_limits<std::uint64_t>::max() && body_at + length > file_size_) {
    fail(offset_, "truncated record: it declares " + std::to_string(length) + " bytes but only " +
                      std::to_string(file_size_ - body_at) + " remain");
  }
  buffer_.resize(length);
  in_.read(buffer_.data(), static_cast<std::streamsize>(length));
  if (static_cast<std::uint64_t>(in_.gcount()) != length) {
    fail(offset_, "truncated record: it declares " + std::to_string(length) + " bytes but only " +
                      std::to_string(in_.gcount()) + " remain");
  }
  if (!record.ParseFromString(buffer_)) fail(offset_, "unparseable record (not a dcpsim.trace.v1.Record)");
  if (auto why = checker_->check(record); !why.empty()) fail(offset_, why);
  offset_ = body_at + length;
  return true;
}

void stream_trace(const std::filesystem::path& path, TraceSink& sink) {
  TraceReader reader(path);
  v1::Record record;
  while (reader.next(record)) deliver(record, sink);
  sink.finish();
}

}  // namespace dcpsim::traces
