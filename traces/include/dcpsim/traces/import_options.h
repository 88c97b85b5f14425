#pragma once
// What the profiler-timeline importers (import_kineto.h, import_nsys.h) take and report. An imported timeline
// becomes a measured trace (source "hw") with one section: the scenario the profiled run executed — which a
// profiler does not know, so the caller states it — followed by the events, sorted by start time, and a phase
// summary per step phase its kernels belong to (import_phases.h).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "dcpsim/traces/import_phases.h"
#include "dcpsim/traces/schema.h"

namespace dcpsim::traces {

struct ImportOptions {
  // The DCP scenario the profiled run executed; every field the schema requires must be set (the importer
  // checks it before reading the timeline). Its dcp must exceed the rank the events are filed under.
  v1::Scenario scenario;
  // The DCP rank to file every event under. Unset: the trace's own (Kineto distributedInfo.rank), else 0.
  std::optional<int> rank;
  // Kineto: also CPU-side ops, CUDA runtime calls and user annotations. Nsight: also CUDA runtime API calls.
  bool cpu_ops = false;
  // Kineto: flow arrows (launch -> kernel, forward -> backward) whose two ends are both imported.
  bool flows = true;
  // Nsight: NVTX push/pop and start/end ranges.
  bool nvtx = true;
  // Recorded in the header; empty: this process's command line.
  std::vector<std::string> argv;
  // Kernel name -> step phase rules tried before the built-in table (import_phases.h).
  std::vector<KernelPhaseRule> phase_rules;
};

// What an import produced; every count is of events written.
struct ImportStats {
  int rank = 0;
  std::int64_t time_origin_ns = 0;  // absolute clock reading of time 0 (as in the header)
  std::int64_t kernels = 0;         // compute kernels (collectives not included)
  std::int64_t collectives = 0;     // NCCL kernels
  std::int64_t copies = 0;          // memcpys
  std::int64_t memsets = 0;
  std::int64_t cpu_events = 0;  // CPU ops, runtime calls, synchronisations
  std::int64_t ranges = 0;      // annotations / NVTX ranges
  std::int64_t flows = 0;
  std::int64_t skipped = 0;  // activities dropped because they were malformed (e.g. negative duration)
  std::int64_t end_ns = 0;   // the latest end among the events written
  // Step phases found (import_phases.h): phase -> occurrences, in vocabulary order; and the kernels of no DCP
  // phase, by name -> count.
  std::vector<std::pair<std::string, std::int64_t>> phases;
  std::map<std::string, std::int64_t> unphased;
  std::map<std::string, std::string> implementations;  // phase -> implementation (import_phases.h)
  std::int64_t events() const { return kernels + collectives + copies + memsets + cpu_events + ranges; }
};

// One line for people, e.g. "rank 0: 79 kernels, 0 collectives, 16 copies, 3 memsets, ... over 41.6 s".
std::string describe(const ImportStats& stats);
// One line on the phases: "phases: attention x610, correction x610, ...; 3120 kernels of no DCP phase (most:
// name x122, ...)", or that no kernel matched a phase.
std::string describe_phases(const ImportStats& stats);

}  // namespace dcpsim::traces
