#pragma once
// An in-memory trace: the header and one section per scenario, each holding the records that followed it.
// TraceCollector builds one from any producer; read_trace() builds one from a file; replay() feeds one back
// into any sink (for example to write it out again or export it).
#include <filesystem>
#include <memory>
#include <optional>
#include <vector>

#include "dcpsim/traces/trace_sink.h"

namespace dcpsim::traces {

class TraceChecker;

struct TraceSection {
  v1::Scenario scenario;
  std::vector<v1::Event> events;
  std::vector<v1::Flow> flows;
  std::vector<v1::RowResult> row_results;
  std::vector<v1::PhaseSummary> phase_summaries;
  std::vector<v1::Summary> summaries;
  std::vector<v1::GpuActivity> gpu_activities;
};

struct Trace {
  std::optional<v1::Header> header;
  std::vector<TraceSection> sections;
};

// Keeps every record it is given. Out-of-order records throw RuntimeError, as in the file writer.
class TraceCollector final : public TraceSink {
 public:
  TraceCollector();
  ~TraceCollector() override;

  void on_header(const v1::Header& header) override;
  void on_scenario(const v1::Scenario& scenario) override;
  void on_event(const v1::Event& event) override;
  void on_flow(const v1::Flow& flow) override;
  void on_row_result(const v1::RowResult& row_result) override;
  void on_phase_summary(const v1::PhaseSummary& phase_summary) override;
  void on_summary(const v1::Summary& summary) override;
  void on_gpu_activity(const v1::GpuActivity& activity) override;
  void finish() override;

  bool finished() const { return finished_; }
  const Trace& trace() const { return trace_; }
  Trace take() { return std::move(trace_); }

 private:
  TraceSection& section();

  Trace trace_;
  std::unique_ptr<TraceChecker> checker_;
  bool finished_ = false;
};

// The whole trace in memory; errors as TraceReader.
Trace read_trace(const std::filesystem::path& path);

// Emits `trace` into `sink` section by section (header, scenario, events, flows, row results, phase
// summaries, summaries) and calls sink.finish().
void replay(const Trace& trace, TraceSink& sink);

}  // namespace dcpsim::traces
