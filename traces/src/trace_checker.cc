#include "trace_checker.h"

#include <string>

namespace dcpsim::traces {
namespace {

std::string quoted(const std::string& s) {
  return "'" + s + "'";
}

std::string enum_problem(const char* field, int value, bool (*is_valid)(int)) {
  if (value == 0) return std::string(field) + " is unspecified; it must be set explicitly";
  if (!is_valid(value)) return std::string(field) + " has unknown value " + std::to_string(value);
  return {};
}

std::string scenario_enums(const v1::Scenario& s) {
  for (auto [field, value] :
       {std::pair{"kv_dtype", int{s.kv_dtype()}}, std::pair{"out_dtype", int{s.out_dtype()}}}) {
    if (auto why = enum_problem(field, value, v1::DType_IsValid); !why.empty()) return why;
  }
  if (auto why = enum_problem("lse_base", s.lse_base(), v1::LseBase_IsValid); !why.empty()) return why;
  if (auto why = enum_problem("strategy", s.strategy(), v1::Strategy_IsValid); !why.empty()) return why;
  return enum_problem("launch_mode", s.launch_mode(), v1::LaunchMode_IsValid);
}

std::string scenario_sizes(const v1::Scenario& s) {
  const std::pair<const char*, int> sizes[] = {{"dcp", s.dcp()},           {"heads", s.heads()},
                                               {"kv_heads", s.kv_heads()}, {"head_dim", s.head_dim()},
                                               {"qk_dim", s.qk_dim()},     {"interleave", s.interleave()}};
  for (auto [field, value] : sizes) {
    if (value < 1) return std::string(field) + " = " + std::to_string(value) + "; it must be >= 1";
  }
  if (s.padded_rows() < 0) return "padded_rows = " + std::to_string(s.padded_rows()) + "; it must be >= 0";
  for (int i = 0; i < s.contexts_size(); ++i) {
    if (s.contexts(i) < 0) {
      return "context of row " + std::to_string(i) + " = " + std::to_string(s.contexts(i)) +
             "; it must be >= 0";
    }
  }
  return {};
}

}  // namespace

std::string TraceChecker::check(const v1::Record& record) {
  switch (record.body_case()) {
    case v1::Record::kHeader:
      return header(record.header());
    case v1::Record::kScenario:
      return scenario(record.scenario());
    case v1::Record::kEvent:
      return event(record.event());
    case v1::Record::kFlow:
      return flow(record.flow());
    case v1::Record::kRowResult:
      return row_result(record.row_result());
    case v1::Record::kPhaseSummary:
      return phase_summary(record.phase_summary());
    case v1::Record::kSummary:
      return summary(record.summary());
    case v1::Record::kGpuActivity:
      return gpu_activity(record.gpu_activity());
    case v1::Record::BODY_NOT_SET:
      break;
  }
  return "record has no body (or one of a kind this dcpsim does not know)";
}

std::string TraceChecker::header(const v1::Header& header) {
  if (finished_) return "header after the trace was finished";
  if (any_record_) return "header after other records; it must come first, once";
  any_record_ = true;
  return enum_problem("header source", header.source(), v1::Source_IsValid);
}

std::string TraceChecker::scenario(const v1::Scenario& scenario) {
  if (finished_) return "scenario after the trace was finished";
  any_record_ = true;
  std::string why = scenario_sizes(scenario);
  if (why.empty()) why = scenario_enums(scenario);
  if (!why.empty()) return "scenario " + quoted(describe(scenario)) + ": " + why;
  in_section_ = true;
  dcp_ = scenario.dcp();
  row_limit_ = static_cast<std::int64_t>(scenario.contexts_size()) + scenario.padded_rows();
  event_ids_.clear();
  return {};
}

std::string TraceChecker::body_record(const char* what) {
  if (finished_) return std::string(what) + " after the trace was finished";
  any_record_ = true;
  if (!in_section_) return std::string(what) + " before any scenario; a scenario must start each section";
  return {};
}

std::string TraceChecker::rank_problem(int rank) const {
  if (rank >= 0 && rank < dcp_) return {};
  return "rank " + std::to_string(rank) + " is outside [0, " + std::to_string(dcp_) + ") for dcp " +
         std::to_string(dcp_);
}

std::string TraceChecker::event(const v1::Event& e) {
  if (auto why = body_record("event"); !why.empty()) return why;
  const std::string where = "event " + quoted(e.name()) + " on rank " + std::to_string(e.rank()) + ": ";
  if (auto why = rank_problem(e.rank()); !why.empty()) return where + why;
  if (e.lane().empty()) return where + "lane is empty";
  if (auto why = enum_problem("kind", e.kind(), v1::EventKind_IsValid); !why.empty()) {
    return where + why;
  }
  if (e.start_ns() < 0 || e.end_ns() < e.start_ns()) {
    return where + "times [" + std::to_string(e.start_ns()) + ", " + std::to_string(e.end_ns()) +
           "] ns; they must satisfy 0 <= start <= end";
  }
  if (e.bytes() < 0) return where + "bytes = " + std::to_string(e.bytes()) + "; it must be >= 0";
  if (e.has_rows()) {
    const auto& r = e.rows();
    if (r.begin() < 0 || r.end() < r.begin() || r.end() > row_limit_) {
      return where + "rows [" + std::to_string(r.begin()) + ", " + std::to_string(r.end()) +
             ") not within [0, " + std::to_string(row_limit_) + ")";
    }
  }
  if (e.has_id() && !event_ids_.insert(e.id()).second) {
    return where + "id " + std::to_string(e.id()) + " is already used in this section";
  }
  return {};
}

std::string TraceChecker::gpu_activity(const v1::GpuActivity& a) {
  if (auto why = body_record("GPU activity"); !why.empty()) return why;
  const std::string where =
      "GPU activity " + quoted(a.name()) + " on rank " + std::to_string(a.rank()) + ": ";
  if (auto why = rank_problem(a.rank()); !why.empty()) return where + why;
  if (auto why = enum_problem("kind", a.kind(), v1::GpuActivity::Kind_IsValid); !why.empty())
    return where + why;
  if (a.repetition() < 0) return where + "repetition " + std::to_string(a.repetition()) + " is negative";
  if (a.start_ns() < 0 || a.end_ns() < a.start_ns()) {
    return where + "times [" + std::to_string(a.start_ns()) + ", " + std::to_string(a.end_ns()) +
           "] ns; they must satisfy 0 <= start <= end";
  }
  if (a.bytes() < 0) return where + "bytes = " + std::to_string(a.bytes()) + "; it must be >= 0";
  return {};
}

std::string TraceChecker::flow(const v1::Flow& f) {
  if (auto why = body_record("flow"); !why.empty()) return why;
  for (std::uint64_t id : {f.from_event(), f.to_event()}) {
    if (!event_ids_.contains(id)) {
      return "flow " + std::to_string(f.id()) + " refers to event " + std::to_string(id) +
             ", which is not among the earlier events of this section";
    }
  }
  return {};
}

std::string TraceChecker::row_result(const v1::RowResult& r) {
  if (auto why = body_record("row result"); !why.empty()) return why;
  const std::string where = "row result for row " + std::to_string(r.row()) + ": ";
  if (r.row() < 0 || r.row() >= row_limit_) {
    return where + "row is outside [0, " + std::to_string(row_limit_) + ")";
  }
  if (auto why = rank_problem(r.rank()); !why.empty()) return where + why;
  if (r.lse_ready_ns() < 0 || r.output_ready_ns() < 0) return where + "ready times must be >= 0";
  return {};
}

std::string TraceChecker::phase_summary(const v1::PhaseSummary& p) {
  if (auto why = body_record("phase summary"); !why.empty()) return why;
  const std::string where = "phase summary " + quoted(p.phase()) + ": ";
  if (p.phase().empty()) return where + "phase name is empty";
  if (p.rank() != -1) {
    if (auto why = rank_problem(p.rank()); !why.empty()) return where + why + " (or -1 for all ranks)";
  }
  if (p.repetitions() < 1)
    return where + "repetitions = " + std::to_string(p.repetitions()) + "; it must be >= 1";
  if (!(p.min_ns() <= p.median_ns() && p.median_ns() <= p.max_ns())) {
    return where + "needs min <= median <= max (got " + std::to_string(p.min_ns()) + ", " +
           std::to_string(p.median_ns()) + ", " + std::to_string(p.max_ns()) + ")";
  }
  return {};
}

std::string TraceChecker::summary(const v1::Summary& s) {
  if (auto why = body_record("summary"); !why.empty()) return why;
  if (s.kv_bytes_per_rank_size() != 0 && s.kv_bytes_per_rank_size() != dcp_) {
    return "summary: kv_bytes_per_rank has " + std::to_string(s.kv_bytes_per_rank_size()) +
           " entries; it needs none or one per rank (" + std::to_string(dcp_) + ")";
  }
  return {};
}

std::string TraceChecker::finish() {
  if (finished_) return "trace finished twice";
  finished_ = true;
  return {};
}

}  // namespace dcpsim::traces
