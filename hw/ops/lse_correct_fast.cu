// The correction's short-path kernels (variants f1, f2, f4 and s1, s2, s4; merge_fast.cuh says why they are
// shaped so): 16-bit O with 16-byte rows and strides, N ≤ 8, at most 65535 rows, no row stamps. A group of
// lanes owns a (row, head) pair as in lse_correct.cu; every lane issues its O loads and then its LSE loads,
// all at once. "f": lane i < N of the group reads LSE i and the group reduces with an unrolled xor butterfly
// (needs a group of ≥ NP lanes); "s": every lane reads all N LSEs itself (no shuffle on the path, more
// loads, which the L1 merges). Other calls go to the lane-group kernels in lse_correct.cu.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstring>

#include "cuda_check.h"
#include "device_common.cuh"
#include "merge_fast.cuh"
#include "ops.h"
#include "vec.cuh"

namespace dcpsim::hw::ops {
namespace {

constexpr int kThreads = 256;

// Compact parameters (they are read from the constant bank by every thread; fewer cache lines, fewer misses).
// Offsets of O in 16-byte words, of the LSE in floats, all 32-bit (the launch checks they fit).
struct FastCorrectParams {
  const uint4* in;
  uint4* out;
  const float* lse;
  float* merged;  // may be null
  int in_row, in_head, out_row, out_head, out_block;
  int lse_rank, lse_row, lse_head, merged_row, merged_head;
  int dcp, rank, valid_rows, heads, out_block_heads, vecs;
  int shift, heads_per_block;
  float k, inv_k;  // log2 e and ln 2 for natural-log LSEs, 1 and 1 for base 2
  int pdl;
};

// At decode shapes a call is one round trip to memory plus the instructions between the loads' return and the
// stores, all on the critical path (nothing else runs to hide them). So: every address is formed before the
// loads (the reduce-scatter layout's division included), the LSEs go out first and O beside them, the rank's
// own LSE comes from the lane that holds it (a shuffle, not a second load that would wait for the butterfly),
// and the merged LSE takes a product where a division was; exponentials, the reciprocal and the logarithm are
// one instruction each (merge_fast.cuh).
template <typename T, int VPT, int NP, bool SOLO>
__global__ void __launch_bounds__(kThreads) correct_fast_kernel(FastCorrectParams p) {
  if (p.pdl) pdl_begin();
  const int group = 1 << p.shift, lane = threadIdx.x & (group - 1), b = blockIdx.y;
  const int h_raw = blockIdx.x * p.heads_per_block + (threadIdx.x >> p.shift);
  const bool active = h_raw < p.heads;
  if (SOLO && !active) return;  // whole groups; no shuffles in this form
  const int h = min(h_raw, p.heads - 1);
  constexpr bool kStream = VPT >= 4;
  const float* l = p.lse + (b * p.lse_row + h * p.lse_head);
  const uint4* src = p.in + (b * p.in_row + h * p.in_head);
  int block = 0, hb = h;
  if (p.out_block_heads < p.heads) {  // the reduce-scatter layout; in place needs no division
    block = h / p.out_block_heads;
    hb = h - block * p.out_block_heads;
  }
  uint4* dst = p.out + (block * p.out_block + b * p.out_row + hb * p.out_head);
  float x[SOLO ? NP : 1];
  if constexpr (SOLO) {
    fast::load_lses<NP>(x, l, p.lse_rank, p.dcp);
  } else {
    const int r = threadIdx.x & (NP - 1);
    x[0] = sanitize_lse(l[std::int64_t(min(r, p.dcp - 1)) * p.lse_rank]);
    x[0] = r < p.dcp ? x[0] : -INFINITY;
  }
  uint4 v[VPT];
#pragma unroll
  for (int u = 0; u < VPT; ++u)
    if (lane + u * group < p.vecs) v[u] = fast::load16<kStream>(src + lane + u * group);
  float w = 0.f;
  LseShift sh{-INFINITY, 0.f};
  if constexpr (SOLO) {
    float mine = x[0];
#pragma unroll
    for (int i = 1; i < NP; ++i) mine = i == p.rank ? x[i] : mine;
    if (b < p.valid_rows) sh = fast::shift_of<NP>(x, p.k);
    if (sh.m != -INFINITY) w = fast::exp2_ftz((mine - sh.m) * p.k) * fast::rcp_ftz(sh.sum);
  } else {
    // Lanes 0..NP-1 of every NP-lane slice hold LSE 0..NP-1; the butterfly runs over the whole warp (every
    // lane takes part, idle groups on a clamped pair), so no mask is needed and no lane has left.
    const float mine = __shfl_sync(0xffffffffu, x[0], int(threadIdx.x & 31u & ~unsigned(NP - 1)) | p.rank);
    float m = x[0];
#pragma unroll
    for (int off = NP / 2; off > 0; off >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
    float s = m == -INFINITY ? 0.f : fast::exp2_ftz((x[0] - m) * p.k);
#pragma unroll
    for (int off = NP / 2; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
    if (b < p.valid_rows) sh = {m, s};
    if (sh.m != -INFINITY) w = fast::exp2_ftz((mine - sh.m) * p.k) * fast::rcp_ftz(sh.sum);
  }
  w = w == w ? w : 0.f;
  if (!active) return;
#pragma unroll
  for (int u = 0; u < VPT; ++u)
    if (lane + u * group < p.vecs) fast::store16<kStream>(dst + lane + u * group, fast::scale<T>(v[u], w));
  if (lane == 0 && p.merged != nullptr)
    p.merged[b * p.merged_row + h * p.merged_head] =
        sh.m == -INFINITY ? -INFINITY : sh.m + __log2f(sh.sum) * p.inv_k;  // sum ≥ 1: no denormal argument
}

template <typename T, int VPT, bool SOLO>
void launch_np(const FastCorrectParams& p, int np, dim3 grid, int threads, cudaStream_t stream) {
  if (np <= 2)
    launch_kernel("correct_fast_kernel", correct_fast_kernel<T, VPT, 2, SOLO>, grid, threads, 0, stream, p);
  else if (np <= 4)
    launch_kernel("correct_fast_kernel", correct_fast_kernel<T, VPT, 4, SOLO>, grid, threads, 0, stream, p);
  else
    launch_kernel("correct_fast_kernel", correct_fast_kernel<T, VPT, 8, SOLO>, grid, threads, 0, stream, p);
}

template <typename T, bool SOLO>
void launch_vpt(const FastCorrectParams& p, int vpt, int np, dim3 grid, int threads, cudaStream_t stream) {
  if (vpt == 1) return launch_np<T, 1, SOLO>(p, np, grid, threads, stream);
  if (vpt == 2) return launch_np<T, 2, SOLO>(p, np, grid, threads, stream);
  launch_np<T, 4, SOLO>(p, np, grid, threads, stream);
}

bool fits(std::int64_t x) {
  return x >= 0 && x < (std::int64_t{1} << 31);
}

}  // namespace

bool launch_correct_fast(const CorrectArgs& a, int vpt, bool solo, cudaStream_t stream) {
  if (a.elem == Elem::kF32 || a.dcp > 8 || a.rows > 65535 || a.stamps.stamps != nullptr) return false;
  constexpr std::int64_t kVec = 8;  // 16-bit lanes per 16-byte word
  const std::int64_t strides[] = {a.in_row_stride,   a.in_head_stride,   a.out_row_stride,
                                  a.out_head_stride, a.out_block_stride, a.dim};
  if (reinterpret_cast<std::uintptr_t>(a.in) % 16 != 0 || reinterpret_cast<std::uintptr_t>(a.out) % 16 != 0)
    return false;
  for (auto s : strides)
    if (s % kVec != 0) return false;
  const int np = a.dcp <= 2 ? 2 : a.dcp <= 4 ? 4 : 8;
  const GroupLaunch g = group_launch(a.heads, a.dim / int(kVec), vpt, a.dcp);
  if (!solo && (1 << g.shift) < np) solo = true;  // the butterfly needs NP lanes per group
  // Every offset the kernel forms must fit in 32 bits.
  const std::int64_t rows = a.rows, heads = a.heads,
                     blocks = (a.heads + a.out_block_heads - 1) / a.out_block_heads;
  if (!fits((rows * a.in_row_stride + heads * a.in_head_stride + a.dim) / kVec) ||
      !fits((blocks * a.out_block_stride + rows * a.out_row_stride + heads * a.out_head_stride + a.dim) /
            kVec) ||
      !fits(a.dcp * a.lse.rank_stride + rows * a.lse.row_stride + heads * a.lse.head_stride) ||
      !fits(rows * a.merged_lse.row_stride + heads * a.merged_lse.head_stride) || !fits(a.lse.rank_stride) ||
      !fits(a.lse.row_stride) || !fits(a.lse.head_stride))
    return false;
  FastCorrectParams p;
  p.in = static_cast<const uint4*>(a.in);
  p.out = static_cast<uint4*>(a.out);
  p.lse = a.lse.ptr;
  p.merged = a.merged_lse.ptr;
  p.in_row = int(a.in_row_stride / kVec);
  p.in_head = int(a.in_head_stride / kVec);
  p.out_row = int(a.out_row_stride / kVec);
  p.out_head = int(a.out_head_stride / kVec);
  p.out_block = int(a.out_block_stride / kVec);
  p.lse_rank = int(a.lse.rank_stride);
  p.lse_row = int(a.lse.row_stride);
  p.lse_head = int(a.lse.head_stride);
  p.merged_row = int(a.merged_lse.row_stride);
  p.merged_head = int(a.merged_lse.head_stride);
  p.dcp = a.dcp;
  p.rank = a.rank;
  p.valid_rows = a.valid_rows;
  p.heads = a.heads;
  p.out_block_heads = a.out_block_heads;
  p.vecs = int(a.dim / kVec);
  p.shift = g.shift;
  p.heads_per_block = g.heads_per_block;
  p.k = a.base2 ? 1.f : kLog2e;
  p.inv_k = a.base2 ? 1.f : 0.69314718055994531f;
  p.pdl = pdl_enabled() ? 1 : 0;
  // Groups larger than VPT·G lanes would need a chunk loop: those calls (D > 8·256·VPT) take the other
  // kernels.
  if ((1 << g.shift) * vpt < p.vecs) return false;
  const dim3 grid(ceil_div(a.heads, g.heads_per_block), a.rows);
  if (a.elem == Elem::kBF16) {
    if (solo)
      launch_vpt<__nv_bfloat16, true>(p, vpt, np, grid, g.threads, stream);
    else
      launch_vpt<__nv_bfloat16, false>(p, vpt, np, grid, g.threads, stream);
  } else {
    if (solo)
      launch_vpt<__half, true>(p, vpt, np, grid, g.threads, stream);
    else
      launch_vpt<__half, false>(p, vpt, np, grid, g.threads, stream);
  }
  DCPSIM_CUDA_LAUNCHED("correct_fast_kernel");
  return true;
}

}  // namespace dcpsim::hw::ops
