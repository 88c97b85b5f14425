#pragma once
// The trace schema dcpsim.trace.v1 (traces/proto/dcpsim_trace.proto) as C++ types, plus the spellings used
// when a trace is shown to people (Chrome export, error messages). The generated messages are the vocabulary
// of every producer (sim/, hw/) and consumer (analysis/): there is no second in-memory event type to keep in
// sync.
#include <string>
#include <string_view>

#include "dcpsim_trace.pb.h"

namespace dcpsim::traces {

namespace v1 = ::dcpsim::trace::v1;

// Lower-case names without the enum prefix: "sim", "kernel", "bf16", "ag-rs", "graph", "e"/"2".
std::string_view to_string(v1::Source v);
std::string_view to_string(v1::EventKind v);
std::string_view to_string(v1::DType v);
std::string_view to_string(v1::LseBase v);
std::string_view to_string(v1::Strategy v);
std::string_view to_string(v1::LaunchMode v);

// A short label for a section, e.g. "dcp8 h128 d512/576 kv1 b64 ag-rs graph lse-e", with the name first
// ("name: ...") when it is set and not already the start of that label.
std::string describe(const v1::Scenario& s);

// Convenience constructor for the common event shape; rows are [rows_begin, rows_end) when rows_end >
// rows_begin.
v1::Event make_event(int rank, std::string_view lane, v1::EventKind kind, std::string_view name,
                     int64_t start_ns, int64_t end_ns, int64_t bytes = 0, int rows_begin = 0,
                     int rows_end = 0);

}  // namespace dcpsim::traces
