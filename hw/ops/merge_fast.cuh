#pragma once
// The short-path kernels' helpers (lse_correct_fast.cu, a2a_combine_fast.cu). At decode sizes a merge kernel
// runs for about as long as one thread's chain of dependent instructions, so these kernels keep that chain
// short: the number of ranks rounded up to a power of two (NP ≤ 8) is a template parameter (every LSE load
// issued at once, every loop unrolled, no run-time loop bounds or divergent-shuffle checks), 16-byte words
// are unpacked and packed with one instruction per element pair, offsets are 32-bit, and the weights are
// normalised with one reciprocal; exponentials and the reciprocal are one instruction each. The arithmetic is
// SPEC's (max-shifted, normalised weights, sanitised LSEs, zero weight never multiplied); a weight may differ
// by an ulp of fp32, and one below 2^-126 is 0.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "device_common.cuh"

namespace dcpsim::hw::ops::fast {

// 2^x in one instruction, results below 2^-126 flushed to zero (exp2f adds a range fix-up for those: four
// more dependent instructions on the critical path). A weight that small is far below any output's rounding;
// 2^-inf = 0 as SPEC's empty partials need.
__device__ __forceinline__ float exp2_ftz(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// 1/x in one instruction (relative error within an ulp of fp32; x here is a sum of weights, at least 1).
__device__ __forceinline__ float rcp_ftz(float x) {
  float y;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// Two 16-bit lanes of a 32-bit word as floats (lo = the lower address).
template <typename T>
__device__ __forceinline__ float2 unpack2(unsigned w) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return make_float2(__uint_as_float(w << 16), __uint_as_float(w & 0xffff0000u));
  } else {
    __half2 h;
    static_assert(sizeof(h) == sizeof(w));
    memcpy(&h, &w, sizeof(w));
    return __half22float2(h);
  }
}

template <typename T>
__device__ __forceinline__ unsigned pack2(float lo, float hi) {
  unsigned w;
  if constexpr (std::is_same_v<T, __nv_bfloat16>)
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(w) : "f"(hi), "f"(lo));
  else
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(w) : "f"(hi), "f"(lo));
  return w;
}

__device__ __forceinline__ unsigned word(const uint4& v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

// w · v lane by lane in fp32, rounded once; w = 0 gives zeros without touching v.
template <typename T>
__device__ __forceinline__ uint4 scale(const uint4& v, float w) {
  uint4 r;
  unsigned* out = &r.x;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 x = unpack2<T>(word(v, i));
    out[i] = w == 0.f ? 0u : pack2<T>(w * x.x, w * x.y);
  }
  return r;
}

template <bool STREAM>
__device__ __forceinline__ uint4 load16(const uint4* p) {
  if constexpr (STREAM)
    return __ldcs(p);
  else
    return *p;
}
template <bool STREAM>
__device__ __forceinline__ void store16(uint4* p, const uint4& v) {
  if constexpr (STREAM)
    __stcs(p, v);
  else
    *p = v;
}

// SPEC steps 1-3 over NP ≥ N LSEs held by this lane (x[i] = −inf for i ≥ N): M and Σ 2^((L_i − M)·k).
template <int NP>
__device__ __forceinline__ LseShift shift_of(const float (&x)[NP], float k) {
  float m = x[0];
#pragma unroll
  for (int i = 1; i < NP; ++i) m = fmaxf(m, x[i]);
  if (m == -INFINITY) return {m, 0.f};
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < NP; ++i) s += exp2_ftz((x[i] - m) * k);
  return {m, s};
}

// Loads LSE i of a pair for i < NP (index clamped to N − 1 so every load is in bounds and all issue together;
// masked to −inf past N), sanitised.
template <int NP>
__device__ __forceinline__ void load_lses(float (&x)[NP], const float* l, int stride, int dcp) {
#pragma unroll
  for (int i = 0; i < NP; ++i) {
    const float v = sanitize_lse(l[std::int64_t(min(i, dcp - 1)) * stride]);
    x[i] = i < dcp ? v : -INFINITY;
  }
}

}  // namespace dcpsim::hw::ops::fast
