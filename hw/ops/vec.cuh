#pragma once
// Vector access and lane groups for the merge kernels (correction and combine).
//
// Vec<T, VEC>: VEC elements moved as one raw word (one 128-bit access when VEC·sizeof(T) = 16), converted
// lane by lane to fp32 and back with one rounding.
//
// Lane groups: a (row, head) pair is handled by a group of G = 2^shift consecutive threads of a block (G ≤
// 256; a group larger than a warp spans whole warps). Every lane of a group has the same pair, so a group is
// either wholly active or wholly idle, and the merge arithmetic of a pair (max, sum of exponentials over the
// N LSEs) is done once per group with xor shuffles over R ≤ min(G, 32) lanes instead of once per thread.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "device_common.cuh"

namespace dcpsim::hw::ops {

template <int BYTES>
struct RawOf;
template <>
struct RawOf<32> {
  struct alignas(16) type {
    uint4 lo, hi;
  };
};
template <>
struct RawOf<16> {
  using type = uint4;
};
template <>
struct RawOf<8> {
  using type = uint2;
};
template <>
struct RawOf<4> {
  using type = unsigned int;
};
template <>
struct RawOf<2> {
  using type = unsigned short;
};

template <typename T, int VEC>
struct Vec {
  using Raw = typename RawOf<sizeof(T) * VEC>::type;
  Raw raw;
  __device__ __forceinline__ void load(const T* p) { raw = *reinterpret_cast<const Raw*>(p); }
  __device__ __forceinline__ void store(T* p) const { *reinterpret_cast<Raw*>(p) = raw; }
  // Streaming forms (evict first): each element is touched once, so it should not displace anything in L2.
  __device__ __forceinline__ void load_stream(const T* p) {
    if constexpr (sizeof(Raw) == 16)
      raw = __ldcs(reinterpret_cast<const uint4*>(p));
    else
      load(p);
  }
  __device__ __forceinline__ void store_stream(T* p) const {
    if constexpr (sizeof(Raw) == 16)
      __stcs(reinterpret_cast<uint4*>(p), raw);
    else
      store(p);
  }
  template <bool STREAM>
  __device__ __forceinline__ void load_as(const T* p) {
    if constexpr (STREAM)
      load_stream(p);
    else
      load(p);
  }
  template <bool STREAM>
  __device__ __forceinline__ void store_as(T* p) const {
    if constexpr (STREAM)
      store_stream(p);
    else
      store(p);
  }
  // L2 only (bypassing L1): for data another grid or device wrote behind a flag.
  __device__ __forceinline__ void load_cg(const T* p) {
    if constexpr (sizeof(Raw) == 16)
      raw = __ldcg(reinterpret_cast<const uint4*>(p));
    else if constexpr (sizeof(Raw) == 8)
      raw = __ldcg(reinterpret_cast<const uint2*>(p));
    else if constexpr (sizeof(Raw) == 4)
      raw = __ldcg(reinterpret_cast<const unsigned int*>(p));
    else
      raw = __ldcg(reinterpret_cast<const unsigned short*>(p));
  }
  // All-zero bits when `zero` (so a NaN that must not be used becomes +0 before any arithmetic).
  __device__ __forceinline__ void zero_if(bool zero) {
    if (zero) raw = Raw{};
  }
  __device__ __forceinline__ float get(int j) const { return to_f32(reinterpret_cast<const T*>(&raw)[j]); }
  __device__ __forceinline__ void set(int j, float x) { reinterpret_cast<T*>(&raw)[j] = from_f32<T>(x); }
  // Two lanes at once (j even): the 16-bit types convert a pair with one instruction each way.
  __device__ __forceinline__ float2 get2(int j) const {
    if constexpr (sizeof(T) == 2 && VEC % 2 == 0) {
      if constexpr (std::is_same_v<T, __nv_bfloat16>)
        return __bfloat1622float2(reinterpret_cast<const __nv_bfloat162*>(&raw)[j / 2]);
      else
        return __half22float2(reinterpret_cast<const __half2*>(&raw)[j / 2]);
    } else {
      return make_float2(get(j), get(j + 1));
    }
  }
  __device__ __forceinline__ void set2(int j, float2 x) {
    if constexpr (sizeof(T) == 2 && VEC % 2 == 0) {
      if constexpr (std::is_same_v<T, __nv_bfloat16>)
        reinterpret_cast<__nv_bfloat162*>(&raw)[j / 2] = __float22bfloat162_rn(x);
      else
        reinterpret_cast<__half2*>(&raw)[j / 2] = __float22half2_rn(x);
    } else {
      set(j, x.x);
      set(j + 1, x.y);
    }
  }
};

// out = w · in lane by lane, in fp32, rounded once; w = 0 gives exact zeros without using `in` (an empty
// partial may hold NaN, and NaN · 0 is NaN).
template <typename T, int VEC>
__device__ __forceinline__ Vec<T, VEC> scaled(const Vec<T, VEC>& in, float w) {
  Vec<T, VEC> r;
  if constexpr (VEC % 2 == 0) {
#pragma unroll
    for (int j = 0; j < VEC; j += 2) {
      const float2 x = in.get2(j);
      r.set2(j, w == 0.f ? make_float2(0.f, 0.f) : make_float2(w * x.x, w * x.y));
    }
  } else {
#pragma unroll
    for (int j = 0; j < VEC; ++j) r.set(j, w == 0.f ? 0.f : w * in.get(j));
  }
  return r;
}

// How a launch maps threads to (row, head) pairs: blocks of `threads` threads, groups of 2^shift lanes per
// pair, heads_per_block = threads >> shift, and R = 2^reduce_shift lanes sharing one pair's LSE reduction.
struct GroupLaunch {
  int threads = 0, shift = 0, heads_per_block = 0, reduce_shift = 0;
};

inline int log2_ceil(std::int64_t x) {
  int s = 0;
  while ((std::int64_t{1} << s) < x) ++s;
  return s;
}

// Groups of the smallest power of two ≥ vecs/vpt lanes (≤ 256), blocks of up to 256 threads holding whole
// groups, and the reduction spread over min(G, 32, next power of two ≥ N) lanes.
inline GroupLaunch group_launch(int heads, int vecs, int vpt, int dcp) {
  GroupLaunch g;
  g.shift = log2_ceil((vecs + vpt - 1) / vpt);
  if (g.shift > 8) g.shift = 8;
  const int group = 1 << g.shift;
  const std::int64_t want = std::int64_t(heads) * group;
  g.threads = static_cast<int>(want >= 256 ? 256 : (want + 31) / 32 * 32);
  g.heads_per_block = g.threads >> g.shift;
  int r = log2_ceil(dcp);
  if (r > g.shift) r = g.shift;
  if (r > 5) r = 5;
  g.reduce_shift = r;
  return g;
}

// The shuffle mask of this thread's group (the whole warp when the group spans it).
__device__ __forceinline__ unsigned group_mask(int shift) {
  if (shift >= 5) return 0xffffffffu;
  const unsigned lanes = (1u << (1 << shift)) - 1u;
  return lanes << ((threadIdx.x & 31u) & ~((1u << shift) - 1u));
}

template <bool MAX>
__device__ __forceinline__ float butterfly(float x, int reduce_shift, unsigned mask) {
  for (int off = (1 << reduce_shift) >> 1; off > 0; off >>= 1) {
    const float y = __shfl_xor_sync(mask, x, off);
    x = MAX ? fmaxf(x, y) : x + y;
  }
  return x;
}

// SPEC steps 1-3 for one pair, shared by the R lanes of a reduction: lane r reads LSEs r, r + R, ... (`get`
// returns a raw LSE); every lane returns the same shift {M, Σ 2^((L_i − M)·k)} (xor butterflies are
// symmetric, so the sum is bitwise the same on every lane). m = −inf: every partial is empty.
// `own` receives the lane's first LSE (L_r, sanitised; −inf for r ≥ N).
template <typename Get>
__device__ __forceinline__ LseShift group_shift(int dcp, float k, int lane, int reduce_shift, unsigned mask,
                                                Get get, float& own) {
  const int r = lane & ((1 << reduce_shift) - 1), step = 1 << reduce_shift;
  const float x0 = r < dcp ? sanitize_lse(get(r)) : -INFINITY;
  own = x0;
  float m = x0;
  for (int i = r + step; i < dcp; i += step) m = fmaxf(m, sanitize_lse(get(i)));
  m = butterfly<true>(m, reduce_shift, mask);
  if (m == -INFINITY) return {m, 0.f};
  float s = exp2f((x0 - m) * k);
  for (int i = r + step; i < dcp; i += step) s += exp2f((sanitize_lse(get(i)) - m) * k);
  return {m, butterfly<false>(s, reduce_shift, mask)};
}

}  // namespace dcpsim::hw::ops
