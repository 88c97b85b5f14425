#include "dcpsim/traces/trace_sink.h"

#include <utility>

#include "dcpsim/error.h"

namespace dcpsim::traces {

TeeTraceSink::TeeTraceSink(std::vector<TraceSink*> sinks) : sinks_(std::move(sinks)) {}

void TeeTraceSink::on_header(const v1::Header& header) {
  for (auto* s : sinks_) s->on_header(header);
}
void TeeTraceSink::on_scenario(const v1::Scenario& scenario) {
  for (auto* s : sinks_) s->on_scenario(scenario);
}
void TeeTraceSink::on_event(const v1::Event& event) {
  for (auto* s : sinks_) s->on_event(event);
}
void TeeTraceSink::on_flow(const v1::Flow& flow) {
  for (auto* s : sinks_) s->on_flow(flow);
}
void TeeTraceSink::on_row_result(const v1::RowResult& row_result) {
  for (auto* s : sinks_) s->on_row_result(row_result);
}
void TeeTraceSink::on_phase_summary(const v1::PhaseSummary& phase_summary) {
  for (auto* s : sinks_) s->on_phase_summary(phase_summary);
}
void TeeTraceSink::on_summary(const v1::Summary& summary) {
  for (auto* s : sinks_) s->on_summary(summary);
}
void TeeTraceSink::on_gpu_activity(const v1::GpuActivity& activity) {
  for (auto* s : sinks_) s->on_gpu_activity(activity);
}
void TeeTraceSink::finish() {
  for (auto* s : sinks_) s->finish();
}

void deliver(const v1::Record& record, TraceSink& sink) {
  switch (record.body_case()) {
    case v1::Record::kHeader:
      return sink.on_header(record.header());
    case v1::Record::kScenario:
      return sink.on_scenario(record.scenario());
    case v1::Record::kEvent:
      return sink.on_event(record.event());
    case v1::Record::kFlow:
      return sink.on_flow(record.flow());
    case v1::Record::kRowResult:
      return sink.on_row_result(record.row_result());
    case v1::Record::kPhaseSummary:
      return sink.on_phase_summary(record.phase_summary());
    case v1::Record::kSummary:
      return sink.on_summary(record.summary());
    case v1::Record::kGpuActivity:
      return sink.on_gpu_activity(record.gpu_activity());
    case v1::Record::BODY_NOT_SET:
      break;
  }
  throw InputError("trace record has no body (or one of a kind this dcpsim does not know)");
}

}  // namespace dcpsim::traces
