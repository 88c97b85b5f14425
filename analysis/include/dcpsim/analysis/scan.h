#pragma once
// `dcpsim scan`: every combination of the scenario flags' comma lists, simulated on SimGrid, one CSV row
// each.
//
// Order: expand_scan()'s (dcp, heads, head-dim, kv-heads, batch, context, strategy, launch; the last varies
// fastest), invalid combinations left out (and reported). Sharding: --shard i/n keeps the i-th of n
// contiguous slices of that list, so `cat` of shards 0..n-1 (header only in shard 0) is byte for byte the
// unsharded CSV. Workers: scenarios run in chunks, each chunk in a forked worker process with its own SimGrid
// engine (SimGrid allows one per process, and a fresh process keeps the simulated clock's reproducible
// range); --jobs N keeps N workers busy. Rows do not depend on which worker ran them, so --jobs never changes
// the CSV.
//
// KV capacity (per GPU, one model): kv_capacity_tokens_per_gpu = floor((HBM capacity − weight reserve) /
// (KV bytes per token per layer × layers)), HBM capacity from the profile, the reserve and the layer count
// from the options (stated in every row). With DCP each token lives on one rank, so the group holds N times
// that: kv_capacity_tokens_group. kv_fits says whether this scenario's busiest rank fits.
//
// Columns: the inputs (profile, dcp, heads, kv_heads, head_dim, qk_dim, batch, context — "mixed" for a
// contexts file with several lengths —, strategy, launch, kv_dtype, out_dtype, interleave); step_latency_us,
// attention_end_us, merge_latency_us (after the last rank's attention) and merge_share (merge / step);
// phase_<name>_us, each phase's longest duration over the ranks (empty when the strategy has no such phase);
// kv_tokens_per_rank and kv_bytes_per_rank (the busiest rank, one layer); layers, weight_reserve_gib and the
// capacity columns above; plans, the NCCL algorithm/protocol of each collective ("phase=algo/proto;...");
// kernels_table and kernels_analytic, how many kernel times came from the profile's measured tables and how
// many from the analytic model, and kernels_extrapolated, the kernel types priced analytically
// ("correction;a2a_pack").
// Times are printed with 6 decimals (picoseconds) so that rows are exact and reproducible.
#include <cstddef>
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dcpsim/analysis/scenario_flags.h"
#include "dcpsim/models/profile.h"
#ifdef DCPSIM_WITH_SIMGRID
#include "dcpsim/sim/step_result.h"
#endif

namespace dcpsim::analysis {

struct ScanOptions {
  std::string profile = "gb200-nvl72";
  ScenarioFlags flags;
  int jobs = 1;
  int shard_index = 0;
  int shard_count = 1;
  bool header = true;  // false: no header line at all (--no-header); shards other than 0 never write one
  int layers = 61;     // attention layers holding KV (61: DeepSeek-V3 / Kimi K2)
  double weight_reserve_gib = 60.0;  // HBM kept for weights, activations and workspace
  std::optional<models::Algorithm> nccl_algo;
  std::optional<models::Protocol> nccl_proto;
  int peers_in_flight = 16;
  std::string flows = "auto";  // sim::FlowGrain: auto, pair, bundle
  int chunk_size = 0;          // scenarios per worker process; 0 picks one from the count and --jobs
};

// "i/n" with 0 <= i < n; throws InputError naming the value otherwise.
std::pair<int, int> parse_shard(std::string_view text);
// The contiguous slice [begin, end) of `total` items that shard `index` of `count` keeps.
std::pair<std::size_t, std::size_t> shard_range(std::size_t total, int index, int count);

#ifdef DCPSIM_WITH_SIMGRID
// The CSV header line (no newline), columns as listed above.
std::string scan_csv_header();
// One scenario's row (no newline): inputs, latencies (us), each phase's longest duration over ranks (us,
// empty when the strategy has no such phase), KV held and KV capacity, the NCCL plans used.
std::string scan_csv_row(const ScanOptions& options, const models::HardwareProfile& profile,
                         const sim::StepResult& result);
#endif

struct ScanReport {
  std::size_t scenarios = 0;         // rows written
  std::vector<std::string> skipped;  // combinations left out, with the reason
  double wall_s = 0.0;
};

#ifdef DCPSIM_WITH_SIMGRID
// Runs the scan and writes the CSV to `out` (temporary file + rename). Progress and skipped combinations go
// to `log`. Throws InputError for bad options or a scenario the simulator rejects, RuntimeError when a worker
// fails; nothing is left at `out` then.
ScanReport run_scan(const ScanOptions& options, const std::filesystem::path& out, std::ostream& log);
#endif

}  // namespace dcpsim::analysis
