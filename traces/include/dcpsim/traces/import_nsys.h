#pragma once
// Nsight Systems SQLite exports (`nsys export --type sqlite`, plain or gzip) into dcpsim.trace.v1.
//
// What becomes what: CUPTI_ACTIVITY_KIND_KERNEL -> kernel events (name = demangled name, else short name,
// looked up in StringIds; NCCL kernels -> collective events with the collective parsed from the kernel name);
// CUPTI_ACTIVITY_KIND_MEMCPY -> copy events with bytes and direction; CUPTI_ACTIVITY_KIND_MEMSET -> kernel
// events with args.activity = "memset"; NVTX_EVENTS push/pop and start/end ranges -> phase events on lane
// "nvtx<tid>" (with nvtx); CUPTI_ACTIVITY_KIND_RUNTIME -> launch events on lane "cpu<tid>" (with cpu_ops).
// GPU work goes on lane "stream<streamId>", with the device in args.
//
// Column sets differ between nsys versions, so columns are found by name; a table that is present but lacks a
// column the importer needs is an InputError naming the table, the column and the columns it has. Times are
// ns relative to the earliest imported event; Header.time_origin_ns adds
// TARGET_INFO_SESSION_START_TIME.utcEpochNs where the export has it. The rank is ImportOptions.rank, else 0
// (an nsys report holds one process's view).
#include <filesystem>

#include "dcpsim/traces/import_options.h"
#include "dcpsim/traces/trace_sink.h"

namespace dcpsim::traces {

// False when this dcpsim was built without SQLite3; import_nsys then throws RuntimeError saying so.
bool nsys_import_available();

// Writes header, scenario and events to `sink` and calls sink.finish(). A gzip file is decompressed in
// memory. Throws InputError naming the file when it is missing, not an SQLite database, or has none of the
// activity tables.
ImportStats import_nsys(const std::filesystem::path& path, TraceSink& sink, const ImportOptions& options);

}  // namespace dcpsim::traces
