#pragma once
// ProtobufTraceWriter: streams a trace to a .pb file (magic + length-delimited Record messages, see the
// schema). Records go to a temporary file next to the target; finish() renames it into place, so a reader
// never sees a half-written trace. A writer destroyed without finish() removes its temporary file. A path
// ending in .gz gets a gzip stream (compressed at finish()), as every reader of traces accepts.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "dcpsim/traces/trace_sink.h"

namespace dcpsim::traces {

class TraceChecker;

// The 8 bytes every trace file starts with. Version 1 frames each record as a varint length and the
// serialized Record; version 2 (written since) follows each record with its CRC32C, masked as TFRecord masks
// it, 4 bytes little-endian, so a flipped byte is an error naming the record. Readers accept both.
inline constexpr char kTraceMagic[] = "DCPTRC1\n";
inline constexpr char kTraceMagicV2[] = "DCPTRC2\n";
inline constexpr std::size_t kTraceMagicSize = sizeof(kTraceMagic) - 1;

// True when `first_bytes` (at least kTraceMagicSize of them) start a trace of either version.
bool is_trace_magic(std::string_view first_bytes);

// CRC32C (Castagnoli) of `data`, and its masked form stored after each version-2 record.
std::uint32_t crc32c(std::string_view data);
inline std::uint32_t masked_crc32c(std::string_view data) {
  const std::uint32_t crc = crc32c(data);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}
// No record may be larger; a reader treats a longer length prefix as a corrupt file rather than allocating
// it.
inline constexpr std::uint64_t kMaxRecordBytes = std::uint64_t{256} << 20;

class ProtobufTraceWriter final : public TraceSink {
 public:
  // Throws InputError when the target's directory does not exist or cannot be written.
  explicit ProtobufTraceWriter(std::filesystem::path path);
  ~ProtobufTraceWriter() override;
  ProtobufTraceWriter(const ProtobufTraceWriter&) = delete;
  ProtobufTraceWriter& operator=(const ProtobufTraceWriter&) = delete;

  // Records out of order (see trace_sink.h) throw RuntimeError: the producer is at fault, not the user.
  void on_header(const v1::Header& header) override;
  void on_scenario(const v1::Scenario& scenario) override;
  void on_event(const v1::Event& event) override;
  void on_flow(const v1::Flow& flow) override;
  void on_row_result(const v1::RowResult& row_result) override;
  void on_phase_summary(const v1::PhaseSummary& phase_summary) override;
  void on_summary(const v1::Summary& summary) override;
  void on_gpu_activity(const v1::GpuActivity& activity) override;
  // Flushes, closes and renames the file into place; throws RuntimeError if any write failed.
  void finish() override;

  const std::filesystem::path& path() const { return path_; }
  std::uint64_t records_written() const { return records_; }

 private:
  void write(const v1::Record& record);
  void discard() noexcept;

  std::filesystem::path path_;
  std::filesystem::path temp_path_;
  std::FILE* file_ = nullptr;
  std::unique_ptr<TraceChecker> checker_;
  v1::Record record_;  // reused so each record does not reallocate its oneof body
  std::string buffer_;
  std::uint64_t records_ = 0;
};

}  // namespace dcpsim::traces
