// LSE correction for the AG strategies: after the LSE all-gather, rank r scales its O_r by w_r = base^(L_r −
// L) and rounds once to the output type, in place or into the reduce-scatter's head-block layout. Any N, any
// D, any O strides, any LSE layout. A block first computes the weights of its (row, head) pairs into shared
// memory, then streams their D lanes with 16-byte accesses where the layout allows (scalar otherwise),
// several loads in flight per thread for bandwidth, or one vector per thread over many blocks for small,
// latency-bound calls.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <string>
#include <vector>

#include "bench_op.h"
#include "cuda_check.h"
#include "dcpsim/error.h"
#include "device_buffer.h"
#include "device_common.cuh"
#include "ops.h"

namespace dcpsim::hw::ops {
namespace {

constexpr int kThreads = 256;
constexpr int kFastN = 8;  // up to this many ranks the LSEs are loaded together into registers

template <int BYTES>
struct RawOf;
template <>
struct RawOf<16> {
  using type = uint4;
};
template <>
struct RawOf<4> {
  using type = unsigned int;
};
template <>
struct RawOf<2> {
  using type = unsigned short;
};

// VEC elements moved as one raw word (one 128-bit access when VEC·sizeof(T) = 16), converted lane by lane.
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
  __device__ __forceinline__ float get(int j) const { return to_f32(reinterpret_cast<const T*>(&raw)[j]); }
  __device__ __forceinline__ void set(int j, float x) { reinterpret_cast<T*>(&raw)[j] = from_f32<T>(x); }
};

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

void launch_correct(const CorrectArgs& a, cudaStream_t stream) {
  if (a.dcp < 1 || a.rank < 0 || a.rank >= a.dcp)
    throw InputError("correction: rank " + std::to_string(a.rank) + " outside [0, " + std::to_string(a.dcp) +
                     ")");
  if (a.out_block_heads < 1) throw InputError("correction: out_block_heads must be >= 1");
  if (a.rows == 0 || a.heads == 0) return;
  switch (a.elem) {
    case Elem::kF32:
      launch_typed<float>(a, stream);
      break;
    case Elem::kBF16:
      launch_typed<__nv_bfloat16>(a, stream);
      break;
    case Elem::kF16:
      launch_typed<__half>(a, stream);
      break;
  }
}

}  // namespace dcpsim::hw::ops

// ---- benchmark descriptor: in-place correction of one rank's O [B][H][D] (optionally head-padded rows and
// transposed LSE); bytes = O read + written once, plus the N gathered LSEs read once ----
namespace dcpsim::hw::ops {
namespace {

class CorrectBench final : public BenchOp {
 public:
  CorrectBench(const OpShape& s, std::uint64_t seed) : s_(s) {
    row_stride_ = std::int64_t(s.heads) * s.dim + s.out_row_pad;
    const std::int64_t o_elems = std::int64_t(s.rows) * row_stride_;
    const std::int64_t lse_elems = std::int64_t(s.dcp) * s.rows * s.heads;
    sets_ = rotation_sets(double(o_elems) * 2);
    for (int i = 0; i < sets_; ++i) {
      o_.emplace_back(std::size_t(o_elems) * 2);
      launch_fill_uniform(o_.back().get(), o_elems, Elem::kBF16, 1.f, seed + i, 0, nullptr);
    }
    lse_ = DeviceBuffer(std::size_t(lse_elems) * 4);
    launch_fill_uniform(lse_.get(), lse_elems, Elem::kF32, 8.f, seed + 100, 0, nullptr);
    DCPSIM_CUDA(cudaDeviceSynchronize());
  }
  std::string label() const override {
    return "N=" + std::to_string(s_.dcp) + " B=" + std::to_string(s_.rows) +
           " H=" + std::to_string(s_.heads) + " D=" + std::to_string(s_.dim) +
           (s_.transposed_lse ? " lse[H][B]" : "") +
           (s_.out_row_pad ? " pad=" + std::to_string(s_.out_row_pad) : "");
  }
  double bytes() const override {
    return 2.0 * 2 * s_.rows * s_.heads * s_.dim + 4.0 * s_.dcp * s_.rows * s_.heads;
  }
  void launch(int call, cudaStream_t stream) override {
    CorrectArgs a;
    a.dcp = s_.dcp;
    a.rank = 0;
    a.rows = a.valid_rows = s_.rows;
    a.heads = s_.heads;
    a.dim = s_.dim;
    a.elem = Elem::kBF16;
    const std::int64_t rs = s_.transposed_lse ? 1 : s_.heads, hs = s_.transposed_lse ? s_.rows : 1;
    a.lse = {lse_.as<float>(), std::int64_t(s_.rows) * s_.heads, rs, hs};
    a.in = a.out = o_[call % sets_].get();
    a.in_row_stride = a.out_row_stride = row_stride_;
    a.in_head_stride = a.out_head_stride = s_.dim;
    a.out_block_heads = s_.heads;
    launch_correct(a, stream);
  }

 private:
  OpShape s_;
  std::int64_t row_stride_ = 0;
  int sets_ = 1;
  std::vector<DeviceBuffer> o_;
  DeviceBuffer lse_;
};

}  // namespace

std::unique_ptr<BenchOp> make_correct_bench(const OpShape& s, std::uint64_t seed) {
  return std::make_unique<CorrectBench>(s, seed);
}

}  // namespace dcpsim::hw::ops
