#pragma once
// Kernel sweeps: the runner's kernels timed over full grids of shapes, written as measured kernel tables
// (models/kernel_table.h, "dcpsim-kernel-tables/1") for profiles to carry. Every point is one kernel call
// (attention with its split-KV combine, correction, A2A pack, A2A unpack-combine) replayed from a CUDA graph
// of one call and timed on the GPU timeline (CUPTI: first kernel start to last kernel end of the call, the
// span a step's phase has), or with CUDA events around the replay where CUPTI cannot load (recorded in the
// provenance). Attention's inputs rotate over enough buffer sets to defeat L2 (a step's KV cache is cold);
// a merge kernel reads one set, which stays in L2 when it fits (in a step its inputs were just written by the
// kernel before it), or, with cold_merge_inputs, is evicted from L2 before each call.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "dcpsim/hw/attention_impl.h"
#include "dcpsim/hw/bench.h"
#include "dcpsim/models/kernel_table.h"

namespace dcpsim::hw {

// One attention geometry of a sweep: "mla" (one shared 576-wide latent, D = 512) or "gqa:G" (G query heads
// per KV head, D = D_qk = 128).
struct SweepGeometry {
  bool mla = true;
  int group = 1;  // GQA: query heads per KV head
};
SweepGeometry parse_sweep_geometry(const std::string& s);  // InputError naming the accepted forms
std::string sweep_geometry_name(const SweepGeometry& g);

// The input sets every merge kernel's benchmark keeps (ops::kMinInputSets): the longest cold PDL chain.
inline constexpr int kPdlColdChainMax = 3;

struct KernelSweepConfig {
  // "attention", "correction", "a2a_pack", "a2a_combine" (models::to_string(TableKernel) names).
  std::vector<std::string> kernels = {"attention", "correction", "a2a_pack", "a2a_combine"};
  // Attention grid: geometries × heads on the rank × rows × tokens per row on the rank. A heads value a GQA
  // geometry's group does not divide is skipped for that geometry.
  std::vector<SweepGeometry> geometries = {{true, 1}, {false, 8}};
  std::vector<int> heads = {16, 32, 64, 128, 256};
  std::vector<int> rows = {1, 4, 16, 64, 256};
  std::vector<std::int64_t> tokens = {128, 512, 2048, 8192, 32768, 131072};
  // Points whose KV cache (all rows, all KV heads) would exceed this are skipped (a hole in the grid: the
  // simulator prices shapes that need it analytically).
  double max_kv_bytes = 48e9;
  AttentionImpl attention = AttentionImpl::kAuto;
  // Attention's KV cache: bf16, or fp8 (e4m3 with one per-tensor scale, generated as `hw run --kv-dtype fp8`
  // does, the query and output bf16). An fp8 cache runs on FlashInfer's FP8-KV kernels only (MLA on sm_90a,
  // GQA decode at the groups FlashInfer compiles), so auto means FlashInfer and the keys say so ("mla qk576
  // d512 fp8 flashinfer", what the simulator reads for an fp8 scenario); dcpsim's kernel, another geometry or
  // a merge kernel is an InputError (the merge kernels read no KV).
  models::DType kv_dtype = models::DType::kBF16;
  // Merge-kernel grid, per head dim: correction over N × rows × H (heads on the rank); the kernels that
  // work on one owner's slice (a2a_pack, a2a_combine) over N × rows × H / N, measured at H = N × each
  // merge_heads_per_rank, so every N has the same slices (models::table_axes).
  std::vector<int> merge_dcp = {2, 3, 4, 6, 8};
  std::vector<int> merge_rows = {1, 4, 16, 64, 256};
  std::vector<int> merge_heads = {8, 16, 32, 64, 128};
  std::vector<int> merge_heads_per_rank = {1, 2, 4, 8, 16, 32};
  std::vector<int> merge_dims = {128, 512};
  // Merge kernels read inputs that are no longer in L2 (a read of twice the L2 before each call, outside the
  // call's span; rotating a few small input sets would not do: they fit in L2 together): the tables then
  // carry the " cold" key (models::MergeShape::cold_inputs), which prices an emulated step's
  // merge kernels. Default: one input set, warm, as in a step on real GPUs.
  bool cold_merge_inputs = false;
  // With cold_merge_inputs: the correction's LSEs read back into L2 after the eviction, as the emulated LSE
  // all-gather leaves them just before a step's correction (keys "... cold lse", MergeShape::warm_lse).
  bool warm_lse = false;
  // Warm merge inputs: just before each call (outside its span) a kernel touching one word per 64 KiB of
  // this many bytes of scratch, so the inputs stay in L2 (but for at most bytes / 512 brought in) while their
  // address translations are gone, as after a step's attention streamed its KV cache. 0: each call alone.
  // Neither prelude changes the table keys; the provenance's command records it.
  std::int64_t merge_prelude_bytes = 0;
  // Merge kernels: before each call (and before the prelude above) every SM chains FMAs for this long, as a
  // step's merge kernel follows a busy attention kernel (the clocks and power state it leaves). 0: none.
  double merge_prelude_busy_us = 0;
  // Merge kernels: before each call (after the busy kernel, before the touch) a device-to-device copy of this
  // many bytes, as an emulated step's merge kernel follows its emulated collective's copies. 0: none.
  std::int64_t merge_prelude_copy_bytes = 0;
  // The copy above captured into each call's graph, just before the call's kernel (as an emulated step's
  // graph holds its collective's copy nodes), instead of enqueued before the graph; the span then counts
  // kernels only.
  bool merge_prelude_copy_in_graph = false;
  // Attention: before each call (outside its span) a memset of this many bytes of scratch, which leaves them
  // dirty in L2 (up to its size): every line the call's KV stream evicts then waits for a write-back first,
  // as an attention kernel after kernels that wrote that much (an emulated step's first rank after the
  // previous repetition's merges; a deployed rank after the previous layer). The table keys do not change
  // (the provenance's command says it). 0: none.
  std::int64_t attention_prelude_write_bytes = 0;
  // Correction and A2A combine as `hw run --row-stamps` runs them (per-row stamps on): tables keyed
  // "... stamped" (models::MergeShape::row_stamps). Only those two kernels stamp rows.
  bool row_stamps = false;
  // A2A pack and combine in a2a-2call's layout (the LSEs in buffers of their own, OpShape::split_lse): tables
  // keyed "... split" (models::MergeShape::split_lse). Only those two kernels have that layout.
  bool split_lse = false;
  // Merge kernels: every point is also timed as the third of three calls of the same kernel in its graph,
  // all launched with programmatic dependent launch (PDL), as an emulated step's ranks after the first run
  // under --launch pdl; that call is charged from its predecessor's end, as the runner charges a phase. The
  // two timings alternate point by point and go to the plain key and to "... pdl" (models::MergeShape::pdl),
  // in one file. With cold_merge_inputs each call reads its own input set (O, LSEs), all evicted before the
  // replay, as an emulated step's ranks find theirs after the other ranks' attention; warm, all three read
  // the timed call's. Needs the GPU timeline (CUPTI).
  bool pdl = false;
  // With pdl: calls in each graph's chain, the last one timed (2 to 16). Each of a cold chain's calls reads
  // its own input set, so a cold chain is at most kPdlColdChainMax long.
  int pdl_chain = 3;
  int warmup = 5;
  int reps = 20;
  int device = 0;
  std::uint64_t seed = 1;
  std::string date;     // YYYY-MM-DD for the provenance (today when empty)
  std::string command;  // the command line, for the provenance
};

struct SweepProgress {
  int done = 0, total = 0;
  std::string point;  // label of the point just timed (or skipped)
  bool skipped = false;
  std::string why;  // why it was skipped
};

// Runs the sweep on one device and returns the tables (one per kernel type and key). `progress` (may be
// empty) is called after each point. RuntimeError without a device; InputError for an empty or bad grid.
models::KernelTables run_kernel_sweep(const KernelSweepConfig& config,
                                      const std::function<void(const SweepProgress&)>& progress);

// The number of points the sweep would time (before size-based skips), for progress and --dry-run.
int kernel_sweep_points(const KernelSweepConfig& config);

// One point a sweep would time, as a plan shows it (no device needed): the table it goes to, its coordinates
// and the shape the operation runs.
struct SweepPointPlan {
  models::TableKernel kernel = models::TableKernel::kAttention;
  std::string key;
  std::vector<double> at;
  OpShape shape;
};
// Every point the sweep would time, after the size-based skips, in sweep order. InputError for a bad grid.
std::vector<SweepPointPlan> kernel_sweep_plan(const KernelSweepConfig& config);

}  // namespace dcpsim::hw
