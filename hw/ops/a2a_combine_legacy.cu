// The N-way combine kernel dcpsim used until 2026-12 (kept as the baseline of the benchmark sweep, `--variant
// legacy`, and for calls whose output type differs from the input's): merged LSE and weights per (row, head)
// in shared memory, then fp32 accumulation over the N partials one element per thread, one rounding to the
// output type. A partial whose weight is 0 is never read.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "combine_common.cuh"
#include "cuda_check.h"
#include "device_common.cuh"
#include "elem_dispatch.cuh"
#include "ops.h"

namespace dcpsim::hw::ops {
namespace {

constexpr int kThreads = 128;

template <typename TIn, typename TOut>
__global__ void __launch_bounds__(kThreads) combine_kernel(CombineArgs a) {
  pdl_begin();
  extern __shared__ float w[];  // [N]
  __shared__ LseShift shift;
  const int j = blockIdx.x, b = blockIdx.y;
  const TIn* o = static_cast<const TIn*>(a.o);
  const float* lse = a.lse;
  if (a.flags != nullptr) {
    const unsigned long long epoch = *a.epoch;
    const int parity = static_cast<int>(epoch & 1);
    o += parity * a.parity_o_stride;
    lse += parity * a.parity_lse_stride;
    if (!wait_flags(a, a.flags + parity * a.parity_flag_stride, epoch)) return;
  }
  const std::int64_t pair = std::int64_t(b) * a.heads + j;
  auto lse_of = [&](int s) {
    return lse != nullptr ? __ldcg(lse + s * a.lse_src_stride + pair)
                          : packed_lse(o + s * a.src_stride + pair * a.o_lanes, a.dim);
  };
  const float k = a.base2 ? 1.f : kLog2e;
  if (threadIdx.x == 0) {
    shift = b < a.valid_rows ? lse_shift(a.dcp, k, lse_of) : LseShift{-INFINITY, 0.f};
  }
  __syncthreads();
  const LseShift sh = shift;
  for (int s = threadIdx.x; s < a.dcp; s += kThreads) w[s] = merge_weight(lse_of(s), k, sh);
  __syncthreads();
  TOut* dst =
      static_cast<TOut*>(a.dst) + std::int64_t(b) * a.dst_row_stride + std::int64_t(j) * a.dst_head_stride;
  for (int d = threadIdx.x; d < a.dim; d += kThreads) {
    float acc = 0.f;
    for (int s = 0; s < a.dcp; ++s)
      if (w[s] != 0.f) acc += w[s] * to_f32(__ldcg(o + s * a.src_stride + pair * a.o_lanes + d));
    dst[d] = from_f32<TOut>(acc);
  }
  if (threadIdx.x == 0 && a.merged_lse.ptr != nullptr)
    a.merged_lse.ptr[std::int64_t(b) * a.merged_lse.row_stride + std::int64_t(j) * a.merged_lse.head_stride] =
        merged_lse(sh, k);
  row_unit_done(a.stamps, b, static_cast<unsigned>(a.heads));
}

template <typename TIn>
void launch_out(const CombineArgs& a, cudaStream_t stream) {
  const dim3 grid(a.heads, a.rows);
  // Padded to whole 32-byte groups: the unrolled sum may load the weights several at a time.
  const std::size_t smem = std::size_t(a.dcp + 7) / 8 * 8 * sizeof(float);
  switch (a.out) {
    case Elem::kF32:
      launch_kernel("combine_kernel", combine_kernel<TIn, float>, grid, kThreads, smem, stream, a);
      break;
    case Elem::kBF16:
      launch_kernel("combine_kernel", combine_kernel<TIn, __nv_bfloat16>, grid, kThreads, smem, stream, a);
      break;
    case Elem::kF16:
      launch_kernel("combine_kernel", combine_kernel<TIn, __half>, grid, kThreads, smem, stream, a);
      break;
  }
  DCPSIM_CUDA_LAUNCHED("combine_kernel");
}

}  // namespace

void launch_combine_legacy(const CombineArgs& a, cudaStream_t stream) {
  with_elem(a.elem, [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch_out<T>(a, stream);
  });
}

}  // namespace dcpsim::hw::ops
