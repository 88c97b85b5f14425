// The arithmetic of the emulated reduce-scatter and all-reduce: out = Σ_k in_k in fp32, rounded once. (NCCL's
// ring rounds each partial sum to the element type on every hop; the emulation is the more accurate of the
// two, and both stay within SPEC's AG+RS tolerance.)
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda_check.h"
#include "dcpsim/error.h"
#include "device_common.cuh"
#include "elem_dispatch.cuh"
#include "ops.h"

namespace dcpsim::hw::ops {
namespace {

template <typename T>
__global__ void reduce_sum_kernel(ReduceArgs a) {
  pdl_begin();
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < a.count;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    float acc = 0.f;
    for (int k = 0; k < a.inputs; ++k) acc += to_f32(static_cast<const T*>(a.ptrs[k])[i]);
    static_cast<T*>(a.out)[i] = from_f32<T>(acc);
  }
}

}  // namespace

void launch_reduce_sum(const ReduceArgs& a, cudaStream_t stream) {
  if (a.count == 0) return;
  const int blocks = static_cast<int>(std::min<std::int64_t>(ceil_div(a.count, 256), 132 * 16));
  with_elem(a.elem, [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch_kernel("reduce_sum_kernel", reduce_sum_kernel<T>, blocks, 256, 0, stream, a);
  });
  DCPSIM_CUDA_LAUNCHED("reduce_sum_kernel");
}

}  // namespace dcpsim::hw::ops
