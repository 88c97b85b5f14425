#pragma once
// Shared by the combine kernels (a2a_combine.cu, a2a_combine_fast.cu): the direct merge's bounded flag wait
// and the packed all-to-all's LSE lanes.
#include "device_common.cuh"
#include "ops.h"

namespace dcpsim::hw::ops {

__device__ __forceinline__ unsigned long long load_acquire(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

// Thread 0 waits for every source's flag of this epoch; false (and *error set) after the timeout. Every
// thread of the block must call it (it ends with a barrier).
__device__ __forceinline__ bool wait_flags(const CombineArgs& a, const unsigned long long* flags,
                                           unsigned long long epoch) {
  __shared__ int ok;
  if (threadIdx.x == 0) {
    ok = 1;
    const unsigned long long start = global_timer();
    for (int s = 0; s < a.dcp && ok; ++s) {
      while (load_acquire(flags + s) != epoch) {
        if (static_cast<long long>(global_timer() - start) > a.timeout_ns) {
          atomicCAS(a.error, 0, 1 + s);
          ok = 0;
          break;
        }
        __nanosleep(100);
      }
    }
  }
  __syncthreads();
  return ok != 0;
}

// The fp32 LSE a packed row carries after its D lanes (two 16-bit lanes, low half first; one lane for fp32).
template <typename TIn>
__device__ __forceinline__ float packed_lse(const TIn* row, int dim) {
  if constexpr (sizeof(TIn) == 4) {
    return __ldcg(reinterpret_cast<const float*>(row) + dim);
  } else {
    const unsigned short* u = reinterpret_cast<const unsigned short*>(row);
    const unsigned bits = unsigned(__ldcg(u + dim)) | (unsigned(__ldcg(u + dim + 1)) << 16);
    return __uint_as_float(bits);
  }
}

}  // namespace dcpsim::hw::ops
