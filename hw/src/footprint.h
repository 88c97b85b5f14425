#pragma once
// hw run's memory, estimated before anything is allocated and measured after the run (issue 36: bounded
// memory at any context). Device: each rank's inputs (the KV shard generated on the device, paged as
// FlashInfer needs), its attention workspace and its strategy's buffers, summed over the ranks a device
// holds. Host: the reference check (streamed, O(threads × H × D)), the downloaded checked rows, the CUDA
// runtime and CUPTI, and the process as it stands.
#include <cstdint>
#include <string>

#include "plan.h"

namespace dcpsim::hw {

struct Footprint {
  double device_bytes = 0;  // on the busiest device, allocations only (the context is there before)
  double host_bytes = 0;    // the process's peak resident set
  double host_added = 0;    // what the run adds to the process's resident set now
  double kv_bytes = 0;      // of device_bytes: the KV shards
};

Footprint estimate_footprint(const StepPlan& p, const RunConfig& c);

// The paged KV shard `rank` holds (K and V, or MLA's one latent), in bytes: every row starts on a page, one
// byte per element for an fp8 cache; max_len becomes the longest row's local length if longer. No device.
double kv_shard_bytes(const StepPlan& p, int rank, std::int64_t& max_len);

// Refuses (InputError, one line with the estimate and the limit) a run whose device estimate exceeds the
// free memory of a device it uses, or whose host estimate exceeds memory::host_limit(); call before any
// allocation.
void require_footprint(const Footprint& f, const RunConfig& c, int ranks_per_device);

// Device memory in use (total − free) on `device`, for the measured peak.
double device_used_bytes(int device);

}  // namespace dcpsim::hw
