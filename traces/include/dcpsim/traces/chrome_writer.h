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
// Slices on one thread always nest or are disjoint, as the viewers require: where a lane's slices overlap
// without nesting (a ring's steps pipelined on one link, a wait beside the kernel it waits in), the later
// ones go to further threads of the lane, "nvlink (2)", "nvlink (3)", ..., sorted right after it: each slice
// on the first thread of the lane where it nests in or follows what is there (by start time, longest first).
//
// The file is streamed section by section: a section's slices are held until the next section starts (to lay
// them on threads), so memory stays bounded by one section. Like ProtobufTraceWriter it writes a temporary
// file and renames it at finish().
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
  // A slice of the current section, waiting for its thread (close_section()).
  struct Slice {
    int rank = 0;
    std::string lane;
    std::int64_t start_ns = 0;
    std::int64_t end_ns = 0;
    nlohmann::json event;  // the "X" event without pid and tid
    int tid = 0;
  };
  // A lane of a rank: the threads it has, in order (track 0 keeps the lane's name).
  struct Lane {
    int order = 0;          // first appearance among the rank's lanes
    std::vector<int> tids;  // per track
  };

  void emit(const nlohmann::json& event);
  int tid_for(int rank, const std::string& lane, int track = 0);
  double us(std::int64_t section_ns) const;
  void add_slice(int rank, const std::string& lane, std::int64_t start_ns, std::int64_t end_ns,
                 nlohmann::json event, const std::uint64_t* id);
  void place_slices();
  void emit_flow(const v1::Flow& flow);
  void close_section();
  void discard() noexcept;

  std::filesystem::path path_;
  std::filesystem::path temp_path_;
  std::FILE* file_ = nullptr;
  std::unique_ptr<TraceChecker> checker_;
  bool first_event_ = true;
  std::map<int, std::map<std::string, Lane>> lanes_;   // rank -> lane -> its threads
  std::map<int, int> next_tid_;                        // rank -> tids handed out
  std::vector<Slice> slices_;                          // this section's, in arrival order
  std::map<std::uint64_t, std::size_t> slices_by_id_;  // this section's events that carry an id
  std::vector<v1::Flow> flows_;                        // this section's, emitted once slices have threads
  std::int64_t section_offset_ns_ = 0;                 // where the current section starts on the time axis
  std::int64_t section_end_ns_ = 0;                    // latest time seen in the current section
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
