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
// Model and KV capacity (whole_model.h): with a model (--model, default deepseek-v3 unless geometry flags are
// given) and --tp (default: layouts.h's rule, the smallest multiple of the largest DCP size whose weights
// fit; one TP for every row, so that the sizes compare on one deployment), the geometry on a rank, the
// weights per GPU, the non-attention time and the KV budget per GPU come from the preset;
// kv_capacity_tokens_per_gpu = floor(KV budget / (KV bytes per token per layer × layers)). With DCP each
// token lives on one rank, so the group holds N times that: kv_capacity_tokens_group. kv_fits says whether
// this scenario's busiest rank fits, weights_fit whether the layout holds the weights at all (a row whose
// weights do not fit is "does not fit", never ranked).
//
// Columns: profile, model, tp, then the inputs (dcp, heads, kv_heads, head_dim, qk_dim, batch, context —
// "mixed" for a contexts file with several lengths —, strategy, tier (production or research), launch,
// kv_dtype, out_dtype, interleave); per attention layer: step_latency_us, attention_end_us, merge_latency_us
// (after the last rank's attention), merge_share (merge / step), comm_us (the busiest rank's communication,
// query all-gather included) and comm_share; per decode step: layers, non_attention_us and decode_step_us
// (layers × step + non-attention); phase_<name>_us, each phase's longest duration over the ranks (empty when
// the strategy has no such phase); kv_tokens_per_rank and kv_bytes_per_rank (the busiest rank, one layer);
// hbm_gb, weights_gb (per GPU), kv_budget_gb, weights_fit and the capacity columns above; plans, the NCCL
// algorithm/protocol of each collective
// ("phase=algo/proto;..."); kernels_table and kernels_analytic, how many kernel times came from the profile's
// measured tables and how many from the analytic model, and kernels_extrapolated, the kernel types priced
// analytically ("correction;a2a_pack").
// Times are printed with 6 decimals (picoseconds) so that rows are exact and reproducible.
#include <cstddef>
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dcpsim/analysis/layouts.h"
#include "dcpsim/analysis/scenario_flags.h"
#include "dcpsim/analysis/whole_model.h"
#include "dcpsim/models/profile.h"
#ifdef DCPSIM_WITH_SIMGRID
#include "dcpsim/sim/step_result.h"
#endif

namespace dcpsim::analysis {

struct ScanOptions {
  std::string profile = "h200-sxm";
  ScenarioFlags flags;
  WholeModelFlags whole;  // layers, non-attention time, KV budget
  int jobs = 1;
  int shard_index = 0;
  int shard_count = 1;
  bool header = true;  // false: no header line at all (--no-header); shards other than 0 never write one
  std::optional<models::Algorithm> nccl_algo;
  std::optional<models::Protocol> nccl_proto;
  int peers_in_flight = 16;
  std::string flows = "auto";  // sim::FlowGrain: auto, pair, bundle
  int chunk_size = 0;          // scenarios per worker process; 0 picks one from the count and --jobs
  std::string plot_at;         // --at of --plot: each value must be one the grid has (checked before work)
};

// "i/n" with 0 <= i < n; throws InputError naming the value otherwise.
std::pair<int, int> parse_shard(std::string_view text);
// The contiguous slice [begin, end) of `total` items that shard `index` of `count` keeps.
std::pair<std::size_t, std::size_t> shard_range(std::size_t total, int index, int count);

#ifdef DCPSIM_WITH_SIMGRID
// The CSV header line (no newline), columns as listed above.
std::string scan_csv_header();
// One scenario's row (no newline); `model` is the whole-model setting of the row's TP, `weights_fit` whether
// its TP x DCP layout holds the model's weights (layouts.h).
std::string scan_csv_row(const WholeModel& model, const std::string& model_name,
                         const models::HardwareProfile& profile, const sim::StepResult& result,
                         bool weights_fit = true);
#endif

struct ScanReport {
  std::size_t scenarios = 0;         // rows written
  std::size_t combinations = 0;      // rows + skipped
  std::vector<std::string> skipped;  // combinations left out, with the reason
  LayoutChoice tp;                   // the TP sizes scanned and the rule that chose them (layouts.h)
  double wall_s = 0.0;
};

// The answer table of a scan CSV (its header included): per geometry, batch and context, the best strategy at
// each DCP size — decode step, layer step, merge, communication share, KV per GPU and in the group, whether
// the batch fits — with the best size marked '*' (the shortest decode step among the sizes where the batch
// fits); with `best_only`, only that line per group. Picks choose among production strategies (layouts.h)
// unless include_research; a research strategy that is faster is printed beside, marked. A layout whose
// weights do not fit says "does not fit" and is never picked. InputError for a CSV without the columns it
// needs.
struct ScanSummaryOptions {
  bool best_only = false;
  bool include_research = false;
  bool by_heads =
      false;           // heads and KV heads tell groups apart (given by flags, not derived from model and TP)
  bool by_tp = false;  // TP tells groups apart (given by --tp, not = dcp)
};
std::string scan_summary(const std::string& csv, const ScanSummaryOptions& options);
// The same answer as JSON in the one summary shape (summary_json.h, command "scan"): per strategy its points
// (tp, dcp, heads, batch, context, decode_step_us, step_latency_us, merge_latency_us, KV capacity,
// weights_fit, kv_fits), and `best`, the pick per batch and context among what a pick may choose.
std::string scan_summary_json(const std::string& csv, const ScanSummaryOptions& options,
                              const LayoutChoice& tp, const std::string& profile, const std::string& model);

#ifdef DCPSIM_WITH_SIMGRID
// Runs the scan and writes the CSV to `out` (temporary file + rename). Progress and one line for the skipped
// combinations go to `log` (every one of them with `list_skipped`). Throws InputError for bad options or a
// scenario the simulator rejects, RuntimeError when a worker fails; nothing is left at `out` then.
ScanReport run_scan(const ScanOptions& options, const std::filesystem::path& out, std::ostream& log,
                    bool list_skipped = false);
#endif

}  // namespace dcpsim::analysis
