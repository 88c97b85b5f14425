#include "dcpsim/traces/schema.h"

#include <string>

namespace dcpsim::traces {

std::string_view to_string(v1::Source v) {
  switch (v) {
    case v1::SOURCE_SIM:
      return "sim";
    case v1::SOURCE_HW:
      return "hw";
    case v1::SOURCE_EMULATED:
      return "emulated";
    default:
      return "unspecified";
  }
}

std::string_view to_string(v1::EventKind v) {
  switch (v) {
    case v1::EVENT_KIND_LAUNCH:
      return "launch";
    case v1::EVENT_KIND_KERNEL:
      return "kernel";
    case v1::EVENT_KIND_COPY:
      return "copy";
    case v1::EVENT_KIND_COLLECTIVE:
      return "collective";
    case v1::EVENT_KIND_SIGNAL:
      return "signal";
    case v1::EVENT_KIND_WAIT:
      return "wait";
    case v1::EVENT_KIND_PHASE:
      return "phase";
    case v1::EVENT_KIND_MARKER:
      return "marker";
    default:
      return "unspecified";
  }
}

std::string_view to_string(v1::DType v) {
  switch (v) {
    case v1::DTYPE_F32:
      return "fp32";
    case v1::DTYPE_BF16:
      return "bf16";
    case v1::DTYPE_F16:
      return "fp16";
    case v1::DTYPE_F64:
      return "fp64";
    default:
      return "unspecified";
  }
}

std::string_view to_string(v1::LseBase v) {
  switch (v) {
    case v1::LSE_BASE_E:
      return "e";
    case v1::LSE_BASE_2:
      return "2";
    default:
      return "unspecified";
  }
}

std::string_view to_string(v1::Strategy v) {
  switch (v) {
    case v1::STRATEGY_AG_RS:
      return "ag-rs";
    case v1::STRATEGY_AG_AR:
      return "ag-ar";
    case v1::STRATEGY_A2A:
      return "a2a";
    case v1::STRATEGY_DIRECT:
      return "direct";
    case v1::STRATEGY_ROW_STREAM:
      return "row-stream";
    case v1::STRATEGY_FLASHINFER_A2A:
      return "flashinfer-a2a";
    case v1::STRATEGY_A2A_TWO_CALL:
      return "a2a-2call";
    default:
      return "unspecified";
  }
}

std::string_view to_string(v1::LaunchMode v) {
  switch (v) {
    case v1::LAUNCH_MODE_EAGER:
      return "eager";
    case v1::LAUNCH_MODE_GRAPH:
      return "graph";
    case v1::LAUNCH_MODE_PDL:
      return "pdl";
    default:
      return "unspecified";
  }
}

std::string describe(const v1::Scenario& s) {
  std::string label = "dcp" + std::to_string(s.dcp()) + " h" + std::to_string(s.heads()) + " d" +
                      std::to_string(s.head_dim()) + "/" + std::to_string(s.qk_dim()) + " kv" +
                      std::to_string(s.kv_heads()) + " b" + std::to_string(s.contexts_size());
  // Show the context when every row shares it: the common case of a scan point.
  if (s.contexts_size() > 0) {
    bool uniform = true;
    for (auto c : s.contexts()) uniform = uniform && c == s.contexts(0);
    if (uniform) label += " ctx" + std::to_string(s.contexts(0));
  }
  label += " ";
  label += to_string(s.strategy());
  label += " ";
  label += to_string(s.launch_mode());
  label += " lse-";
  label += to_string(s.lse_base());
  // A name that the geometry already says (the simulator names sections by it) is not written twice.
  if (s.name().empty() || label.rfind(s.name(), 0) == 0) return label;
  return s.name() + ": " + label;
}

v1::Event make_event(int rank, std::string_view lane, v1::EventKind kind, std::string_view name,
                     int64_t start_ns, int64_t end_ns, int64_t bytes, int rows_begin, int rows_end) {
  v1::Event e;
  e.set_rank(rank);
  e.set_lane(std::string(lane));
  e.set_kind(kind);
  e.set_name(std::string(name));
  e.set_start_ns(start_ns);
  e.set_end_ns(end_ns);
  e.set_bytes(bytes);
  if (rows_end > rows_begin) {
    e.mutable_rows()->set_begin(rows_begin);
    e.mutable_rows()->set_end(rows_end);
  }
  return e;
}

}  // namespace dcpsim::traces
