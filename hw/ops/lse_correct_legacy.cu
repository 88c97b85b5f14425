// The correction kernels dcpsim used until 2026-12 (kept as the baseline the benchmark sweep compares with,
// `--variant legacy`): a block first computes the weights of its (row, head) pairs into shared memory, then
// streams their D lanes with 16-byte accesses where the layout allows (scalar otherwise), several loads in
// flight per thread; small calls instead run one vector per thread over many blocks, each thread computing
// its pair's weight itself. lse_correct.cu holds the kernels the runner uses.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <string>

#include "cuda_check.h"
#include "dcpsim/error.h"
#include "device_common.cuh"
#include "elem_dispatch.cuh"
#include "ops.h"
#include "vec.cuh"

namespace dcpsim::hw::ops {
namespace {

constexpr int kThreads = 256;
constexpr int kFastN = 8;  // up to this many ranks the LSEs are loaded together into registers

// w_r and the merged LSE (in the partials' base) of one (row, head).
__device__ __forceinline__ float pair_weight(const CorrectArgs& a, int b, int h, float k, float& merged) {
  const float* l = a.lse.ptr + std::int64_t(b) * a.lse.row_stride + std::int64_t(h) * a.lse.head_stride;
  if (a.dcp <= kFastN) {
    // Every load is unconditional (the index is clamped, the value masked) so all N issue back to back.
    float v[kFastN];
#pragma unroll
    for (int i = 0; i < kFastN; ++i) {
      const float x = sanitize_lse(l[std::int64_t(min(i, a.dcp - 1)) * a.lse.rank_stride]);
      v[i] = i < a.dcp ? x : -INFINITY;
    }
    float m = -INFINITY, mine = -INFINITY;
#pragma unroll
    for (int i = 0; i < kFastN; ++i) {
      m = fmaxf(m, v[i]);
      mine = i == a.rank ? v[i] : mine;
    }
    if (m == -INFINITY) {
      merged = -INFINITY;
      return 0.f;
    }
    float sum = 0.f;
#pragma unroll
    for (int i = 0; i < kFastN; ++i) sum += exp2f((v[i] - m) * k);
    merged = m + log2f(sum) / k;
    const float w = exp2f((mine - m) * k) / sum;
    return w == w ? w : 0.f;
  }
  auto get = [&](int n) { return l[std::int64_t(n) * a.lse.rank_stride]; };
  const LseShift shift = lse_shift(a.dcp, k, get);
  merged = merged_lse(shift, k);
  return merge_weight(get(a.rank), k, shift);
}

template <typename T>
__device__ __forceinline__ std::int64_t in_offset(const CorrectArgs& a, int b, int h) {
  return std::int64_t(b) * a.in_row_stride + std::int64_t(h) * a.in_head_stride;
}
template <typename T>
__device__ __forceinline__ std::int64_t out_offset(const CorrectArgs& a, int b, int h) {
  return std::int64_t(h / a.out_block_heads) * a.out_block_stride + std::int64_t(b) * a.out_row_stride +
         std::int64_t(h % a.out_block_heads) * a.out_head_stride;
}

// Adds `units` finished units to row b's count; the unit that completes the row stamps it.
__device__ __forceinline__ void count_row(const CorrectArgs& a, int b, unsigned units, unsigned total) {
  __threadfence();
  if (atomicAdd(&a.stamps.counters[b], units) + units == total) a.stamps.stamps[b] = global_timer();
}

// Vector i of a small call: the pair's weight, then its VEC lanes scaled and stored.
template <typename T, int VEC>
__device__ __forceinline__ void correct_one_vector(const CorrectArgs& a, unsigned i, unsigned vecs) {
  const int pi = static_cast<int>(i / vecs), d = static_cast<int>(i % vecs) * VEC;
  const int b = pi / a.heads, h = pi % a.heads;
  Vec<T, VEC> v;
  v.load(static_cast<const T*>(a.in) + in_offset<T>(a, b, h) + d);
  const float k = a.base2 ? 1.f : kLog2e;
  float merged = -INFINITY, w = 0.f;
  if (b < a.valid_rows) w = pair_weight(a, b, h, k, merged);
  Vec<T, VEC> r;
#pragma unroll
  for (int j = 0; j < VEC; ++j) r.set(j, w == 0.f ? 0.f : w * v.get(j));
  r.store(static_cast<T*>(a.out) + out_offset<T>(a, b, h) + d);
  if (d == 0 && a.merged_lse.ptr != nullptr)
    a.merged_lse.ptr[std::int64_t(b) * a.merged_lse.row_stride + std::int64_t(h) * a.merged_lse.head_stride] =
        merged;
}

// Small calls are latency-bound: one vector per thread, no shared memory and no barrier (but the row
// stamps'). Each thread computes its own pair's weight (the N loads of a pair are the same addresses across
// the pair's threads) while its O load is already in flight; an O value whose weight is 0 is discarded unread
// by the arithmetic (the result is exactly 0).
template <typename T, int VEC>
__global__ void __launch_bounds__(kThreads) correct_small_kernel(CorrectArgs a) {
  pdl_begin();
  const unsigned vecs = a.dim / VEC;
  const unsigned total = unsigned(a.rows) * unsigned(a.heads) * vecs;  // the launch checks it fits
  const unsigned first = blockIdx.x * kThreads;
  if (first + threadIdx.x < total) correct_one_vector<T, VEC>(a, first + threadIdx.x, vecs);
  if (a.stamps.stamps != nullptr) {
    // A row is done when its H·vecs vectors are stored. The block counts its vectors per row, one atomic per
    // (block, row): an atomic per thread on B counters serialised the kernel (B = 64, H = 48, D = 512 took
    // 140 µs instead of 7).
    __syncthreads();
    const unsigned per_row = unsigned(a.heads) * vecs, last = min(total, first + kThreads) - 1;
    for (unsigned b = first / per_row + threadIdx.x; b <= last / per_row; b += kThreads) {
      const unsigned lo = max(first, b * per_row), hi = min(last + 1, (b + 1) * per_row);
      count_row(a, static_cast<int>(b), hi - lo, per_row);
    }
  }
}

// Large calls are bandwidth-bound: a block owns `pairs` consecutive (row, head) pairs; their weights and base
// offsets go to shared memory first (no division in the streaming loop), then each thread streams VPT vectors
// of a fixed lane with every load issued before the first store (in place, loads and stores may alias, so the
// compiler would not overlap them across iterations on its own). Needs kThreads % vecs == 0.
template <typename T, int VEC, int VPT>
__global__ void __launch_bounds__(kThreads, 4) correct_kernel(CorrectArgs a, int pairs) {
  pdl_begin();
  extern __shared__ __align__(16) unsigned char smem[];
  std::int64_t* in_off = reinterpret_cast<std::int64_t*>(smem);
  std::int64_t* out_off = in_off + pairs;
  float* w_s = reinterpret_cast<float*>(out_off + pairs);
  const int p0 = blockIdx.x * pairs;
  const int my_pairs = min(pairs, a.rows * a.heads - p0);
  const float k = a.base2 ? 1.f : kLog2e;
  for (int pl = threadIdx.x; pl < my_pairs; pl += kThreads) {
    const int pi = p0 + pl, b = pi / a.heads, h = pi % a.heads;
    float merged = -INFINITY, w = 0.f;
    if (b < a.valid_rows) w = pair_weight(a, b, h, k, merged);
    w_s[pl] = w;
    in_off[pl] = in_offset<T>(a, b, h);
    out_off[pl] = out_offset<T>(a, b, h);
    if (a.merged_lse.ptr != nullptr)
      a.merged_lse
          .ptr[std::int64_t(b) * a.merged_lse.row_stride + std::int64_t(h) * a.merged_lse.head_stride] =
          merged;
  }
  __syncthreads();
  const int vecs = a.dim / VEC, per = kThreads / vecs;
  const int d = (threadIdx.x % vecs) * VEC, first = threadIdx.x / vecs;
  const T* in = static_cast<const T*>(a.in);
  T* out = static_cast<T*>(a.out);
  for (int base = first; base < my_pairs; base += per * VPT) {
    Vec<T, VEC> v[VPT];
#pragma unroll
    for (int u = 0; u < VPT; ++u) {
      const int pl = base + u * per;
      if (pl < my_pairs && w_s[pl] != 0.f)  // an empty partial is never read
        v[u].load_stream(in + in_off[pl] + d);
    }
#pragma unroll
    for (int u = 0; u < VPT; ++u) {
      const int pl = base + u * per;
      if (pl >= my_pairs) break;
      const float w = w_s[pl];
      Vec<T, VEC> r;
#pragma unroll
      for (int j = 0; j < VEC; ++j) r.set(j, w == 0.f ? 0.f : w * v[u].get(j));
      r.store_stream(out + out_off[pl] + d);
    }
  }
  if (a.stamps.stamps != nullptr) {
    // One count per row the block touched: the number of its pairs in that row.
    __syncthreads();
    const int first_row = p0 / a.heads, last_row = (p0 + my_pairs - 1) / a.heads;
    for (int b = first_row + threadIdx.x; b <= last_row; b += kThreads) {
      const int lo = max(p0, b * a.heads), hi = min(p0 + my_pairs, (b + 1) * a.heads);
      count_row(a, b, static_cast<unsigned>(hi - lo), static_cast<unsigned>(a.heads));
    }
  }
}

template <typename T, int VEC>
void launch_vec(const CorrectArgs& a, cudaStream_t stream) {
  const int vecs = a.dim / VEC;
  const std::int64_t total_vecs = std::int64_t(a.rows) * a.heads * vecs;
  if (total_vecs >= (std::int64_t{1} << 31))
    throw InputError("correction: B·H·D = " + std::to_string(total_vecs * VEC) +
                     " elements is too many for one call");
  if (total_vecs < std::int64_t(132) * 2048 || kThreads % vecs != 0) {
    launch_kernel("correct_small_kernel", correct_small_kernel<T, VEC>, ceil_div(total_vecs, kThreads),
                  kThreads, 0, stream, a);
  } else {
    constexpr int kVpt = 8;
    const int pairs = kThreads / vecs * kVpt;
    const std::size_t smem = std::size_t(pairs) * (2 * sizeof(std::int64_t) + sizeof(float));
    launch_kernel("correct_kernel", correct_kernel<T, VEC, kVpt>,
                  ceil_div(std::int64_t(a.rows) * a.heads, pairs), kThreads, smem, stream, a, pairs);
  }
  DCPSIM_CUDA_LAUNCHED("correct_kernel");
}

template <typename T>
void launch_typed(const CorrectArgs& a, cudaStream_t stream) {
  constexpr int kVec = 16 / sizeof(T);
  const std::int64_t strides[] = {a.in_row_stride,   a.in_head_stride,   a.out_row_stride,
                                  a.out_head_stride, a.out_block_stride, a.dim};
  bool vec =
      reinterpret_cast<std::uintptr_t>(a.in) % 16 == 0 && reinterpret_cast<std::uintptr_t>(a.out) % 16 == 0;
  for (auto s : strides) vec = vec && s % kVec == 0;
  if (vec)
    launch_vec<T, kVec>(a, stream);
  else
    launch_vec<T, 1>(a, stream);
}

}  // namespace

void launch_correct_legacy(const CorrectArgs& a, cudaStream_t stream) {
  with_elem(a.elem, [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch_typed<T>(a, stream);
  });
}

}  // namespace dcpsim::hw::ops
