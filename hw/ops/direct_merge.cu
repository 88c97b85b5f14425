// Direct (one-shot) merge, writer side: rank r writes, for every owner n, its O for heads [n·H/N, (n+1)·H/N) and
// the matching LSEs straight into n's slot r of the current buffer (peer memory across devices; plain device
// memory in emulation), then the grid's last block raises flag r on every owner with a system-scope release store
// stamped with the epoch. Buffers alternate by epoch parity, so a fast rank's next step cannot overwrite a slot its
// owner is still reading (the owner's flag for the next step implies it finished this one).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda_check.h"
#include "dcpsim/error.h"
#include "device_common.cuh"
#include "ops.h"

namespace dcpsim::hw::ops {
namespace {

constexpr int kWarps = 8;

__device__ __forceinline__ void store_release(unsigned long long* p, unsigned long long v) {
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

template <typename T>
__global__ void __launch_bounds__(kWarps * 32) direct_write_kernel(DirectWriteArgs a) {
  const unsigned long long epoch = *a.epoch;
  const int parity = static_cast<int>(epoch & 1);
  const int hpb = a.heads / a.dcp;
  const int pair = blockIdx.x * kWarps + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (pair < a.rows * a.heads) {
    const int b = pair / a.heads, h = pair % a.heads;
    const int n = h / hpb, j = h % hpb;
    const float lse = b < a.valid_rows
                          ? a.lse[std::int64_t(b) * a.lse_row_stride + std::int64_t(h) * a.lse_head_stride]
                          : -INFINITY;
    const bool finite = isfinite(lse);
    const std::int64_t slot = (std::int64_t(a.rank) * a.rows + b) * hpb + j;
    T* dst = static_cast<T*>(a.dst_o[parity * a.dcp + n]) + slot * a.dim;
    const T* src = static_cast<const T*>(a.o) + std::int64_t(b) * a.o_row_stride + std::int64_t(h) * a.o_head_stride;
    for (int d = lane; d < a.dim; d += 32) dst[d] = finite ? src[d] : from_f32<T>(0.f);
    if (lane == 0) a.dst_lse[parity * a.dcp + n][slot] = lse;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence_system();  // this block's peer writes are visible before it is counted
    const unsigned long long done = atomicAdd(a.done_counter, 1ull) + 1ull;
    if (done == epoch * gridDim.x) {  // last block of this epoch: every block's writes are fenced
      __threadfence_system();
      for (int n = 0; n < a.dcp; ++n) store_release(a.dst_flags[parity * a.dcp + n] + a.rank, epoch);
    }
  }
}

__global__ void advance_epoch_kernel(unsigned long long* epoch) { *epoch += 1; }

}  // namespace

void launch_direct_write(const DirectWriteArgs& a, cudaStream_t stream) {
  if (a.dcp < 1 || a.heads % a.dcp != 0)
    throw InputError("direct merge: H=" + std::to_string(a.heads) + " is not divisible by N=" + std::to_string(a.dcp));
  const int blocks = std::max(1, ceil_div(std::int64_t(a.rows) * a.heads, kWarps));
  switch (a.elem) {
    case Elem::kF32: direct_write_kernel<float><<<blocks, kWarps * 32, 0, stream>>>(a); break;
    case Elem::kBF16: direct_write_kernel<__nv_bfloat16><<<blocks, kWarps * 32, 0, stream>>>(a); break;
    case Elem::kF16: direct_write_kernel<__half><<<blocks, kWarps * 32, 0, stream>>>(a); break;
  }
  DCPSIM_CUDA_LAUNCHED("direct_write_kernel");
}

void launch_advance_epoch(unsigned long long* epoch, cudaStream_t stream) {
  advance_epoch_kernel<<<1, 1, 0, stream>>>(epoch);
  DCPSIM_CUDA_LAUNCHED("advance_epoch_kernel");
}

}  // namespace dcpsim::hw::ops
