#pragma once
// Kernel costs. Memory-bound kernels: floor + bytes / (HBM bandwidth × efficiency(bytes)). Decode attention:
// split-KV work units scheduled in SM waves, giving each row's completion time analytically (no per-CTA
// simulation), the kernel's end, and the split-KV combine kernel. Merge kernels (correction, A2A pack,
// unpack-combine, direct combine) are memory-bound kernels over their exact byte counts.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dcpsim/models/kernel_table.h"
#include "dcpsim/models/profile.h"
#include "dcpsim/models/scenario.h"
#include "dcpsim/models/types.h"

namespace dcpsim::models {

// Fraction of the measured HBM bandwidth a kernel moving `bytes` reaches: max × bytes / (bytes + half), with
// the shared kernel numbers (kernel.*) or one kernel type's own (kernel.<type>.*).
double hbm_efficiency(const HardwareProfile& p, double bytes);
double hbm_efficiency(const MemoryKernelSpec& k, double bytes);
// floor + bytes / (hbm_bandwidth_measured × hbm_efficiency(bytes)); exactly the floor for 0 bytes.
double memory_kernel_time(const HardwareProfile& p, double bytes);
double memory_kernel_time(const HardwareProfile& p, MemoryKernel k, double bytes);

// Where a kernel figure came from: a measured table of the profile (kernel_table.h), or the analytic model
// (outside every table's hull: extrapolated).
// kMeasured: taken from the measurement being validated (trace-driven validation), not priced at all.
enum class FigureSource { kTable, kAnalytic, kMeasured };
std::string_view to_string(FigureSource s);  // "table" | "analytic" | "measured"
struct KernelPrice {
  double seconds = 0.0;
  FigureSource source = FigureSource::kAnalytic;
};

// The attention geometry on one rank. shared_kv: K and V are one latent per token (MLA): the kernel reads
// qk_dim elements per token once (the 576-wide latent holds the 512-wide V); otherwise (GQA/MHA) it reads
// qk_dim (K) + head_dim (V) elements per token per KV head.
struct AttentionShape {
  int heads = 128;     // H: query heads on the rank
  int kv_heads = 1;    // H_kv
  int head_dim = 512;  // D
  int qk_dim = 576;    // D_qk
  bool shared_kv = true;
  DType kv_dtype = DType::kBF16;
  DType out_dtype = DType::kBF16;
  std::string impl;  // the implementation ("flashinfer", "dcpsim"); empty: any (Scenario::attention_impl)
  // The step's merge takes each finished row from the attention kernel itself (row-stream): dcpsim's kernel
  // then pushes a row of one split from its split kernel, with no combine pass.
  bool pushes_rows = false;
  int rows_per_kv = 1;  // Scenario::rows_per_kv
};
// From a scenario: shared_kv when kv_heads == 1 and qk_dim > head_dim (the MLA layout).
AttentionShape attention_shape(const Scenario& s);
// Bytes of KV read per token of a row's local shard (all KV heads).
double kv_bytes_per_token(const AttentionShape& a);
// The bytes a decode attention kernel must move over these rows: each non-empty row's KV shard once, its
// queries, its outputs and LSEs (what an implementation's table model, kernel_table.h TableModel, is fitted
// and priced on).
double attention_io_bytes(const AttentionShape& a, std::span<const int64_t> local_tokens);
// Query heads each work unit handles, and work units per (row, split): MLA groups heads_per_cta query heads
// per unit; GQA gives each KV head its own unit (with all its query heads).
int heads_per_work_unit(const HardwareProfile& p, const AttentionShape& a);
int head_groups(const HardwareProfile& p, const AttentionShape& a);

// Table keys: what must match exactly for a table to price a kernel. Attention: "mla qk576 d512 bf16" (one
// shared latent) or "gqa qk128 d128 g8 bf16" (g = query heads per KV head), followed by the implementation
// measured when known ("mla qk576 d512 bf16 flashinfer"); merge kernels: "d512 bf16".
std::string attention_table_key(const AttentionShape& a);  // without the implementation
// The attention time of the profile's tables at `at` (heads, rows, tokens). With a.impl: the table of that
// implementation, else one whose implementation is unknown (key without it). Without: a table whose
// implementation is unknown, else the first table of any implementation (the profile's order).
std::optional<double> attention_table_time_s(const HardwareProfile& p, const AttentionShape& a,
                                             std::span<const double> at);
// The `heads` coordinate of an attention table lookup: the query heads the kernel computes. FlashInfer's MLA
// kernel (impl "flashinfer"): H up to 128 (at least 72 above 64), whole 128-head cluster tiles above
// (flashinfer_mla_table_heads: H = 144 costs what H = 256 does). Other MLA kernels with more query heads than
// one work unit takes (attention.heads_per_cta): whole units (dcpsim's pads the last 64-head tile). Otherwise
// H.
double attention_table_heads(const HardwareProfile& p, const AttentionShape& a);
// The same with an explicit MLA work unit (heads_per_cta) instead of the profile's.
double attention_table_heads(const AttentionShape& a, int heads_per_cta);
// FLOPs of one query head over one KV token: QK^T (qk_dim) and PV (head_dim), a multiply-add each.
double attention_flops_per_head_token(const AttentionShape& a);

struct AttentionTiming {
  // All times are relative to the attention kernel's start.
  std::vector<double> row_done_s;  // per row: end of the wave holding its last work unit (floor if empty)
  std::vector<int> row_splits;     // per row: KV splits (0 for an empty row)
  std::vector<int> row_last_wave;  // per row: wave index of its last unit (-1 for an empty row)
  int64_t split_tokens = 0;        // tokens per split (a multiple of attention.work_unit_tokens)
  int work_units = 0;              // units over all rows, splits and head groups
  int slots = 0;                   // units resident at once: SMs × ctas_per_sm
  int waves = 0;
  std::vector<double> wave_end_s;  // per wave, its end
  double total_bytes = 0.0;        // HBM bytes: every row's KV shard, queries and final output + LSE
  double kernel_end_s = 0.0;       // floor + every wave
  bool needs_combine = false;      // some row has more than one split (or all_rows_combined)
  bool all_rows_combined = false;  // every row is written by the combine, empty ones too (dcpsim's kernel)
  bool combined(std::size_t b) const { return all_rows_combined || row_splits[b] > 1; }
  double combine_s = 0.0;  // duration of the split-KV combine kernel (0 when not needed)
  double combine_bytes = 0.0;
  double total_flops = 0.0;  // 2 · heads · tokens · (qk_dim + head_dim) over the rows
  // kTable: the kernel's time (attention and split-KV combine) is a table's, and every time above is the
  // analytic one scaled to it, so the waves keep their order and shares.
  FigureSource source = FigureSource::kAnalytic;
  // kTable: the table read was FlashInfer's MLA kernel's, one launch that merges its splits itself; else the
  // attention kernel, a graph's gap and the combine kernel, all inside the table's time.
  bool table_one_launch = false;

