#pragma once
// ChromeTraceWriter: Chrome Trace Event JSON that Perfetto UI (ui.perfetto.dev) and chrome://tracing open.
//
// Layout: one process per rank ("rank r"), one thread per lane within it (named after the lane, ordered by
// first appearance); events and the GPU activities of the repetition they show become "X" slices with their
// bytes, rows and kind in args; flows become "s"/"f" arrows bound to the slices they link; row results become
// instant events on a "rows" lane. Times are µs (fractional, so ns survive) since the trace's origin.
// Sections (scenarios) are laid one after another on the time axis, each marked by a slice on a "scenario"
// lane of rank 0; header, scenarios and summaries go into "otherData".
//
// The file is streamed: events are written as they arrive, so memory stays bounded by the current section's
// flow-linked events. Like ProtobufTraceWriter it writes a temporary file and renames it at finish().
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "dcpsim/traces/trace_sink.h"

namespace dcpsim::traces {

class TraceChecker;

class ChromeTraceWriter final : public TraceSink {
 public:
  // Gap between consecutive sections on the time axis.
  static constexpr std::int64_t kSectionGapNs = 1000;

  explicit ChromeTraceWriter(std::filesystem::path path);
  ~ChromeTraceWriter() override;
  ChromeTraceWriter(const ChromeTraceWriter&) = delete;
  ChromeTraceWriter& operator=(const ChromeTraceWriter&) = delete;

  void on_header(const v1::Header& header) override;
  void on_scenario(const v1::Scenario& scenario) override;
  void on_event(const v1::Event& event) override;
  void on_flow(const v1::Flow& flow) override;
  void on_row_result(const v1::RowResult& row_result) override;
  void on_phase_summary(const v1::PhaseSummary& phase_summary) override;
  void on_summary(const v1::Summary& summary) override;
  // The repetition the section's events show (scenario param "timeline_repetition", else 0) becomes slices
  // on a "gpu stream S" lane of each rank: the GPU timeline under the phases.
  void on_gpu_activity(const v1::GpuActivity& activity) override;
  void finish() override;

 private:
  struct Slice {
    int pid = 0;
    int tid = 0;
    std::int64_t start_ns = 0;
    std::int64_t end_ns = 0;
  };

  void emit(const nlohmann::json& event);
  int tid_for(int rank, const std::string& lane);
  double us(std::int64_t section_ns) const;
  void close_section();
  void discard() noexcept;

  std::filesystem::path path_;
  std::filesystem::path temp_path_;
  std::FILE* file_ = nullptr;
  std::unique_ptr<TraceChecker> checker_;
  bool first_event_ = true;
  std::map<int, std::map<std::string, int>> tids_;  // rank -> lane -> tid
  std::map<std::uint64_t, Slice> slices_by_id_;     // this section's events that carry an id
  std::int64_t section_offset_ns_ = 0;              // where the current section starts on the time axis
  std::int64_t section_end_ns_ = 0;                 // latest time seen in the current section
  std::string section_label_;
  int shown_repetition_ = 0;  // GPU activities of this repetition are drawn
  bool in_section_ = false;
  int section_index_ = -1;
  std::uint64_t next_flow_id_ = 1;
  nlohmann::json other_data_ = nlohmann::json::object();
};

// Reads `in` (a .pb trace) record by record and writes Chrome JSON to `out`. Errors as TraceReader.
void export_chrome(const std::filesystem::path& in, const std::filesystem::path& out);

}  // namespace dcpsim::traces
