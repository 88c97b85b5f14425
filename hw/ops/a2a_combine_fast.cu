// The combine's short-path kernels (variants f1, f2; merge_fast.cuh says why they are shaped so): 16-bit
// partials and output of the same type on 16-byte rows with the LSE in its own slots (the direct merge's
// layout, flags included), N ≤ 8, at most 65535 rows, no row stamps. A group of lanes owns a (row, head)
// pair; every lane issues the loads of its VPT vectors of all N sources, then the N LSEs, forms the N weights
// itself (one reciprocal of the max-shifted sum) and accumulates in fp32. A source whose weight is 0 has its
// words replaced by zeros before any arithmetic. Other calls go to the lane-group kernels (a2a_combine.cu).
// The packed all-to-all's rows take the same kernel on 32-bit words (variants p4, p8; below).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "combine_common.cuh"
#include "cuda_check.h"
#include "device_common.cuh"
#include "elem_dispatch.cuh"
#include "merge_fast.cuh"
#include "ops.h"
#include "vec.cuh"

namespace dcpsim::hw::ops {
namespace {

constexpr int kThreads = 256;

// Offsets of O in 16-byte words, of LSEs in floats, 32-bit (the launch checks they fit).
struct FastCombineParams {
  const uint4* o;
  const float* lse;
  uint4* dst;
  float* merged;  // may be null
  const unsigned long long* flags;
  const unsigned long long* epoch;
  int* error;
  long long timeout_ns;
  int src_stride, pair_words, lse_src_stride, dst_row, dst_head, merged_row, merged_head;
  int parity_o, parity_lse, parity_flag;
  int dcp, valid_rows, heads, vecs, shift, heads_per_block;
  float k;
  int pdl;
};

// As wait_flags (combine_common.cuh), on the compact parameters.
__device__ __forceinline__ bool wait_all(const FastCombineParams& p, const unsigned long long* flags,
                                         unsigned long long epoch) {
  __shared__ int ok;
  if (threadIdx.x == 0) {
    ok = 1;
    const unsigned long long start = global_timer();
    for (int s = 0; s < p.dcp && ok; ++s) {
      while (load_acquire(flags + s) != epoch) {
        if (static_cast<long long>(global_timer() - start) > p.timeout_ns) {
          atomicCAS(p.error, 0, 1 + s);
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

template <typename T>
__device__ __forceinline__ void accumulate(float (&acc)[8], const uint4& v, float w) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const unsigned x = w == 0.f ? 0u : fast::word(v, i);  // a zero weight never multiplies a value
    const float2 f = fast::unpack2<T>(x);
    acc[2 * i] = fmaf(w, f.x, acc[2 * i]);
    acc[2 * i + 1] = fmaf(w, f.y, acc[2 * i + 1]);
  }
}

template <typename T, int VPT, int NP>
__global__ void __launch_bounds__(kThreads) combine_fast_kernel(FastCombineParams p) {
  if (p.pdl) pdl_begin();
  const uint4* o = p.o;
  const float* lse = p.lse;
  if (p.flags != nullptr) {
    const unsigned long long epoch = *p.epoch;
    const int parity = static_cast<int>(epoch & 1);
    o += parity * p.parity_o;
    lse += parity * p.parity_lse;
    if (!wait_all(p, p.flags + parity * p.parity_flag, epoch)) return;
  }
  const int group = 1 << p.shift, lane = threadIdx.x & (group - 1), b = blockIdx.y;
  const int j = blockIdx.x * p.heads_per_block + (threadIdx.x >> p.shift);
  if (j >= p.heads) return;  // whole groups; nothing below synchronises
  const int pair = b * p.heads + j;
  const uint4* src = o + (pair * p.pair_words + lane);
  uint4 v[NP][VPT];
#pragma unroll
  for (int s = 0; s < NP; ++s)
#pragma unroll
    for (int u = 0; u < VPT; ++u)
      if (s < p.dcp && lane + u * group < p.vecs) v[s][u] = __ldcg(src + s * p.src_stride + u * group);
  float x[NP];
#pragma unroll
  for (int s = 0; s < NP; ++s) {
    const float l = sanitize_lse(__ldcg(lse + min(s, p.dcp - 1) * p.lse_src_stride + pair));
    x[s] = s < p.dcp ? l : -INFINITY;
  }
  LseShift sh{-INFINITY, 0.f};
  if (b < p.valid_rows) sh = fast::shift_of<NP>(x, p.k);
  const float inv = sh.m == -INFINITY ? 0.f : fast::rcp_ftz(sh.sum);
  float acc[VPT][8];
#pragma unroll
  for (int u = 0; u < VPT; ++u)
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[u][e] = 0.f;
#pragma unroll
  for (int s = 0; s < NP; ++s) {
    if (s >= p.dcp) break;
    float w = sh.m == -INFINITY ? 0.f : fast::exp2_ftz((x[s] - sh.m) * p.k) * inv;
    w = w == w ? w : 0.f;
#pragma unroll
    for (int u = 0; u < VPT; ++u) accumulate<T>(acc[u], v[s][u], w);
  }
  uint4* dst = p.dst + (b * p.dst_row + j * p.dst_head + lane);
#pragma unroll
  for (int u = 0; u < VPT; ++u) {
    if (lane + u * group >= p.vecs) continue;
    const uint4 r = make_uint4(fast::pack2<T>(acc[u][0], acc[u][1]), fast::pack2<T>(acc[u][2], acc[u][3]),
                               fast::pack2<T>(acc[u][4], acc[u][5]), fast::pack2<T>(acc[u][6], acc[u][7]));
    dst[u * group] = r;
  }
  if (lane == 0 && p.merged != nullptr) p.merged[b * p.merged_row + j * p.merged_head] = merged_lse(sh, p.k);
}

// The one place the short paths' template arguments are chosen: f(T, VPT, NP) as tags for the 16-bit type
// `e`, `vpt` (V0 or V1) and the smallest NP in {2, 4, 8} that holds N.
template <int V0, int V1, typename F>
void with_short_path_args(Elem e, int vpt, int dcp, F&& f) {
  auto by_np = [&](auto t, auto v) {
    if (dcp <= 2)
      f(t, v, std::integral_constant<int, 2>{});
    else if (dcp <= 4)
      f(t, v, std::integral_constant<int, 4>{});
    else
      f(t, v, std::integral_constant<int, 8>{});
  };
  auto by_vpt = [&](auto t) {
    if (vpt == V0)
      by_np(t, std::integral_constant<int, V0>{});
    else
      by_np(t, std::integral_constant<int, V1>{});
  };
  if (e == Elem::kBF16)
    by_vpt(ElemTag<__nv_bfloat16>{});
  else
    by_vpt(ElemTag<__half>{});
}

bool fits(std::int64_t x) {
  return x >= 0 && x < (std::int64_t{1} << 31);
}

// The packed all-to-all's rows ([N][B][H/N][D + 2] 16-bit lanes, SPEC "Packed A2A layout") start on 4-byte
// boundaries only, so the packed short path ("p4", "p8") moves 32-bit words (two lanes): the same kernel
// shape as above on words, the LSE read as the word D/2 of each row (its low half is lane D, the low bits of
// the fp32 pattern). Offsets in words, 32-bit. Row stamps supported: every thread reaches the row's barrier.
struct PackedCombineParams {
  const unsigned* o;
  unsigned* dst;
  float* merged;  // may be null
  RowStamps stamps;
  int src_stride, row_words, dst_row, dst_head, merged_row, merged_head;
  int dcp, valid_rows, heads, words, shift, heads_per_block;
  float k;
  int pdl;
};

template <typename T, int VPT, int NP>
__global__ void __launch_bounds__(kThreads) combine_packed_kernel(PackedCombineParams p) {
  if (p.pdl) pdl_begin();
  const int group = 1 << p.shift, lane = threadIdx.x & (group - 1), b = blockIdx.y;
  const int j = blockIdx.x * p.heads_per_block + (threadIdx.x >> p.shift);
  if (j < p.heads) {
    const unsigned* src = p.o + (b * p.heads + j) * p.row_words;
    unsigned v[NP][VPT];
#pragma unroll
    for (int s = 0; s < NP; ++s)
#pragma unroll
      for (int u = 0; u < VPT; ++u)
        v[s][u] =
            s < p.dcp && lane + u * group < p.words ? __ldcg(src + s * p.src_stride + lane + u * group) : 0u;
    float x[NP];
#pragma unroll
    for (int s = 0; s < NP; ++s) {
      const float l = sanitize_lse(__uint_as_float(__ldcg(src + min(s, p.dcp - 1) * p.src_stride + p.words)));
      x[s] = s < p.dcp ? l : -INFINITY;
    }
    LseShift sh{-INFINITY, 0.f};
    if (b < p.valid_rows) sh = fast::shift_of<NP>(x, p.k);
    const float inv = sh.m == -INFINITY ? 0.f : fast::rcp_ftz(sh.sum);
    float acc[VPT][2];
#pragma unroll
    for (int u = 0; u < VPT; ++u) acc[u][0] = acc[u][1] = 0.f;
#pragma unroll
    for (int s = 0; s < NP; ++s) {
      if (s >= p.dcp) break;
      float w = sh.m == -INFINITY ? 0.f : fast::exp2_ftz((x[s] - sh.m) * p.k) * inv;
      w = w == w ? w : 0.f;
#pragma unroll
      for (int u = 0; u < VPT; ++u) {
        const float2 f = fast::unpack2<T>(w == 0.f ? 0u : v[s][u]);  // a zero weight never multiplies a value
        acc[u][0] = fmaf(w, f.x, acc[u][0]);
        acc[u][1] = fmaf(w, f.y, acc[u][1]);
      }
    }
    unsigned* dst = p.dst + (b * p.dst_row + j * p.dst_head + lane);
#pragma unroll
    for (int u = 0; u < VPT; ++u)
      if (lane + u * group < p.words) dst[u * group] = fast::pack2<T>(acc[u][0], acc[u][1]);
    if (lane == 0 && p.merged != nullptr)
      p.merged[b * p.merged_row + j * p.merged_head] = merged_lse(sh, p.k);
  }
  row_unit_done(p.stamps, b, gridDim.x);
}

}  // namespace

bool launch_combine_packed(const CombineArgs& a, int vpt, cudaStream_t stream) {
  if (a.elem == Elem::kF32 || a.elem != a.out || a.lse != nullptr || a.flags != nullptr || a.dcp > 8 ||
      a.rows > 65535 || a.dim % 2 != 0 || (vpt != 4 && vpt != 8))
    return false;
  const std::int64_t strides[] = {a.o_lanes, a.src_stride, a.dst_row_stride, a.dst_head_stride};
  if (reinterpret_cast<std::uintptr_t>(a.o) % 4 != 0 || reinterpret_cast<std::uintptr_t>(a.dst) % 4 != 0)
    return false;
  for (auto s : strides)
    if (s % 2 != 0) return false;
  const int words = a.dim / 2;
  const GroupLaunch g = group_launch(a.heads, words, vpt, a.dcp);
  if ((std::int64_t{1} << g.shift) * vpt < words) return false;  // would need a chunk loop
  const std::int64_t pairs = std::int64_t(a.rows) * a.heads;
  if (!fits((a.dcp * a.src_stride + pairs * a.o_lanes) / 2) ||
      !fits((a.rows * a.dst_row_stride + a.heads * a.dst_head_stride) / 2) ||
      !fits(a.rows * a.merged_lse.row_stride + a.heads * a.merged_lse.head_stride))
    return false;
  PackedCombineParams p;
  p.o = static_cast<const unsigned*>(a.o);
  p.dst = static_cast<unsigned*>(a.dst);
  p.merged = a.merged_lse.ptr;
  p.stamps = a.stamps;
  p.src_stride = int(a.src_stride / 2);
  p.row_words = a.o_lanes / 2;
  p.dst_row = int(a.dst_row_stride / 2);
  p.dst_head = int(a.dst_head_stride / 2);
  p.merged_row = int(a.merged_lse.row_stride);
  p.merged_head = int(a.merged_lse.head_stride);
  p.dcp = a.dcp;
  p.valid_rows = a.valid_rows;
  p.heads = a.heads;
  p.words = words;
  p.shift = g.shift;
  p.heads_per_block = g.heads_per_block;
  p.k = a.base2 ? 1.f : kLog2e;
  p.pdl = pdl_enabled() ? 1 : 0;
  const dim3 grid(ceil_div(a.heads, g.heads_per_block), a.rows);
  with_short_path_args<4, 8>(a.elem, vpt, a.dcp, [&](auto t, auto v, auto np) {
    launch_kernel("combine_packed_kernel",
                  combine_packed_kernel<typename decltype(t)::type, decltype(v)::value, decltype(np)::value>,
                  grid, g.threads, 0, stream, p);
  });
  DCPSIM_CUDA_LAUNCHED("combine_packed_kernel");
  return true;
}

bool launch_combine_fast(const CombineArgs& a, int vpt, cudaStream_t stream) {
  if (a.elem == Elem::kF32 || a.elem != a.out || a.lse == nullptr || a.dcp > 8 || a.rows > 65535 ||
      a.stamps.stamps != nullptr)
    return false;
  constexpr std::int64_t kVec = 8;
  const std::int64_t strides[] = {a.o_lanes, a.src_stride,     a.parity_o_stride,
                                  a.dim,     a.dst_row_stride, a.dst_head_stride};
  if (reinterpret_cast<std::uintptr_t>(a.o) % 16 != 0 || reinterpret_cast<std::uintptr_t>(a.dst) % 16 != 0)
    return false;
  for (auto s : strides)
    if (s % kVec != 0) return false;
  const GroupLaunch g = group_launch(a.heads, a.dim / int(kVec), vpt, a.dcp);
  const std::int64_t pairs = std::int64_t(a.rows) * a.heads;
  if ((std::int64_t{1} << g.shift) * vpt < a.dim / kVec) return false;  // would need a chunk loop
  if (!fits((2 * a.parity_o_stride + a.dcp * a.src_stride + pairs * a.o_lanes) / kVec) ||
      !fits(2 * a.parity_lse_stride + a.dcp * a.lse_src_stride + pairs) ||
      !fits((a.rows * a.dst_row_stride + a.heads * a.dst_head_stride) / kVec) ||
      !fits(a.rows * a.merged_lse.row_stride + a.heads * a.merged_lse.head_stride) ||
      !fits(2 * a.parity_flag_stride))
    return false;
  FastCombineParams p;
  p.o = static_cast<const uint4*>(a.o);
  p.lse = a.lse;
  p.dst = static_cast<uint4*>(a.dst);
  p.merged = a.merged_lse.ptr;
  p.flags = a.flags;
  p.epoch = a.epoch;
  p.error = a.error;
  p.timeout_ns = a.timeout_ns;
  p.src_stride = int(a.src_stride / kVec);
  p.pair_words = int(a.o_lanes / kVec);
  p.lse_src_stride = int(a.lse_src_stride);
  p.dst_row = int(a.dst_row_stride / kVec);
  p.dst_head = int(a.dst_head_stride / kVec);
  p.merged_row = int(a.merged_lse.row_stride);
  p.merged_head = int(a.merged_lse.head_stride);
  p.parity_o = int(a.parity_o_stride / kVec);
  p.parity_lse = int(a.parity_lse_stride);
  p.parity_flag = int(a.parity_flag_stride);
  p.dcp = a.dcp;
  p.valid_rows = a.valid_rows;
  p.heads = a.heads;
  p.vecs = int(a.dim / kVec);
  p.shift = g.shift;
  p.heads_per_block = g.heads_per_block;
  p.k = a.base2 ? 1.f : kLog2e;
  p.pdl = pdl_enabled() ? 1 : 0;
  const dim3 grid(ceil_div(a.heads, g.heads_per_block), a.rows);
  with_short_path_args<1, 2>(a.elem, vpt, a.dcp, [&](auto t, auto v, auto np) {
    launch_kernel("combine_fast_kernel",
                  combine_fast_kernel<typename decltype(t)::type, decltype(v)::value, decltype(np)::value>,
                  grid, g.threads, 0, stream, p);
  });
  DCPSIM_CUDA_LAUNCHED("combine_fast_kernel");
  return true;
}

}  // namespace dcpsim::hw::ops
