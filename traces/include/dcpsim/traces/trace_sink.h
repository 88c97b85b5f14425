#pragma once
// TraceSink: the one interface through which sim/ and hw/ emit traces, and through which readers replay them.
//
// Record order (checked by the writers and the reader): on_header at most once and before anything else;
// on_scenario starts a section; every other record belongs to the latest section, so it needs one; a flow
// refers to events (with ids) already emitted in the same section; finish() once at the end. Times are ns
// since the trace's origin and never negative; an event's end is not before its start.
#include <vector>

#include "dcpsim/traces/schema.h"

namespace dcpsim::traces {

class TraceSink {
 public:
  virtual ~TraceSink() = default;

  virtual void on_header(const v1::Header& header) = 0;
  virtual void on_scenario(const v1::Scenario& scenario) = 0;
  virtual void on_event(const v1::Event& event) = 0;
  virtual void on_flow(const v1::Flow& flow) = 0;
  virtual void on_row_result(const v1::RowResult& row_result) = 0;
  virtual void on_phase_summary(const v1::PhaseSummary& phase_summary) = 0;
  virtual void on_summary(const v1::Summary& summary) = 0;
  // Measured traces with a GPU timeline only; sinks that have no use for the activities ignore them.
  virtual void on_gpu_activity(const v1::GpuActivity& activity) { (void)activity; }
  // Completes the trace (a file sink makes its file visible only now).
  virtual void finish() = 0;
};

// Forwards every record to several sinks (e.g. a .pb file and a Chrome JSON file from one simulation).
// Does not own the sinks.
class TeeTraceSink final : public TraceSink {
 public:
  explicit TeeTraceSink(std::vector<TraceSink*> sinks);

  void on_header(const v1::Header& header) override;
  void on_scenario(const v1::Scenario& scenario) override;
  void on_event(const v1::Event& event) override;
  void on_flow(const v1::Flow& flow) override;
  void on_row_result(const v1::RowResult& row_result) override;
  void on_phase_summary(const v1::PhaseSummary& phase_summary) override;
  void on_summary(const v1::Summary& summary) override;
  void on_gpu_activity(const v1::GpuActivity& activity) override;
  void finish() override;

 private:
  std::vector<TraceSink*> sinks_;
};

// Hands one record to the matching on_* call. Throws InputError for a record with no body.
void deliver(const v1::Record& record, TraceSink& sink);

}  // namespace dcpsim::traces
