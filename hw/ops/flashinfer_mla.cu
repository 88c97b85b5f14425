// FlashInfer's Hopper MLA decode (flashinfer/attention/mla_hopper.cuh) and its planner (MLAPlan in
// scheduler.cuh), instantiated twice: bf16 Q/O with a bf16 or an fp8 e4m3 KV cache (per-tensor scales, the
// tile dequantized to bf16 in shared memory), int32 indices, no mask, 512 latent + 64 rope lanes. Built for
// sm_90a only (wgmma, TMA); the headers need CCCL's cuda::fast_mod_div, hence the CCCL wheel first on the
// include path (hw/CMakeLists.txt).
#include <cuda_fp8.h>

#include <flashinfer/attention/mla_hopper.cuh>
#include <flashinfer/attention/scheduler.cuh>

#include <string>

#include "dcpsim/error.h"
#include "flashinfer_kernels.h"

namespace dcpsim::hw::ops::flashinfer_kernels {
namespace {

template <typename KV>
using Params = flashinfer::MLAParams<__nv_bfloat16, KV, __nv_bfloat16, std::int32_t>;
constexpr int kMaxWorks = 16384;  // MLAPlan's fixed work-list capacity (max_total_num_works)
constexpr int kClusterTileQ = 128;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw RuntimeError(std::string("FlashInfer ") + what + ": " + cudaGetErrorString(e));
}

template <typename T>
T* at(void* base, std::int64_t offset) {
  return reinterpret_cast<T*>(static_cast<char*>(base) + offset);
}

}  // namespace

std::size_t mla_float_workspace_bytes(int device) {
  int sms = 0;
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "SM count");
  // partial O (bf16, 512 lanes) and partial LSE for 2 · clusters · cluster tile rows, plus alignment.
  return std::size_t(2) * sms * kClusterTileQ * (512 * 2 + 4) + 1024;
}

std::size_t mla_int_workspace_bytes() {
  return std::size_t(kMaxWorks) * 4 * 10 + std::size_t(1024) * 4 * 5 + 4096;
}

std::vector<std::int64_t> mla_plan(void* float_ws, std::size_t float_bytes, void* int_ws, void* int_host,
                                   std::size_t int_bytes, std::size_t& int_bytes_used, const int* qo_indptr,
                                   const int* kv_indptr, const int* kv_len, int batch, int heads) {
  flashinfer::MLAPlanInfo info;
  int_bytes_used = 0;
  try {
    check(flashinfer::MLAPlan<std::int32_t>(float_ws, float_bytes, int_ws, int_host, int_bytes, info,
                                            int_bytes_used, const_cast<int*>(qo_indptr),
                                            const_cast<int*>(kv_indptr), const_cast<int*>(kv_len), batch,
                                            heads, 512, false, nullptr),
          "MLAPlan");
  } catch (const flashinfer::Error& e) {
    throw RuntimeError(std::string("FlashInfer MLAPlan: ") + e.what());
  }
  return info.ToVector();
}

namespace {

template <typename KV>
void run_typed(const MlaRun& r, const flashinfer::MLAPlanInfo& info, void* float_ws, void* int_ws,
               cudaStream_t stream) {
  Params<KV> p{};
  p.q_nope = static_cast<__nv_bfloat16*>(const_cast<void*>(r.q_nope));
  p.q_pe = static_cast<__nv_bfloat16*>(const_cast<void*>(r.q_pe));
  p.ckv = static_cast<KV*>(const_cast<void*>(r.ckv));
  p.kpe = static_cast<KV*>(const_cast<void*>(r.kpe));
  p.ckv_scale = r.kv_scale;
  p.kpe_scale = r.kv_scale;
  p.q_indptr = at<int>(int_ws, info.q_indptr_offset);
  p.kv_indptr = at<int>(int_ws, info.kv_indptr_offset);
  p.partial_indptr = at<int>(int_ws, info.partial_indptr_offset);
  p.kv_indices = const_cast<int*>(r.kv_indices);
  p.q_len = at<int>(int_ws, info.q_len_offset);
  p.kv_len = at<int>(int_ws, info.kv_len_offset);
  p.q_start = at<int>(int_ws, info.q_start_offset);
  p.kv_start = at<int>(int_ws, info.kv_start_offset);
  p.kv_end = at<int>(int_ws, info.kv_end_offset);
  p.work_indptr = at<int>(int_ws, info.work_indptr_offset);
  p.merge_packed_offset_start = at<int>(int_ws, info.merge_packed_offset_start_offset);
  p.merge_packed_offset_end = at<int>(int_ws, info.merge_packed_offset_end_offset);
  p.merge_partial_packed_offset_start = at<int>(int_ws, info.merge_partial_packed_offset_start_offset);
  p.merge_partial_packed_offset_end = at<int>(int_ws, info.merge_partial_packed_offset_end_offset);
  p.merge_partial_stride = at<int>(int_ws, info.merge_partial_stride_offset);
  p.final_o = static_cast<__nv_bfloat16*>(r.o);
  p.final_lse = r.lse;
  p.partial_o = at<__nv_bfloat16>(float_ws, info.partial_o_offset);
  p.partial_lse = at<float>(float_ws, info.partial_lse_offset);
  p.num_heads = flashinfer::uint_fastdiv(r.heads);
  p.block_size = flashinfer::uint_fastdiv(r.page_tokens);
  p.q_nope_stride_n = r.q_stride_n;
  p.q_nope_stride_h = r.q_stride_h;
  p.q_pe_stride_n = r.q_stride_n;
  p.q_pe_stride_h = r.q_stride_h;
  p.ckv_stride_page = r.kv_stride_page;
  p.ckv_stride_n = r.kv_stride_n;
  p.kpe_stride_page = r.kv_stride_page;
  p.kpe_stride_n = r.kv_stride_n;
  p.o_stride_n = r.o_stride_n;
  p.o_stride_h = r.o_stride_h;
  p.sm_scale = r.sm_scale;
  p.return_lse_base_on_e = r.lse_base_e;
  check(flashinfer::mla::BatchMLAPageAttentionHopper<flashinfer::MaskMode::kNone, 512, 64>(
            p, static_cast<std::uint32_t>(info.num_blks_x), static_cast<std::uint32_t>(info.num_blks_y),
            stream),
        "BatchMLAPageAttentionHopper");
  check(cudaGetLastError(), "BatchMLAPageAttentionHopper launch");
}

}  // namespace

void mla_run(const MlaRun& r, const std::vector<std::int64_t>& plan, void* float_ws, void* int_ws,
             cudaStream_t stream) {
  flashinfer::MLAPlanInfo info;
  info.FromVector(plan);
  if (r.fp8) {
    run_typed<__nv_fp8_e4m3>(r, info, float_ws, int_ws, stream);
  } else {
    run_typed<__nv_bfloat16>(r, info, float_ws, int_ws, stream);
  }
}

}  // namespace dcpsim::hw::ops::flashinfer_kernels
