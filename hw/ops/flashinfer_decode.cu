// FlashInfer's batch decode over a paged KV cache (flashinfer/attention/decode.cuh) and its planner
// (DecodePlan in scheduler.cuh), instantiated twice: bf16 Q/O with a bf16 or an fp8 e4m3 KV cache, int32
// indices, head dim 128, no positional encoding, the default variant (no mask, window, soft cap or ALiBi).
// The kernel dispatches the GQA group sizes FlashInfer instantiates (1, 2, 3, 4, 6, 8, 16) at run time; its
// LSE is base 2. FP8 values enter the dot products as they are (no scale in this kernel's parameters).
#include <cuda_fp8.h>

#include <flashinfer/attention/decode.cuh>
#include <flashinfer/attention/default_decode_params.cuh>
#include <flashinfer/attention/scheduler.cuh>
#include <flashinfer/attention/variants.cuh>

#include <string>

#include "dcpsim/error.h"
#include "flashinfer_kernels.h"

namespace dcpsim::hw::ops::flashinfer_kernels {
namespace {

using DType = __nv_bfloat16;
template <typename KV>
using Params = flashinfer::BatchDecodeParams<DType, KV, DType, std::int32_t>;
using Variant = flashinfer::DefaultAttention</*custom_mask=*/false, /*sliding_window=*/false,
                                             /*logits_soft_cap=*/false, /*alibi=*/false>;
constexpr std::uint32_t kHeadDim = 128;
constexpr auto kPos = flashinfer::PosEncodingMode::kNone;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw RuntimeError(std::string("FlashInfer ") + what + ": " + cudaGetErrorString(e));
}

template <typename T>
T* at(void* base, std::int64_t offset) {
  return reinterpret_cast<T*>(static_cast<char*>(base) + offset);
}

// Runs f(work_estimation_function) for the group size H / H_kv (FlashInfer's DISPATCH_GQA_GROUP_SIZE).
template <typename KV, typename F>
void with_estimator(int heads, int kv_heads, F&& f) {
  try {
    DISPATCH_GQA_GROUP_SIZE(static_cast<std::uint32_t>(heads / kv_heads), GROUP_SIZE, {
      f(flashinfer::BatchDecodeWithPagedKVCacheWorkEstimationDispatched<GROUP_SIZE, kHeadDim, kPos, Variant,
                                                                        Params<KV>>);
    });
  } catch (const flashinfer::Error& e) {
    throw InputError(std::string("FlashInfer decode: ") + e.what());
  }
}

// Calls f(type tag) with the KV element type.
template <typename F>
void with_kv(bool fp8, F&& f) {
  if (fp8) {
    f(__nv_fp8_e4m3{});
  } else {
    f(DType{});
  }
}

template <typename KV>
void run_typed(const DecodeRun& r, const flashinfer::DecodePlanInfo& info, void* float_ws, void* int_ws,
               cudaStream_t stream);

}  // namespace

void decode_workspace_bytes(std::size_t& float_bytes, std::size_t& int_bytes, const int* indptr_host,
                            int batch, int heads, int kv_heads, int page_tokens, bool fp8) {
  with_kv(fp8, [&](auto tag) {
    using KV = decltype(tag);
    with_estimator<KV>(heads, kv_heads, [&](auto estimate) {
      check(flashinfer::DecodePlanWorkspaceSize<kHeadDim, kPos, Variant, Params<KV>>(
                float_bytes, int_bytes, const_cast<int*>(indptr_host), batch, heads, page_tokens,
                /*enable_cuda_graph=*/false, nullptr, estimate),
            "DecodePlanWorkspaceSize");
    });
  });
}

std::vector<std::int64_t> decode_plan(void* float_ws, std::size_t float_bytes, void* int_ws, void* int_host,
                                      std::size_t int_bytes, const int* indptr_host, int batch, int heads,
                                      int kv_heads, int page_tokens, bool fp8, cudaStream_t stream) {
  flashinfer::DecodePlanInfo info;
  with_kv(fp8, [&](auto tag) {
    using KV = decltype(tag);
    with_estimator<KV>(heads, kv_heads, [&](auto estimate) {
      check(flashinfer::DecodePlan<kHeadDim, kPos, Variant, Params<KV>>(
                float_ws, float_bytes, int_ws, int_host, int_bytes, info, const_cast<int*>(indptr_host),
                batch, heads, page_tokens, /*enable_cuda_graph=*/false, stream, estimate),
            "DecodePlan");
    });
  });
  return info.ToVector();
}

void decode_run(const DecodeRun& r, const std::vector<std::int64_t>& plan, void* float_ws, void* int_ws,
                cudaStream_t stream) {
  flashinfer::DecodePlanInfo info;
  info.FromVector(plan);
  with_kv(r.fp8, [&](auto tag) { run_typed<decltype(tag)>(r, info, float_ws, int_ws, stream); });
}

namespace {

template <typename KV>
void run_typed(const DecodeRun& r, const flashinfer::DecodePlanInfo& info, void* float_ws, void* int_ws,
               cudaStream_t stream) {
  const std::int64_t strides[3] = {r.stride_page, r.stride_n, r.stride_h};
  flashinfer::paged_kv_t<KV, std::int32_t> kv(
      r.kv_heads, r.page_tokens, kHeadDim, r.batch, flashinfer::QKVLayout::kNHD,
      static_cast<KV*>(const_cast<void*>(r.k)), static_cast<KV*>(const_cast<void*>(r.v)), strides,
      const_cast<int*>(r.indices), const_cast<int*>(r.indptr), const_cast<int*>(r.last_page_len));
  Params<KV> p;
  p.q = static_cast<DType*>(const_cast<void*>(r.q));
  p.paged_kv = kv;
  p.o = static_cast<DType*>(r.o);
  p.lse = r.lse;
  p.num_qo_heads = r.heads;
  p.q_stride_n = r.q_stride_n;
  p.q_stride_h = r.q_stride_h;
  p.window_left = -1;
  p.logits_soft_cap = 0.f;
  p.sm_scale = r.sm_scale;
  p.rope_rcp_scale = 1.f;
  p.rope_rcp_theta = 1.f / 1e4f;
  p.request_indices = at<int>(int_ws, info.request_indices_offset);
  p.kv_tile_indices = at<int>(int_ws, info.kv_tile_indices_offset);
  p.o_indptr = at<int>(int_ws, info.o_indptr_offset);
  p.kv_chunk_size_ptr = at<int>(int_ws, info.kv_chunk_size_ptr_offset);
  p.padded_batch_size = static_cast<std::uint32_t>(info.padded_batch_size);
  DType* tmp_v = nullptr;
  float* tmp_s = nullptr;
  if (info.split_kv) {
    tmp_v = at<DType>(float_ws, info.v_offset);
    tmp_s = at<float>(float_ws, info.s_offset);
  }
  check(flashinfer::BatchDecodeWithPagedKVCacheDispatched<kHeadDim, kPos, Variant>(p, tmp_v, tmp_s,
                                                                                   /*enable_pdl=*/false,
                                                                                   stream),
        "BatchDecodeWithPagedKVCacheDispatched");
  check(cudaGetLastError(), "BatchDecodeWithPagedKVCacheDispatched launch");
}

}  // namespace

}  // namespace dcpsim::hw::ops::flashinfer_kernels
