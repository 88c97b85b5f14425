#pragma once
// Host entry points to each CUDA kernel, one call per operation on host data: upload, launch on the current
// device, download. They exist so the kernels can be checked against the models/ reference on any shape (the
// step runner launches the same kernels on device buffers directly). Inputs use the reference's types; values
// must be representable in the stated element types (they are converted, not rounded twice).
#include <cstdint>
#include <span>
#include <vector>

#include "dcpsim/hw/attention_impl.h"
#include "dcpsim/models/a2a_pack.h"
#include "dcpsim/models/attention.h"
#include "dcpsim/models/problem.h"
#include "dcpsim/models/sharding.h"
#include "dcpsim/models/tensor.h"
#include "dcpsim/models/types.h"

namespace dcpsim::hw {

// The two head geometries the decode-attention kernel is built for.
//   GQA: D_qk = D = 128, H_kv divides H.
//   MLA: D_qk = 576, D = 512, H_kv = 1, and V is the first 512 lanes of the 576-wide latent (read once for
//   both).
enum class AttentionGeometry { kGqa128, kMla576 };

// Throws InputError naming the unsupported extents.
AttentionGeometry attention_geometry(int qk_dim, int dim, int kv_heads);

struct GpuAttentionOptions {
  models::DType kv_dtype = models::DType::kBF16;  // bf16 or fp16 (the kernels take 16-bit inputs)
  models::AttentionOptions attention;             // base, scale, out dtype, empty marker, padding, layouts
  int splits = 0;                                 // KV splits per row; 0 = enough to fill the device
  AttentionImpl impl =
      AttentionImpl::kDcpsim;  // kFlashInfer: FlashInfer's kernels (bf16 only, dense O for GQA)
};

// Decode attention with LSE over one rank's shard (split-KV, fp32 accumulation, one combine). For MLA the
// shard's V must equal the first D lanes of K. Returns the rank's partial in the requested layouts.
models::Partial gpu_local_attention(const models::Problem& problem, const models::KvShard& shard,
                                    const GpuAttentionOptions& options);

struct GpuCorrectOptions {
  models::LseBase base = models::LseBase::kE;
  models::DType out_dtype = models::DType::kBF16;
  int valid_rows = -1;       // rows at or past this are padding: written as 0
  bool head_blocks = false;  // false: in place; true: out of place into [N][B][H/N][D] (the RS send layout)
  int variant = -1;          // kernel variant (op_variants("correct") in bench.h); -1: chosen by size
};

struct GpuCorrectResult {
  std::vector<double> out;  // in place: the partial's own layout (its storage); head_blocks: [N][B][H/N][D]
  std::vector<double> lse;  // merged LSE [B][H] (−inf for rows empty on every rank)
};

// The AG strategies' correction on rank `rank`: reads every rank's LSE (any layouts, as after the LSE
// all-gather) and scales that rank's O by w_r = base^(L_r − L), rounded once to out_dtype; a partial with
// weight 0 is never read (written as 0).
GpuCorrectResult gpu_lse_correct(std::span<const models::Partial> partials, int rank,
                                 const GpuCorrectOptions& options);

// Packs one rank's partial for `dcp` destinations in the SPEC layout, with the padding mask fused in (rows at
// or past valid_rows travel with LSE −inf) and O zeroed wherever the LSE is not finite.
models::A2aBuffer gpu_a2a_pack(const models::Partial& partial, int dcp, models::DType dtype,
                               int valid_rows = -1);

// a2a-2call's send side: the same pack kernel writing O to [N][B][H/N][D] and the LSE to its own fp32
// [N][B][H/N], the two buffers of the two all-to-alls (the same masking).
struct GpuSplitPack {
  int dcp = 0, rows = 0, heads_per_block = 0, dim = 0;
  std::vector<double> out;  // [N][B][H/N][D]
  std::vector<float> lse;   // [N][B][H/N]
};
GpuSplitPack gpu_a2a_split_pack(const models::Partial& partial, int dcp, models::DType dtype,
                                int valid_rows = -1);

struct GpuMergedBlock {
  int rows = 0;
  int heads = 0;  // H/N
  int dim = 0;
  std::vector<double> out;  // [B][H/N][D]
  std::vector<double> lse;  // [B][H/N]
};

// The receiver's unpack-combine: N partials from the received buffer, fp32 accumulation, one rounding.
// `variant` as in op_variants("a2a-combine"); -1: chosen by size.
GpuMergedBlock gpu_a2a_combine(const models::A2aBuffer& received, models::LseBase base,
                               models::DType out_dtype, int valid_rows = -1, int variant = -1);

struct GpuCombineOptions {
  models::LseBase base = models::LseBase::kE;
  models::DType dtype = models::DType::kBF16;  // the slots' and the output's type
  int valid_rows = -1;
  int variant = -1;  // op_variants("combine"); -1: chosen by size
};

// The same combine on the direct merge's slot layout (O [N][B][H/N][D] and LSE [N][B][H/N] apart, no flags):
// block `owner` (heads [owner·H/N, (owner+1)·H/N)) of every partial, fp32 accumulation, one rounding.
GpuMergedBlock gpu_combine_slots(std::span<const models::Partial> partials, int owner,
                                 const GpuCombineOptions& options);

struct GpuDirectOptions {
  models::LseBase base = models::LseBase::kE;
  models::DType out_dtype = models::DType::kBF16;
  int valid_rows = -1;
  int steps = 3;         // repeated steps exercise both buffers and the epoch stamps
  int skip_writer = -1;  // testing: this rank is left out of the launch, so its owners must time out
  std::int64_t timeout_ns = 2'000'000'000;
  // The kernel, by its `hw bench --op direct --variant` name: "chunk" (the default), "grid" or "chunk-sys".
  std::string kernel = "chunk";
  int blocks_per_rank =
      0;  // 0: as the launch sizes it; else this many (each block then loops over its chunks)
  // Empty: every rank on the current device, emulated as the runner's --emulate does (plain allocations,
  // every rank in one launch). Otherwise rank r runs on devices[r] over NCCL symmetric windows of one
  // communicator (ncclCommInitAll), one launch per rank: the runner's thread mode.
  std::vector<int> devices;
};

// Direct (one-shot) merge, one kernel per rank (dcpsim/hw/direct_protocol.h): each rank stores its head
// blocks and LSE into the owners' windows, raises an epoch-stamped flag, waits for the N flags and combines
// in fp32. Returns one block per owner rank (the last step's result). A flag that never arrives ends in
// RuntimeError naming the rank.
std::vector<GpuMergedBlock> gpu_direct_merge(std::span<const models::Partial> partials,
                                             const GpuDirectOptions& options);

struct GpuRowStreamOptions {
  models::LseBase base = models::LseBase::kE;
  models::DType out_dtype = models::DType::kBF16;
  int valid_rows = -1;
  int steps = 3;         // repeated steps exercise both window parities and the epoch-stamped counters
  int skip_writer = -1;  // testing: this rank never pushes, so its owners must time out
  // false: every push, then every combine, on one stream. true: the owners' combines are launched first, on
  // a stream of their own at the greatest priority, and spin until the pushes (launched after them) land.
  bool combine_first = false;
  std::int64_t timeout_ns = 2'000'000'000;
  bool staged = false;  // the combine's shared-memory stages even where an item fits the registers
  // The early tail (ops::RowCombineArgs::early), launched after the pushes on a stream of its own at the
  // least priority, its gate counting the push blocks that began: open (the step's count: its blocks merge
  // beside the tail once every push block has begun, else exit) or closed (one more than a step has: every
  // block exits and the tail merges everything).
  enum class Early { kNone, kOpen, kClosed };
  Early early = Early::kNone;
};

// Row-streaming merge with every rank on the current device: each rank pushes its rows (the post-kernel
// push: O slices with 16-byte stores, LSE, a per-row flag) into the owners' windows; each owner waits for
// every rank's flag of a row and combines it in fp32. D·element size must be a multiple of 16 bytes and
// D ≤ 512; O rows and heads 16-byte aligned. Returns one block per owner rank (the last step's result). A row
// that never arrives ends in RuntimeError naming the rank and the row.
std::vector<GpuMergedBlock> gpu_row_stream_merge(std::span<const models::Partial> partials,
                                                 const GpuRowStreamOptions& options);

// FlashInfer's fused DCP merge (comm/dcp_lse_reduce.cuh) with rank r on devices[r] over NCCL symmetric
// windows (devices.size() == partials.size(); one GPU runs N = 1). Partials must be dense [B][H][D] (bf16 or
// fp16 out) and [B][H]. Owner r's block holds heads r, r + N, ... ([B][H/N][D]); lse stays empty (FlashInfer
// returns no merged LSE). InputError in builds without FlashInfer.
struct GpuFlashInferMergeOptions {
  models::LseBase base = models::LseBase::kE;
  models::DType out_dtype = models::DType::kBF16;
  int steps = 3;
  std::vector<int> devices = {0};
};
std::vector<GpuMergedBlock> gpu_flashinfer_dcp_merge(std::span<const models::Partial> partials,
                                                     const GpuFlashInferMergeOptions& options);

}  // namespace dcpsim::hw
