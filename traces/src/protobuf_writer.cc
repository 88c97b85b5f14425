#include "dcpsim/traces/protobuf_writer.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <array>
#include <cctype>
#include <utility>

#include "dcpsim/error.h"
#include "temp_file.h"
#include "trace_checker.h"

namespace dcpsim::traces {

bool is_trace_magic(std::string_view first_bytes) {
  const std::string_view head = first_bytes.substr(0, kTraceMagicSize);
  return head == std::string_view(kTraceMagic, kTraceMagicSize) ||
         head == std::string_view(kTraceMagicV2, kTraceMagicSize);
}

std::uint32_t crc32c(std::string_view data) {
  static const auto table = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  std::uint32_t crc = 0xffffffffu;
  for (unsigned char b : data) crc = table[(crc ^ b) & 0xff] ^ (crc >> 8);
  return crc ^ 0xffffffffu;
}

ProtobufTraceWriter::ProtobufTraceWriter(std::filesystem::path path)
    : path_(std::move(path)), checker_(std::make_unique<TraceChecker>()) {
  file_ = open_temp_beside(path_, temp_path_);
  if (std::fwrite(kTraceMagicV2, 1, kTraceMagicSize, file_) != kTraceMagicSize) {
    discard();
    throw RuntimeError("writing '" + path_.string() + "' failed at its first bytes");
  }
}

ProtobufTraceWriter::~ProtobufTraceWriter() {
  discard();
}

void ProtobufTraceWriter::discard() noexcept {
  discard_temp(file_, temp_path_);
}

void ProtobufTraceWriter::write(const v1::Record& record) {
  if (auto why = checker_->check(record); !why.empty()) {
    throw RuntimeError("trace writer for '" + path_.string() + "': " + why);
  }
  if (file_ == nullptr) throw RuntimeError("trace writer for '" + path_.string() + "' is already closed");
  const std::size_t size = record.ByteSizeLong();
  if (size > kMaxRecordBytes) {
    throw RuntimeError("trace writer for '" + path_.string() + "': a record of " + std::to_string(size) +
                       " bytes exceeds the limit of " + std::to_string(kMaxRecordBytes));
  }
  buffer_.clear();
  {
    google::protobuf::io::StringOutputStream raw(&buffer_);
    google::protobuf::io::CodedOutputStream out(&raw);
    // Deterministic map order: the same trace always gives the same bytes, so files can be compared.
    out.SetSerializationDeterministic(true);
    out.WriteVarint64(size);
    record.SerializeWithCachedSizes(&out);
  }
  const std::uint32_t crc = masked_crc32c(std::string_view(buffer_).substr(buffer_.size() - size));
  for (int i = 0; i < 4; ++i) buffer_.push_back(static_cast<char>((crc >> (8 * i)) & 0xff));
  if (std::fwrite(buffer_.data(), 1, buffer_.size(), file_) != buffer_.size()) {
    throw RuntimeError("writing '" + path_.string() + "' failed (disk full or I/O error)");
  }
  ++records_;
}

void ProtobufTraceWriter::on_header(const v1::Header& header) {
  record_.mutable_header()->CopyFrom(header);
  write(record_);
}

void ProtobufTraceWriter::on_scenario(const v1::Scenario& scenario) {
  record_.mutable_scenario()->CopyFrom(scenario);
  write(record_);
}

void ProtobufTraceWriter::on_event(const v1::Event& event) {
  record_.mutable_event()->CopyFrom(event);
  write(record_);
}

void ProtobufTraceWriter::on_flow(const v1::Flow& flow) {
  record_.mutable_flow()->CopyFrom(flow);
  write(record_);
}

void ProtobufTraceWriter::on_row_result(const v1::RowResult& row_result) {
  record_.mutable_row_result()->CopyFrom(row_result);
  write(record_);
}

void ProtobufTraceWriter::on_phase_summary(const v1::PhaseSummary& phase_summary) {
  record_.mutable_phase_summary()->CopyFrom(phase_summary);
  write(record_);
}

void ProtobufTraceWriter::on_summary(const v1::Summary& summary) {
  record_.mutable_summary()->CopyFrom(summary);
  write(record_);
}

void ProtobufTraceWriter::on_gpu_activity(const v1::GpuActivity& activity) {
  record_.mutable_gpu_activity()->CopyFrom(activity);
  write(record_);
}

void ProtobufTraceWriter::finish() {
  if (auto why = checker_->finish(); !why.empty()) {
    throw RuntimeError("trace writer for '" + path_.string() + "': " + why);
  }
  std::string ext = path_.extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (ext == ".gz") {
    commit_temp_gzip(file_, temp_path_, path_);  // a *.gz name promises a gzip stream (readers inflate it)
  } else {
    commit_temp(file_, temp_path_, path_);
  }
  temp_path_.clear();
}

}  // namespace dcpsim::traces