  // When each row's final output and LSE exist: rows with one split at row_done_s, split rows when the
  // combine kernel that starts at combine_start_s ends.
  std::vector<double> row_ready_s(double combine_start_s) const;
};

// Decode attention on one rank over each row's local shard length (tokens; 0 = empty shard).
// The split is the smallest multiple of attention.work_unit_tokens whose units fit in one wave of the slots
// (SMs × ctas_per_sm); when rows × head groups alone exceed the slots, rows are not split and run in several
// waves. Units are ordered row by row, split by split, head group by head group; unit i runs in wave i /
// slots. A unit streams its share of the split's KV from HBM (head groups of one KV head share the read); its
// Q load and partial write are L2 traffic inside cta_overhead. The units of a wave share the kernel's HBM
// bandwidth (measured × efficiency(total_bytes)) evenly, each at most attention.max_cta_bandwidth, so a wave
// lasts cta_overhead + the larger of its largest unit's bytes / that share and its FLOPs / the unit's share
// of attention.tensor_rate (one SM's share, divided among the units resident on that SM): the roofline per
// wave. With `use_tables`, a profile table covering (heads, rows, mean tokens of the non-empty rows) sets the
// kernel's time (source kTable) and scales the waves to it.
// Whether decode_attention_time prices `a` as vLLM's Triton MLA kernel: the profile has attention.triton_mla
// and the step is MLA of no named implementation, not row-stream's pushing kernel.
bool uses_triton_mla(const HardwareProfile& p, const AttentionShape& a);
AttentionTiming decode_attention_time(const HardwareProfile& p, const AttentionShape& a,
                                      std::span<const int64_t> local_tokens, bool use_tables = true);

// Merge-kernel geometry on one rank: heads = H present on the rank, dcp = N.
struct MergeShape {
  int dcp = 1;
  int rows = 1;
  int heads = 128;
  int head_dim = 512;
  DType out_dtype = DType::kBF16;
  // The kernel's inputs are no longer in L2 (in a step they were just written by the kernel before it, so
  // they are; in an emulated step the later ranks' attention ran in between): priced from the table measured
  // with cold inputs when the profile has one.
  bool cold_inputs = false;
  // The runner's per-row stamps were on (`hw run --row-stamps`): correction and combine then run their
  // instrumented kernels (a fence and an atomic per block and row; not the fast variants), priced from the
  // " stamped" tables (`hw sweep --row-stamps`), never from the plain kernels' tables.
  bool row_stamps = false;
  // The correction writes the reduce-scatter's head-block layout (AG+RS) instead of O in place (AG+AR): new
  // lines to allocate in L2 and a scattered store pattern, priced from the " rs" tables (`hw sweep` times
  // both layouts), else from the in-place ones. merge_shape(s) sets it for AG+RS, whose only merge kernel is
  // the correction.
  bool rs_layout = false;
  // a2a-2call's layout: the pack writes, and the combine reads, the LSEs in buffers of their own (O rows of D
  // lanes, no LSE lanes), so the combine runs the short-path kernel with 16-byte accesses where the packed
  // rows allow only 4-byte ones: priced from the " split" tables (`hw sweep --split-lse`), else from the
  // packed layout's. merge_shape(s) sets it for a2a-2call.
  bool split_lse = false;
  // With cold_inputs, the correction's gathered LSEs are in L2 all the same: an emulated step's LSE
  // all-gather copies them just before. Priced from the " cold lse" tables (`hw sweep --merge-inputs cold
  // --warm-lse`; H200: a third of the way from the cold time to the warm one, median), else as cold_inputs.
  bool warm_lse = false;
  // Launched with programmatic dependent launch right after another kernel of the same kind (an emulated
  // step's ranks after the first under --launch pdl): it is scheduled while its predecessor runs and is
  // charged from the predecessor's end, as the runner charges a phase. Priced from the " pdl" tables (`hw
  // sweep --pdl`: the third of three calls, warm or cold), else as without.
  bool pdl = false;
  // The implementation of the merge kernels ("" for dcpsim's own; "vllm-triton" for vLLM's Triton correction
  // as a profiler trace names it, Scenario::merge_impl): its tables carry it at the end of the key, and its
  // table's model prices the shapes outside the table.
  std::string impl = {};
};
MergeShape merge_shape(const Scenario& s);

// Correction (AG+RS, AG+AR): read the N gathered LSEs, read and rewrite O_r in place scaled by exp(L_r − L).
double correction_bytes(const MergeShape& m);
double correction_time(const HardwareProfile& p, const MergeShape& m);
// A2A pack: read O_r and L_r, write [N][B][H/N][D + P] (P lanes carry the fp32 LSE bit pattern).
// The packed all-to-all buffer a rank sends (and receives): [N][B][H/N][D + P] in the output type.
double a2a_buffer_bytes(const MergeShape& m);
double a2a_pack_bytes(const MergeShape& m);
double a2a_pack_time(const HardwareProfile& p, const MergeShape& m);
// A2A unpack-combine: read the N received blocks [N][B][H/N][D + P], write [B][H/N][D] once.
double unpack_combine_bytes(const MergeShape& m);
double unpack_combine_time(const HardwareProfile& p, const MergeShape& m);
// Direct combine: read the N blocks written by peers (D values + fp32 LSE each) and the N flags, write once.
double direct_combine_bytes(const MergeShape& m);
double direct_combine_time(const HardwareProfile& p, const MergeShape& m);
// A merge kernel priced from the profile's tables at (dcp, rows, heads) when one covers the shape, else by
// its byte count (kernel.<type> numbers). 0 s (analytic) for N = 1. Cold inputs look up the " cold" table
// first ("d512 bf16 cold", measured by `hw sweep --merge-inputs cold`), then the warm one. Row stamps look
// up " stamped" tables only ("d512 bf16 stamped", "d512 bf16 stamped cold").
std::string merge_table_key(const MergeShape& m);
// Where a merge kernel of type `k` (not attention, not a collective) looks `m` up in its table: dcp, rows and
// H, or H / N for the kernels on one owner's slice (models::table_axes).
std::vector<double> merge_table_at(TableKernel k, const MergeShape& m);
KernelPrice merge_kernel_price(const HardwareProfile& p, MemoryKernel k, const MergeShape& m);
// The key of the table merge_kernel_price reads `m` from (its exact key, or the one it falls back to: the
// packed layout's for a split shape, the warm one for cold inputs, ...), or "" when no table covers the
// shape.
std::string merge_price_key(const HardwareProfile& p, MemoryKernel k, const MergeShape& m);

// P of the packed layout: 2 lanes for 16-bit outputs, 1 for fp32.
int packed_lse_lanes(DType out_dtype);

}  // namespace dcpsim::models
