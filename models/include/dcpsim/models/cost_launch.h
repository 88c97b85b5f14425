#pragma once
// Launch costs per launch mode. A kernel's timeline on one rank: the CPU spends cpu_issue_time() issuing it;
// on an idle GPU it starts gpu_launch_latency() after issue; behind a kernel it depends on, it starts
// dependent_kernel_gap() after that kernel ends (or when issued + launch latency, whichever is later).
#include "dcpsim/models/profile.h"
#include "dcpsim/models/types.h"

namespace dcpsim::models {

// Host time to issue one kernel: eager launch, one kernel's share of a graph replay, or a PDL kernel.
double cpu_issue_time(const HardwareProfile& p, LaunchMode mode);

// Issue to start of a kernel on an idle stream.
double gpu_launch_latency(const HardwareProfile& p);

// End of a kernel to the start of the next kernel on the same stream when it is already queued: in a graph,
// launched eagerly (launch.dependent_gap_eager, else the graph's gap), or under PDL, which overlaps the next
// kernel's launch and prologue with the tail of the previous one, so its gap is smaller.
double dependent_kernel_gap(const HardwareProfile& p, LaunchMode mode);

// Earliest start of a kernel issued at `issued_s` that must follow a kernel ending at `previous_end_s` on the
// same stream (previous_end_s < 0: the stream is idle).
double kernel_start_time(const HardwareProfile& p, LaunchMode mode, double issued_s, double previous_end_s);

}  // namespace dcpsim::models
