#pragma once
// The record-order and field rules of a trace (see trace_sink.h), shared by the writers and the reader so
// that a file one accepts the other accepts too. Each call returns the problem in words, or an empty string
// when the record is acceptable; the caller decides whether that is the producer's fault (RuntimeError) or
// the file's (InputError).
#include <cstdint>
#include <string>
#include <unordered_set>

#include "dcpsim/traces/schema.h"

namespace dcpsim::traces {

class TraceChecker {
 public:
  std::string check(const v1::Record& record);
  std::string header(const v1::Header& header);
  std::string scenario(const v1::Scenario& scenario);
  std::string event(const v1::Event& event);
  std::string flow(const v1::Flow& flow);
  std::string row_result(const v1::RowResult& row_result);
  std::string phase_summary(const v1::PhaseSummary& phase_summary);
  std::string summary(const v1::Summary& summary);
  std::string gpu_activity(const v1::GpuActivity& activity);
  std::string finish();

 private:
  std::string body_record(const char* what);
  std::string rank_problem(int rank) const;

  bool any_record_ = false;
  bool in_section_ = false;
  bool finished_ = false;
  int dcp_ = 0;
  std::int64_t row_limit_ = 0;  // real rows + padded rows
  std::unordered_set<std::uint64_t> event_ids_;
};

}  // namespace dcpsim::traces
