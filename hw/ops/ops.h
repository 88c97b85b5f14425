#pragma once
// The kernels' launch interface (internal: CUDA types allowed). One params struct per kernel; every launch
// function checks its arguments (InputError) and the launch (RuntimeError). Strides and sizes are in
// elements.
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dcpsim/models/types.h"

namespace dcpsim::hw::ops {

enum class Elem { kF32, kBF16, kF16 };
Elem elem_of(models::DType type);  // InputError for fp64
std::size_t elem_bytes(Elem e);

// Optional per-row readiness stamps: the last block to finish row b writes %globaltimer into stamps[b].
// counters[b] must be zero before the launch.
struct RowStamps {
  unsigned long long* stamps = nullptr;
  unsigned int* counters = nullptr;
};

// Where the merged/ local LSE goes: element (b, h) at ptr[b·row_stride + h·head_stride].
struct LseOut {
  float* ptr = nullptr;
  std::int64_t row_stride = 0;
  std::int64_t head_stride = 0;
};

// ---- decode attention (ops/attention.cu) ----
// An fp8 KV cache's per-tensor scale (hw run --kv-dtype fp8, the attention sweep's fp8 tables): 2^-8, so a
// generated value of at most √3 is 443 in e4m3 units (of 448), as a calibrated scale (amax / 448) would place
// it, and a power of two, so FlashInfer's bf16 dequantization (scale × e4m3) is exact.
inline constexpr double kFp8KvScale = 1.0 / 256.0;

enum class Geometry { kGqa128, kMla576 };
struct RowPush;  // the row-streaming merge's push target (below)

struct AttentionArgs {
  Geometry geometry = Geometry::kMla576;
  Elem in = Elem::kBF16;  // Q, K, V (with kv_fp8: Q only)
  Elem out = Elem::kBF16;
  // An fp8 e4m3 KV cache with one per-tensor scale (vLLM's --kv-cache-dtype fp8): K and V hold e4m3, their
  // value is kv_scale × e4m3. FlashInfer's kernels only (FlashInferAttention); launch_attention refuses it.
  bool kv_fp8 = false;
  float kv_scale = 1.f;
  int rows = 0, valid_rows = 0, heads = 0, kv_heads = 1;
  // Q element (b, h, d) at q[(h / q_block_heads)·q_block_stride + b·q_row_stride + (h % q_block_heads)·D_qk +
  // d] (q_block_heads = H for a plain [B][H][D_qk] tensor; H/N for the query all-gather's [N][B][H/N][D_qk]).
  const void* q = nullptr;
  std::int64_t q_row_stride = 0, q_block_stride = 0;
  int q_block_heads = 0;
  // Shard KV: row b's token l at k[(kv_offset[b] + l)·k_token_stride + kv_head·D_qk]; V likewise (MLA: V =
  // K).
  const void* k = nullptr;
  const void* v = nullptr;
  std::int64_t k_token_stride = 0, v_token_stride = 0;
  const std::int64_t* kv_offset = nullptr;  // device [B]
  const int* kv_len = nullptr;              // device [B]
  std::int64_t max_len = 0;                 // host-side upper bound of kv_len, sizes the split grid
  float scale = 0;
  bool base2 = false;
  void* o = nullptr;
  std::int64_t o_row_stride = 0, o_head_stride = 0;
  LseOut lse;
  float empty_lse = 0;         // what an empty row reports (−inf, or +inf for the FlashAttention marker)
  float empty_fill = 0;        // and what its O holds (0 or NaN)
  int splits = 0;              // 0: chosen to fill the device
  float* workspace = nullptr;  // attention_workspace_bytes()
  RowStamps stamps;
  // Row-streaming merge: when set, each finished (row, head group) is pushed to its owners' windows (see
  // RowPush) instead of being written to o and lse, which may then be null. Q/K/V bf16 in, bf16 out (or fp16
  // in and out) with one split: the split kernel's own epilogue pushes; otherwise the split combine does.
  const RowPush* push = nullptr;
  // Optional, with push only (InputError otherwise): an event (cudaEventDisableTiming) that triggers once
  // every block of the pushing kernel has begun (the split kernel's with one split, else the split
  // combine's; see LaunchExtras in device_common.cuh); the row-stream step releases its early tail with it.
  cudaEvent_t blocks_started = nullptr;
};

int attention_splits(const AttentionArgs& a, int device);  // the split count launch will use
std::size_t attention_workspace_bytes(const AttentionArgs& a, int splits);
// Rows whose blocks (all heads, `splits` splits each) fill the device once.
int attention_rows_per_wave(const AttentionArgs& a, int splits, int device);
void launch_attention(const AttentionArgs& a, cudaStream_t stream);
// With a push target: how many blocks of launch_attention(a) add 1 to push->started as they begin (the split
// kernel's own, when it pushes itself); 0 when the split combine pushes (those blocks do not count).
int attention_push_blocks(const AttentionArgs& a, int device);

// ---- decode attention through FlashInfer (ops/flashinfer_attention.cu; builds with DCPSIM_WITH_FLASHINFER)
// ---- Same arguments and results as launch_attention (LSE base and layout, empty and padding rows, strided O
// for MLA), bf16 only, on FlashInfer's kernels over a page table (kv_page_tokens) built from the host copies
// of kv_offset and kv_len, which must start every row on a page (paged_row_offsets). Construction plans once
// for those lengths (host work, not capturable); launch() only enqueues kernels and may change the data
// pointers (q, k, v, o, lse) but not the shape. InputError for what FlashInfer does not run
// (flashinfer_unsupported) or a device it was not built for.
class FlashInferAttention {
 public:
  FlashInferAttention(const AttentionArgs& a, const std::vector<std::int64_t>& kv_offset,
                      const std::vector<int>& kv_len);
  ~FlashInferAttention();
  FlashInferAttention(const FlashInferAttention&) = delete;
  FlashInferAttention& operator=(const FlashInferAttention&) = delete;
  void launch(const AttentionArgs& a, cudaStream_t stream);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};
// Whether this build's FlashInfer kernels run on `device` (MLA: sm_90 only, its code is sm_90a; GQA: sm_90,
// sm_100); false in builds without FlashInfer.
bool flashinfer_runs_on(Geometry geometry, int device);

// ---- LSE correction (ops/lse_correct.cu) ----
// All ranks' LSEs after the all-gather: rank n's (b, h) at ptr[n·rank_stride + b·row_stride + h·head_stride].
struct LseIn {
  const float* ptr = nullptr;
  std::int64_t rank_stride = 0, row_stride = 0, head_stride = 0;
};

// What every merge kernel is sized by: N partials of `rows` rows (B'; rows at or past valid_rows are
// CUDA-graph padding), `heads` heads each (H, or H/N where a kernel sees one owner's slice), D lanes, the
// LSE's base and the partials' element type. Each merge's arguments extend it.
struct MergeDims {
  int dcp = 1, rows = 0, valid_rows = 0, heads = 0, dim = 0;
  bool base2 = false;
  Elem elem = Elem::kBF16;
};
// A merge's arguments with their sizes set: with_dims<CorrectArgs>({N, B', B, H, D, base2, elem}).
template <class Args>
Args with_dims(const MergeDims& d) {
  Args a;
  static_cast<MergeDims&>(a) = d;
  return a;
}

struct CorrectArgs : MergeDims {
  int rank = 0;
  LseIn lse;
  const void* in = nullptr;  // O_rank (b, h, d) at in[b·in_row_stride + h·in_head_stride + d]
  std::int64_t in_row_stride = 0, in_head_stride = 0;
  // Corrected (b, h, d) at out[(h / out_block_heads)·out_block_stride + b·out_row_stride + (h %
  // out_block_heads)·out_head_stride + d]; out == in with the same strides is the in-place form.
  void* out = nullptr;
  std::int64_t out_row_stride = 0, out_head_stride = 0, out_block_stride = 0;
  int out_block_heads = 0;
  LseOut merged_lse;  // optional
  RowStamps stamps;
  int variant = -1;  // index into correct_variants(); -1: the one correct_auto_variant picks for the size
};
void launch_correct(const CorrectArgs& a, cudaStream_t stream);
// The correction's kernels: the lane-group
// kernel with 1, 2, 4 or 8 16-byte vectors per lane ("g1" .. "g8"; "g4s", "g8s" with streaming cache hints),
// and the short-path kernels with 1, 2 or 4 ("f*": LSE reduction across the group, "s*": each lane alone;
// calls they do not take run the lane-group kernel with as many vectors).
const std::vector<std::string>& correct_variants();
int correct_auto_variant(const CorrectArgs& a);
// The short-path kernels (lse_correct_fast.cu) with `vpt` 16-byte vectors per lane; false (nothing launched)
// when the call is outside what they take (16-bit O on 16-byte rows, N <= 8, rows <= 65535, no row stamps).
bool launch_correct_fast(const CorrectArgs& a, int vpt, bool solo, cudaStream_t stream);

// ---- packed all-to-all (ops/a2a_pack.cu, ops/a2a_combine.cu) ----
struct PackArgs : MergeDims {  // elem: O's type and the packed type; the base is not used
  const void* o = nullptr;
  std::int64_t o_row_stride = 0, o_head_stride = 0;
  const float* lse = nullptr;
  std::int64_t lse_row_stride = 0, lse_head_stride = 0;
  void* send = nullptr;  // [N][B][H/N][D + P]; with lse_send: O alone, [N][B][H/N][D]
  // a2a-2call: the LSEs go to their own buffer [N][B][H/N] (fp32) and the O rows to `send` without LSE lanes,
  // the two buffers the two all-to-alls move (the same masking of padding rows and non-finite LSEs).
  float* lse_send = nullptr;
};
int lse_lanes(Elem e);  // P
void launch_a2a_pack(const PackArgs& a, cudaStream_t stream);

// The shared N-way combine of partial blocks, read either from a received A2A buffer or from direct-merge
// slots.
struct CombineArgs : MergeDims {  // heads: H/N; elem: the partials' type
  // Source s's O (b, j, d) at o[s·src_stride + (b·heads + j)·o_lanes + d]; its LSE either packed in lanes D,
  // D+1 of the same rows (lse == nullptr) or at lse[s·lse_src_stride + b·heads + j].
  const void* o = nullptr;
  std::int64_t src_stride = 0;
  int o_lanes = 0;
  const float* lse = nullptr;
  std::int64_t lse_src_stride = 0;
  Elem out = Elem::kBF16;
  void* dst = nullptr;  // (b, j, d) at dst[b·dst_row_stride + j·dst_head_stride + d]
  std::int64_t dst_row_stride = 0, dst_head_stride = 0;
  LseOut merged_lse;  // optional
  RowStamps stamps;
  // Direct merge: the epoch (device counter, read at run time so a replayed CUDA graph advances it) picks the
  // buffer (epoch & 1): o, lse and flags move by parity_* elements per buffer. Before reading, wait for
  // flags[s] == epoch (s = 0..N−1); on timeout set *error = 1 + s and write nothing.
  const unsigned long long* flags = nullptr;
  const unsigned long long* epoch = nullptr;
  std::int64_t parity_o_stride = 0, parity_lse_stride = 0, parity_flag_stride = 0;
  long long timeout_ns = 0;
  int* error = nullptr;
  int variant = -1;  // index into combine_variants(); -1: the one combine_auto_variant picks for the size
};
void launch_combine(const CombineArgs& a, cudaStream_t stream);
// The combine's kernels: the lane-group kernel with 1, 2 or 4 16-byte vectors per lane and source ("g1",
// "g2", "g4"; a call whose output type differs from its input's runs it one element per lane), the short-path
// kernel with 1 or 2 ("f1", "f2"; calls it does not take run "g1", "g2") and the packed rows' short path with
// 4 or 8 words ("p4", "p8"; calls it does not take run what "f1", "f2" would).
const std::vector<std::string>& combine_variants();
int combine_auto_variant(const CombineArgs& a);
// The short-path kernel (a2a_combine_fast.cu) with `vpt` 16-byte vectors per lane and source; false (nothing
// launched) outside what it takes (16-bit in = out on 16-byte rows, LSE slots, N <= 8, rows <= 65535, no
// stamps).
bool launch_combine_fast(const CombineArgs& a, int vpt, cudaStream_t stream);
// The packed rows' short path (a2a_combine_fast.cu) with `vpt` (4 or 8) 32-bit words per lane and source;
// false (nothing launched) outside what it takes (16-bit in = out, LSE packed in the rows, no flags, N <= 8,
// rows <= 65535, even D and strides). Row stamps allowed.
bool launch_combine_packed(const CombineArgs& a, int vpt, cudaStream_t stream);

// ---- direct merge, one kernel per rank (ops/direct_merge.cu; protocol in dcpsim/hw/direct_protocol.h) ----
// One rank's side of a step: its partials, the owners' windows as it addresses them, its output. The same
// kernel runs over NCCL windows (one rank per launch, `windows` from the LSA team) and in emulation (every
// logical rank of one device in one launch, `windows` plain device allocations).
struct DirectRank {
  int rank = 0;
  const void* o = nullptr;  // O (b, h, d) at o[b·o_row_stride + h·o_head_stride + d], the output type
  std::int64_t o_row_stride = 0, o_head_stride = 0;
  const float* lse = nullptr;  // L (b, h) at lse[b·lse_row_stride + h·lse_head_stride]
  std::int64_t lse_row_stride = 0, lse_head_stride = 0;
  unsigned char* const* windows = nullptr;  // device array [N]: owner n's window base
  void* out = nullptr;                      // this rank's merged heads, [B][H/N][D]
  float* merged_lse = nullptr;              // optional, [B][H/N]
  // Local, zero before the first step: [0] the last finished epoch, [1] the blocks of the running step that
  // have counted themselves (the last of the launch's grid records the epoch and resets it to 0).
  unsigned long long* control = nullptr;
  int* error = nullptr;  // set to 1 + s when the flag of source s did not come within the timeout
  RowStamps stamps;
};

// Which kernel runs the protocol (dcpsim/hw/direct_protocol.h): `chunk` raises a flag per chunk of an owner's
// pairs and combines a chunk once every source has sent it; `grid` raises one flag per source once all its
// blocks have stored, so every combine waits for every store. The chunk kernel's flags are system-scope
// unless every window is on this device (DirectMergeArgs::same_device); kChunkSys keeps them system-scope
// there too (what the flags cost across GPUs, measured on one). kChunkStaged is the chunk kernel with its
// sends and combines in rounds of four pairs or sources (before the one-round paths). kAuto: chunk.
enum class DirectVariant { kAuto, kChunk, kGrid, kChunkSys, kChunkStaged };

struct DirectMergeArgs : MergeDims {     // heads: H; elem: O's, the slots' and the output's type
  const DirectRank* ranks = nullptr;     // device array, one entry per rank of this launch
  int launch_ranks = 1;                  // blockIdx.y picks the entry
  long long timeout_ns = 2'000'000'000;  // per wait for the peers' flags
  int blocks_per_rank = 0;               // 0: what direct_merge_blocks() says
  bool o_rows_aligned = true;            // every rank's O rows start on 16 bytes (else element-wise loads)
  DirectVariant variant = DirectVariant::kAuto;
  bool same_device = false;  // every window is an allocation of the launching device (emulation)
  // The owners' window bases as every rank of this launch addresses them (device array [N]), when that is one
  // table (emulation; any one-rank launch): the kernel then reads it beside the rank's entry instead of after
  // it. Null: each rank's DirectRank::windows.
  unsigned char* const* windows = nullptr;
};
// The variants' names as `hw bench --op direct --variant I` numbers them (I = 0, 1, ...).
std::vector<std::string> direct_variants();
// Blocks per rank the launch uses: enough warps for the work, and every block of the launch resident at once
// (the blocks spin on flags that other blocks of the same launch, or other GPUs, raise).
int direct_merge_blocks(const DirectMergeArgs& a, int device);
void launch_direct_merge(const DirectMergeArgs& a, cudaStream_t stream);
// The window bytes each owner needs (DirectLayout::bytes()).
std::size_t direct_window_bytes(int dcp, int rows, int heads, int dim, Elem e);

// Peer pointers of an NCCL symmetric window (ops/nccl_lsa.cu): table[n] = the base of rank n's window as this
// rank addresses it (ncclGetPeerPointer; every rank must be in this rank's LSA team). `window` is an
// ncclWindow_t. Synchronous.
void nccl_window_peer_table(void* window, int ranks, unsigned char** table);
// NCCL_VERSION_CODE of the headers the device-API code was compiled against.
int nccl_header_version();
// How many ranks of `comm` are in this rank's LSA team (one NVLink load/store domain); 0 without the API.
int nccl_lsa_team_size(ncclComm_t comm);

// ---- FlashInfer's fused DCP merge (ops/flashinfer_dcp_merge.cu; builds with DCPSIM_WITH_FLASHINFER) ----
// One rank's call of flashinfer::comm::dcp::FusedKernel, launched as FlashInfer's own launcher does
// (cooperative, 128 threads, grid = min(entries or N, co-resident blocks), the row-distributed send from 16
// entries on). O [B][H][D] and L [B][H] dense, read as [B][H/N][N][D]: owner r gets heads r, r + N, ...
// into `out` [B][H/N][D]; no merged LSE.
struct FlashInferDcpArgs : MergeDims {  // heads: H; elem: bf16 or fp16; every row merged (no valid_rows)
  int rank = 0;
  const void* o = nullptr;
  const float* lse = nullptr;
  void* window = nullptr;              // ncclWindow_t of this rank's workspace
  unsigned char* workspace = nullptr;  // its local base (FlashInferDcpLayout), zeroed before first use
  void* out = nullptr;
};
void launch_flashinfer_dcp_merge(const FlashInferDcpArgs& a, cudaStream_t stream);
bool flashinfer_dcp_merge_built();

// ---- row-streaming merge (ops/row_stream.cu; the push epilogue is attention's, ops/attention.cu) ----
// Where a producer rank pushes its finished rows (layout: row_stream_layout.h). o, lse and flags are device
// arrays of 2·N pointers, parity-major ([epoch & 1][owner n]), to owner n's windows: plain device buffers of
// the other logical ranks in emulation, peer or NCCL window (LSA) pointers when the owners are other devices.
// A block stores its O slice with 16-byte stores and the LSE, then counts its heads per (row, owner); the
// count that completes a pair publishes the pair's flag with a release store of the epoch.
struct RowPush {
  int dcp = 1, rank = 0;
  int rows = 0;      // window rows (B')
  int row_base = 0;  // the launch's row 0 is window row row_base (a launch may cover a chunk of rows)
  int heads_per_owner = 0, dim = 0;
  void* const* o = nullptr;
  float* const* lse = nullptr;
  unsigned long long* const* flags = nullptr;
  const unsigned long long* epoch = nullptr;  // this rank's step counter (launch_advance_epoch), from 1
  unsigned long long* counters = nullptr;     // this rank's [rows][N], zero before its first step
  // Optional: every block of the split kernel's own push adds 1 here as it begins, before any PDL wait
  // (attention_push_blocks), so that a combine may tell when every producer of the step holds a
  // multiprocessor (RowCombineArgs::early). Never reset.
  unsigned long long* started = nullptr;
  bool system_scope = false;  // fences and flags at system scope (owners on other devices)
};

// The post-kernel push, for a rank whose O and LSE are already written (an attention kernel without an
// epilogue hook; the protocol's tests): rows [0, rows) (any strides; O rows and heads 16-byte aligned) into
// the owners' windows. Rows at or past valid_rows travel as empty (LSE −inf); a head whose LSE is not finite
// sends no O (its weight is 0).
struct RowPushArgs {
  RowPush push;
  int rows = 0, valid_rows = 0, heads = 0;
  Elem elem = Elem::kBF16;
  const void* o = nullptr;
  std::int64_t o_row_stride = 0, o_head_stride = 0;
  const float* lse = nullptr;
  std::int64_t lse_row_stride = 0, lse_head_stride = 0;
};
void launch_row_push(const RowPushArgs& a, cudaStream_t stream);

// The owner's combine: warps claim (row, head group) items in row order from `claim`, wait for the row's N
// flags of the current epoch (acquire), and merge the N partials exactly (SPEC: max-shifted, normalised
// weights, fp32, one rounding; a weight-0 partial is never read). Launched twice per step over the same
// counter: the streaming grid (tail = false: a few blocks at the device's greatest priority, beside the
// producers; all ranks' together hold at most 1/16 of the device) and, after the producers, the tail grid
// (tail = true: up to the device's size divided among the ranks); optionally a third, the early tail (early,
// below). A flag missing for timeout_ns sets error = {1 + rank, row} (first timeout wins) and ends the warp
// without writing that row.
struct RowCombineArgs : MergeDims {  // heads: J; elem: the window's and the output's type
  // This rank's window; parity p's O, LSE and flags start p·o_elems, p·lse_elems, p·flag_elems further.
  const void* o = nullptr;
  const float* lse = nullptr;
  const unsigned long long* flags = nullptr;
  const unsigned long long* epoch = nullptr;
  void* dst = nullptr;  // (b, j, d) at dst[b·dst_row_stride + j·dst_head_stride + d], 16-byte aligned rows
  std::int64_t dst_row_stride = 0, dst_head_stride = 0;
  LseOut merged_lse;                 // optional
  RowStamps lse_stamps, out_stamps;  // optional: flags seen (first block of the row), output written (last)
  long long timeout_ns = 0;
  int* error = nullptr;       // [2]
  unsigned* claim = nullptr;  // items claimed so far this step: zero before the step's first launch
  bool system_scope = false;
  int ranks_on_device = 1;  // how many ranks' combines share the device (sizes the grid)
  bool tail = false;        // the grid launched after the producers (else the streaming grid)
  bool staged = false;      // the shared-memory stages even where an item fits the registers (comparison)
  // The early tail (with tail): released while the producers still run (behind an event that triggers once
  // the last producer launch's blocks have all begun), at the device's least priority, it takes the items the
  // tail would and merges each source's partials as its flag lands. It never waits for the producers to
  // finish, and each block first checks that every producer block of the step has begun
  // (*producers_started ≥ epoch · producers_per_step, RowPush::started): else a spinning block could hold the
  // multiprocessor a producer waits for, and it exits instead. The tail launched after the producers stays,
  // as the net, on the same claim counter.
  bool early = false;
  const unsigned long long* producers_started = nullptr;
  unsigned long long producers_per_step = 0;
  // Optional: %globaltimer at each stage of each item, [items][row_stream::kProbeSlots]
  // (row_stream_layout.h), written by the warp that merges the item; zero it before the step.
  unsigned long long* probe = nullptr;
};
void launch_row_combine(const RowCombineArgs& a, cudaStream_t stream);

// ---- emulated collectives' arithmetic (ops/reduce_sum.cu) ----
// out[i] = Σ_k inputs[k][i] in fp32, rounded once (the emulated reduce-scatter / all-reduce).
struct ReduceArgs {
  int inputs = 0;
  const void* const* ptrs = nullptr;  // device array
  std::int64_t count = 0;
  Elem elem = Elem::kBF16;
  void* out = nullptr;
};
void launch_reduce_sum(const ReduceArgs& a, cudaStream_t stream);

// Writes %globaltimer into *slot (the origin of per-row stamps, and the all-rows-ready time after a
// collective).
void launch_stamp(unsigned long long* slot, cudaStream_t stream);

// ++*epoch on the device (the first thing of every row-stream step; the direct merge keeps its epoch itself).
void launch_advance_epoch(unsigned long long* epoch, cudaStream_t stream);

// Reads `bytes` (a multiple of 16) at p and keeps nothing but a sum that never comes out unless *sink is
// written (it is, only when the sum hits an impossible value): evicts L2 with clean lines, as a step's
// attention reading its KV cache does, where a memset would leave it full of dirty lines that every later
// miss must write back first (benchmarks: the --merge-inputs cold sweeps).
void launch_read_through(const void* p, std::size_t bytes, unsigned* sink, cudaStream_t stream);
// Every SM's threads chain fp32 FMAs for `ns` nanoseconds (the SMs busy, memory untouched).
void launch_busy(long long ns, unsigned* sink, cudaStream_t stream);
// One 4-byte load every `stride` bytes (a multiple of 16) of [p, p + bytes): translates every page of the
// range (evicting the TLBs' other entries) while bringing about bytes / stride L2 lines (a 32-byte sector
// each, up to 128 bytes with prefetch) into L2.
void launch_touch_pages(const void* p, std::size_t bytes, std::size_t stride, unsigned* sink,
                        cudaStream_t stream);

// One thread that spins for `ns` nanoseconds of %globaltimer (benchmarks: lets the host enqueue ahead).
void launch_delay(long long ns, cudaStream_t stream);

// Programmatic dependent launch (--launch pdl): while a PdlScope(true) is alive on this thread, the step's
// kernels are launched with cudaLaunchAttributeProgrammaticStreamSerialization, so each may start while its
// predecessor drains; every such kernel waits (griddepcontrol.wait) before touching memory.
bool pdl_enabled();
class PdlScope {
 public:
  explicit PdlScope(bool on);
  ~PdlScope();
  PdlScope(const PdlScope&) = delete;
  PdlScope& operator=(const PdlScope&) = delete;

