#pragma once
// Kineto (PyTorch profiler) and other Chrome-trace JSON timelines, plain or gzip, into dcpsim.trace.v1.
//
// What becomes what: "X" events of category kernel -> kernel events (NCCL kernels -> collective events
// carrying collective, in/out element counts, group size and dtype, with bytes = the larger of the in/out
// buffers, the nccl-tests convention); gpu_memcpy -> copy events with their bytes; gpu_memset -> kernel
// events with args.activity = "memset"; gpu_user_annotation -> phase events. With cpu_ops also cpu_op /
// python_function (markers), cuda_runtime / cuda_driver (launches), cuda_sync (waits) and user_annotation
// (phases). Every Kineto arg is kept as text in the event's args. GPU work goes on lane "stream<N>", CPU work
// on "cpu<tid>".
//
// Times: µs in the file -> integer ns, converted from the written decimal text exactly, relative to the
// earliest imported event; Header.time_origin_ns = that event's absolute time (plus baseTimeNanoseconds when
// the trace has it). Rank: distributedInfo.rank unless ImportOptions.rank says otherwise. Flows: "s"/"f"
// pairs bound, as Chrome binds them, to the innermost imported slice on their thread that encloses their
// timestamp.
#include <filesystem>

#include "dcpsim/traces/import_options.h"
#include "dcpsim/traces/trace_sink.h"

namespace dcpsim::traces {

// Writes header, scenario, events and flows to `sink` and calls sink.finish(). Throws InputError naming the
// file for a missing file, corrupt gzip, malformed JSON, a document without traceEvents, or a bad time field.
ImportStats import_kineto(const std::filesystem::path& path, TraceSink& sink, const ImportOptions& options);

}  // namespace dcpsim::traces
