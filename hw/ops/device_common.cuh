#pragma once
// Device helpers shared by the kernels: element conversions, the SPEC merge arithmetic in the log2 domain,
// %globaltimer stamps and the per-row completion counter.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstddef>
#include <cstdint>
#include <utility>

#include "ops.h"

namespace dcpsim::hw::ops {

[[noreturn]] void launch_failed(const char* name, cudaError_t e);  // util.cu

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

template <Elem E>
struct ElemT;
template <>
struct ElemT<Elem::kF32> {
  using type = float;
};
template <>
struct ElemT<Elem::kBF16> {
  using type = __nv_bfloat16;
};
template <>
struct ElemT<Elem::kF16> {
  using type = __half;
};

__device__ __forceinline__ float to_f32(float x) {
  return x;
}
__device__ __forceinline__ float to_f32(__nv_bfloat16 x) {
  return __bfloat162float(x);
}
__device__ __forceinline__ float to_f32(__half x) {
  return __half2float(x);
}

template <typename T>
__device__ __forceinline__ T from_f32(float x);
template <>
__device__ __forceinline__ float from_f32<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}
template <>
__device__ __forceinline__ __half from_f32<__half>(float x) {
  return __float2half_rn(x);
}

// SPEC step 1: NaN and +inf mean "no valid partial".
__device__ __forceinline__ float sanitize_lse(float l) {
  return (l != l || l == INFINITY) ? -INFINITY : l;
}

// SPEC steps 1-3 over n LSEs given by get(i) (k = log2 e for natural-log LSEs, 1 for base 2): M = max L_i in
// the LSE's own units and sum = Σ 2^((L_i − M)·k). The shift comes before the scaling, so no finite L
// overflows, and the weights below are normalised by this sum rather than taken as 2^((L_i − L)·k): L rounds
// (at 1e8 in fp32 L = M and every weight would be 1), the differences L_i − M do not. m = −inf: all empty.
struct LseShift {
  float m;
  float sum;
};

template <typename Get>
__device__ __forceinline__ LseShift lse_shift(int n, float k, Get get) {
  float m = -INFINITY;
  for (int i = 0; i < n; ++i) m = fmaxf(m, sanitize_lse(get(i)));
  if (m == -INFINITY) return {m, 0.f};
  float s = 0.f;
  for (int i = 0; i < n; ++i) s += exp2f((sanitize_lse(get(i)) - m) * k);
  return {m, s};
}

// The merged LSE in the partials' base; −inf when every partial is empty.
__device__ __forceinline__ float merged_lse(LseShift s, float k) {
  return s.m == -INFINITY ? -INFINITY : s.m + log2f(s.sum) / k;
}

// SPEC step 4: w_i; exactly 0 for empty partials and when everything is empty (never NaN).
__device__ __forceinline__ float merge_weight(float lse_i, float k, LseShift s) {
  if (s.m == -INFINITY) return 0.f;
  const float w = exp2f((sanitize_lse(lse_i) - s.m) * k) / s.sum;
  return w == w ? w : 0.f;
}

// First statement of every kernel a step launches: under PDL, wait until the predecessor grid has finished
// and its writes are visible, then let the successor be scheduled (it waits in turn). Without PDL both are
// no-ops.
__device__ __forceinline__ void pdl_begin() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// What a launch may ask for beyond its grid: the device's greatest priority (kept by a captured graph's
// kernel node; the runner instantiates graphs with node priorities), and an event that triggers once every
// block of the grid has begun (cudaLaunchAttributeLaunchCompletionEvent; created with
// cudaEventDisableTiming). Work behind that event may run beside the grid and must not read what the grid
// writes without a flag of its own; the driver treats the event as best effort (it may trigger only at the
// grid's end, or let higher-priority work start first), so nothing may depend on it for progress.
struct LaunchExtras {
  bool high_priority = false;
  cudaEvent_t blocks_started = nullptr;
};

// Launches `kernel` on `stream`, with the programmatic-serialization attribute when PDL is on for this
// thread (see PdlScope) and the extras asked for; throws RuntimeError naming `name` when the launch fails.
template <typename... Params, typename... Args>
void launch_kernel_with(const char* name, void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t smem,
                        cudaStream_t stream, const LaunchExtras& extras, Args&&... args) {
  cudaLaunchAttribute attr[3];
  unsigned n = 0;
  if (pdl_enabled()) {
    attr[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[n].val.programmaticStreamSerializationAllowed = 1;
    ++n;
  }
  if (extras.high_priority) {
    int least = 0, greatest = 0;
    const cudaError_t e = cudaDeviceGetStreamPriorityRange(&least, &greatest);
    if (e != cudaSuccess) launch_failed(name, e);
    attr[n].id = cudaLaunchAttributePriority;
    attr[n].val.priority = greatest;
    ++n;
  }
  if (extras.blocks_started != nullptr) {
    attr[n].id = cudaLaunchAttributeLaunchCompletionEvent;
    attr[n].val.launchCompletionEvent.event = extras.blocks_started;
    attr[n].val.launchCompletionEvent.flags = 0;
    ++n;
  }
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cfg.attrs = attr;
  cfg.numAttrs = n;
  const cudaError_t e = cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);
  if (e != cudaSuccess) launch_failed(name, e);
}

template <typename... Params, typename... Args>
void launch_kernel(const char* name, void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t smem,
                   cudaStream_t stream, Args&&... args) {
  launch_kernel_with(name, kernel, grid, block, smem, stream, LaunchExtras{}, std::forward<Args>(args)...);
}

__device__ __forceinline__ unsigned long long global_timer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Called by every thread of a block after its writes for row b: the block that completes the row (the
// `units`-th to arrive) stamps it.
__device__ __forceinline__ void row_unit_done(const RowStamps& s, int b, unsigned units) {
  if (s.stamps == nullptr) return;
  __syncthreads();
  if (threadIdx.x == 0 && threadIdx.y == 0) {
    __threadfence();
    const unsigned done = atomicAdd(&s.counters[b], 1u) + 1u;
    if (done == units) s.stamps[b] = global_timer();
  }
}

// Raw 16-bit patterns of a float's bits, for the packed A2A lanes.
__device__ __forceinline__ unsigned short lse_lo(float l) {
  return static_cast<unsigned short>(__float_as_uint(l) & 0xffffu);
}
__device__ __forceinline__ unsigned short lse_hi(float l) {
  return static_cast<unsigned short>(__float_as_uint(l) >> 16);
}

inline int ceil_div(std::int64_t a, std::int64_t b) {
  return static_cast<int>((a + b - 1) / b);
}

}  // namespace dcpsim::hw::ops
