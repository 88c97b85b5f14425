#pragma once
// What the Kineto and Nsight importers share: checking the caller's scenario, putting collected events in
// time order relative to the origin, and writing the trace.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "dcpsim/traces/import_options.h"
#include "dcpsim/traces/trace_sink.h"

namespace dcpsim::traces::import_common {

// Throws InputError when options.scenario would be rejected by the trace rules, or when `rank` is not inside
// its DCP group.
void check_scenario(const ImportOptions& options, int rank, const std::filesystem::path& path);

// Events with absolute start/end times, as read; flows refer to indices into `events`.
struct Collected {
  std::vector<v1::Event> events;
  struct Link {
    std::size_t from = 0;
    std::size_t to = 0;
    std::string name;
  };
  std::vector<Link> links;
};

// Shifts every event to the earliest start, sorts by (start, end, lane), numbers the events that flows link,
// and writes header + scenario + events + flows into `sink`, then finish(). Fills stats.time_origin_ns
// (`clock_base_ns` plus the earliest start), stats.flows and stats.end_ns. Throws InputError naming `path`
// when nothing was collected.
void emit(Collected collected, v1::Header header, const ImportOptions& options, std::int64_t clock_base_ns,
          const std::filesystem::path& path, ImportStats& stats, TraceSink& sink);

}  // namespace dcpsim::traces::import_common