 private:
  bool saved_;
};

// Fills n elements with uniform values in [-a, a) rounded to `e` from a counter-based hash of (seed, first +
// i).
void launch_fill_uniform(void* ptr, std::int64_t n, Elem e, float a, std::uint64_t seed, std::int64_t first,
                         cudaStream_t stream);

// Fills one rank's KV shard: local token l of row b is request token t = (l / I)·N·I + rank·I + l % I, and
// its `width` lanes get value(seed, (global_base[b] + t)·width + lane) — the whole cache's values, placed by
// the SPEC ownership rule, without materialising the cache.
struct KvFillArgs {
  void* ptr = nullptr;  // [Σ local_len][width]
  Elem elem = Elem::kBF16;
  int rows = 0;
  const std::int64_t* local_offset = nullptr;  // device [B]
  const std::int64_t* global_base = nullptr;   // device [B]
  const int* local_len = nullptr;              // device [B]
  std::int64_t max_len = 0;
  int width = 0;
  int dcp = 1, rank = 0, interleave = 1;
  std::uint64_t seed = 0;
  float amplitude = 1.f;
  // > 0: an fp8 KV cache, each value stored as e4m3(value / fp8_scale) (round to nearest even, saturating as
  // __NV_SATFINITE); elem is then ignored.
  float fp8_scale = 0.f;
};
void launch_fill_kv_shard(const KvFillArgs& a, cudaStream_t stream);

}  // namespace dcpsim::hw::ops
