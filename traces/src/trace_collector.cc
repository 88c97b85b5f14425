#include "dcpsim/traces/trace_collector.h"

#include "dcpsim/error.h"
#include "dcpsim/traces/trace_reader.h"
#include "trace_checker.h"

namespace dcpsim::traces {
namespace {

void require(const std::string& why) {
  if (!why.empty()) throw RuntimeError("trace collector: " + why);
}

}  // namespace

TraceCollector::TraceCollector() : checker_(std::make_unique<TraceChecker>()) {}
TraceCollector::~TraceCollector() = default;

TraceSection& TraceCollector::section() {
  return trace_.sections.back();
}

void TraceCollector::on_header(const v1::Header& header) {
  require(checker_->header(header));
  trace_.header = header;
}

void TraceCollector::on_scenario(const v1::Scenario& scenario) {
  require(checker_->scenario(scenario));
  trace_.sections.emplace_back().scenario = scenario;
}

void TraceCollector::on_event(const v1::Event& event) {
  require(checker_->event(event));
  section().events.push_back(event);
}

void TraceCollector::on_flow(const v1::Flow& flow) {
  require(checker_->flow(flow));
  section().flows.push_back(flow);
}

void TraceCollector::on_row_result(const v1::RowResult& row_result) {
  require(checker_->row_result(row_result));
  section().row_results.push_back(row_result);
}

void TraceCollector::on_phase_summary(const v1::PhaseSummary& phase_summary) {
  require(checker_->phase_summary(phase_summary));
  section().phase_summaries.push_back(phase_summary);
}

void TraceCollector::on_summary(const v1::Summary& summary) {
  require(checker_->summary(summary));
  section().summaries.push_back(summary);
}

void TraceCollector::on_gpu_activity(const v1::GpuActivity& activity) {
  require(checker_->gpu_activity(activity));
  section().gpu_activities.push_back(activity);
}

void TraceCollector::finish() {
  require(checker_->finish());
  finished_ = true;
}

Trace read_trace(const std::filesystem::path& path) {
  TraceCollector collector;
  stream_trace(path, collector);
  return collector.take();
}

void replay(const Trace& trace, TraceSink& sink) {
  if (trace.header) sink.on_header(*trace.header);
  for (const TraceSection& s : trace.sections) {
    sink.on_scenario(s.scenario);
    for (const auto& e : s.events) sink.on_event(e);
    for (const auto& f : s.flows) sink.on_flow(f);
    for (const auto& r : s.row_results) sink.on_row_result(r);
    for (const auto& p : s.phase_summaries) sink.on_phase_summary(p);
    for (const auto& m : s.summaries) sink.on_summary(m);
    for (const auto& a : s.gpu_activities) sink.on_gpu_activity(a);
  }
  sink.finish();
}

}  // namespace dcpsim::traces
