#pragma once
// The seam between dcpsim and FlashInfer's headers: plain pointers and sizes, no FlashInfer types. Only
// flashinfer_mla.cu (sm_90a) and flashinfer_decode.cu include FlashInfer, each with the newer CCCL first on
// the include path; flashinfer_attention.cu (the op) calls these. Planning runs on the host into a pinned
// copy of the int workspace, which the caller uploads; runs only enqueue kernels (capturable in a CUDA
// graph).
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dcpsim::hw::ops::flashinfer_kernels {

// ---- MLA on Hopper: mla::BatchMLAPageAttentionHopper<kNone, 512, 64, MLAParams<bf16, KV, bf16, int32>>, KV
// bf16 or fp8 e4m3 (FlashInfer dequantizes an fp8 tile to bf16 in shared memory with per-tensor scales) ----
struct MlaRun {
  const void* q_nope = nullptr;  // bf16 [n][H][512] at q_nope[i·q_stride_n + h·q_stride_h]
  const void* q_pe = nullptr;    // bf16 [n][H][64], same strides
  std::uint32_t q_stride_n = 0, q_stride_h = 0;
  bool fp8 = false;           // the KV pages hold e4m3 (strides still in elements)
  float kv_scale = 1.f;       // fp8: dequantized = kv_scale · e4m3 (ckv and kpe alike)
  const void* ckv = nullptr;  // KV pages: token j of page p at ckv[p·kv_stride_page + j·kv_stride_n]
  const void* kpe = nullptr;  // likewise (the latent's lanes 512..575)
  std::uint32_t kv_stride_page = 0, kv_stride_n = 0;
  const int* kv_indices = nullptr;  // device page table
  void* o = nullptr;                // bf16, o[i·o_stride_n + h·o_stride_h + d]
  std::uint32_t o_stride_n = 0, o_stride_h = 0;
  float* lse = nullptr;  // [n][H]
  bool lse_base_e = true;
  int heads = 0, page_tokens = 64;
  float sm_scale = 0;
};
// Workspace sizes for any batch on `device` (the planner's partial buffers scale with the SM count).
std::size_t mla_float_workspace_bytes(int device);
std::size_t mla_int_workspace_bytes();
// MLAPlan for `batch` requests of one query each; returns MLAPlanInfo as a vector.
std::vector<std::int64_t> mla_plan(void* float_ws, std::size_t float_bytes, void* int_ws, void* int_host,
                                   std::size_t int_bytes, std::size_t& int_bytes_used, const int* qo_indptr,
                                   const int* kv_indptr, const int* kv_len, int batch, int heads);
void mla_run(const MlaRun& r, const std::vector<std::int64_t>& plan, void* float_ws, void* int_ws,
             cudaStream_t stream);

// ---- GQA decode: BatchDecodeWithPagedKVCacheDispatched<128, kNone, DefaultAttention, BatchDecodeParams>,
// KV bf16 or fp8 e4m3 (no scale in FlashInfer's decode: the caller folds K's into sm_scale, V's into O) ----
struct DecodeRun {
  const void* q = nullptr;  // bf16 q[i·q_stride_n + h·q_stride_h + d]
  std::int32_t q_stride_n = 0, q_stride_h = 0;
  bool fp8 = false;         // K and V pages hold e4m3
  const void* k = nullptr;  // NHD pages: k[p·stride_page + j·stride_n + kv_head·stride_h + d]
  const void* v = nullptr;  // same strides
  std::int64_t stride_page = 0, stride_n = 0, stride_h = 0;
  const int* indptr = nullptr;  // device page table
  const int* indices = nullptr;
  const int* last_page_len = nullptr;
  void* o = nullptr;     // bf16 [n][H][128], contiguous
  float* lse = nullptr;  // [n][H], base 2
  int batch = 0, heads = 0, kv_heads = 1, page_tokens = 16;
  float sm_scale = 0;
};
void decode_workspace_bytes(std::size_t& float_bytes, std::size_t& int_bytes, const int* indptr_host,
                            int batch, int heads, int kv_heads, int page_tokens, bool fp8);
// DecodePlan (uploads the int workspace on `stream` itself); returns DecodePlanInfo as a vector.
std::vector<std::int64_t> decode_plan(void* float_ws, std::size_t float_bytes, void* int_ws, void* int_host,
                                      std::size_t int_bytes, const int* indptr_host, int batch, int heads,
                                      int kv_heads, int page_tokens, bool fp8, cudaStream_t stream);
void decode_run(const DecodeRun& r, const std::vector<std::int64_t>& plan, void* float_ws, void* int_ws,
                cudaStream_t stream);

// ---- MergeStates (attention/cascade.cuh): `states` states per row, v [rows][states][heads][dim] and base-2
// LSEs s [rows][states][heads], merged into v_merged [rows][heads][dim] and s_merged [rows][heads] ----
struct MergeStatesRun {
  bool fp16 = false;  // else bf16
  const void* v = nullptr;
  const float* s = nullptr;
  void* v_merged = nullptr;
  float* s_merged = nullptr;
  int states = 0, rows = 0, heads = 0, dim = 0;
};
// RuntimeError when FlashInfer's launch fails (its small-N kernel takes one block of dim/vec × heads threads
// per row, which exceeds 1024 threads at D = 512 with more than 32 heads), InputError for a head dim it does
// not dispatch (64, 128, 256, 512).
void merge_states_run(const MergeStatesRun& r, cudaStream_t stream);
// ---- FlashInfer's fused DCP all-to-all + LSE merge: comm::dcp::FusedKernel (comm/dcp_lse_reduce.cuh) ----
struct DcpMergeRun {
  const void* o = nullptr;             // [entries][N][D] (bf16 or fp16): entry e's slice for destination n
  const float* lse = nullptr;          // [entries][N]
  void* window = nullptr;              // ncclWindow_t of the rank's symmetric workspace
  unsigned char* workspace = nullptr;  // its local base; the first payload_offset bytes zero before first use
  void* out = nullptr;                 // [entries][D]
  int dcp = 1, rank = 0, entries = 0, dim = 0;
  bool bf16 = true;  // else fp16
  bool lse_base_e = true;
};
// Launched as FlashInfer's launcher does (flashinfer/data/csrc/dcp_lse_reduce.cu): cooperative, 128 threads,
// grid min(max(entries, N), co-resident blocks), the row-distributed send from 16 entries on.
void dcp_merge(const DcpMergeRun& r, cudaStream_t stream);

}  // namespace dcpsim::hw::ops::flashinfer_kernels
