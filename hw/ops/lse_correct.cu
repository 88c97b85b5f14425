// LSE correction for the AG strategies: after the LSE all-gather, rank r scales its O_r by w_r = base^(L_r − L)
// and rounds once to the output type, in place or into the reduce-scatter's head-block layout. Any N, any D, any
// O strides, any LSE layout. A block first computes the weights of 32 (row, head) pairs into shared memory, then
// streams their D lanes with 16-byte accesses where the layout allows (scalar otherwise).
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

constexpr int kPairsPerBlock = 32;
constexpr int kThreads = 256;

template <typename T, int VEC>
struct alignas(sizeof(T) * VEC) Vec {  // 16-byte aligned when vectorised: one 128-bit load/store
  T v[VEC];
};

template <typename T, int VEC>
__global__ void __launch_bounds__(kThreads) correct_kernel(CorrectArgs a) {
  __shared__ float w_s[kPairsPerBlock];
  const int pairs = a.rows * a.heads;
  const int p0 = blockIdx.x * kPairsPerBlock;
  const float k = a.base2 ? 1.f : kLog2e;
  if (threadIdx.x < kPairsPerBlock) {
    const int pi = p0 + threadIdx.x;
    float w = 0.f;
    if (pi < pairs) {
      const int b = pi / a.heads, h = pi % a.heads;
      float merged = -INFINITY;
      if (b < a.valid_rows) {
        const float* l = a.lse.ptr + std::int64_t(b) * a.lse.row_stride + std::int64_t(h) * a.lse.head_stride;
        auto get = [&](int n) { return l[std::int64_t(n) * a.lse.rank_stride]; };
        merged = merged_lse_log2(a.dcp, k, get);
        w = merge_weight(get(a.rank), k, merged);
      }
      if (a.merged_lse.ptr != nullptr)
        a.merged_lse.ptr[std::int64_t(b) * a.merged_lse.row_stride + std::int64_t(h) * a.merged_lse.head_stride] =
            merged == -INFINITY ? -INFINITY : merged / k;
    }
    w_s[threadIdx.x] = w;
  }
  __syncthreads();
  const int vecs = a.dim / VEC;
  const T* in = static_cast<const T*>(a.in);
  T* out = static_cast<T*>(a.out);
  for (int i = threadIdx.x; i < kPairsPerBlock * vecs; i += kThreads) {
    const int pl = i / vecs, pi = p0 + pl;
    if (pi >= pairs) break;
    const int b = pi / a.heads, h = pi % a.heads, d = (i % vecs) * VEC;
    const float w = w_s[pl];
    T* dst = out + std::int64_t(h / a.out_block_heads) * a.out_block_stride + std::int64_t(b) * a.out_row_stride +
             std::int64_t(h % a.out_block_heads) * a.out_head_stride + d;
    Vec<T, VEC> v;
    if (w == 0.f) {  // an empty partial is never read: NaN garbage must not reach the sum
#pragma unroll
      for (int j = 0; j < VEC; ++j) v.v[j] = from_f32<T>(0.f);
    } else {
      v = *reinterpret_cast<const Vec<T, VEC>*>(in + std::int64_t(b) * a.in_row_stride +
                                               std::int64_t(h) * a.in_head_stride + d);
#pragma unroll
      for (int j = 0; j < VEC; ++j) v.v[j] = from_f32<T>(w * to_f32(v.v[j]));
    }
    *reinterpret_cast<Vec<T, VEC>*>(dst) = v;
  }
  if (a.stamps.stamps != nullptr) {
    __syncthreads();
    const int pi = p0 + threadIdx.x;
    if (threadIdx.x < kPairsPerBlock && pi < pairs) {
      __threadfence();
      const int b = pi / a.heads;
      if (atomicAdd(&a.stamps.counters[b], 1u) + 1u == unsigned(a.heads)) a.stamps.stamps[b] = global_timer();
    }
  }
}

template <typename T>
void launch_typed(const CorrectArgs& a, cudaStream_t stream) {
  constexpr int kVec = 16 / sizeof(T);
  const std::int64_t strides[] = {a.in_row_stride, a.in_head_stride, a.out_row_stride, a.out_head_stride,
                                  a.out_block_stride, a.dim};
  bool vec = reinterpret_cast<std::uintptr_t>(a.in) % 16 == 0 && reinterpret_cast<std::uintptr_t>(a.out) % 16 == 0;
  for (auto s : strides) vec = vec && s % kVec == 0;
  const int blocks = ceil_div(std::int64_t(a.rows) * a.heads, kPairsPerBlock);
  if (vec)
    correct_kernel<T, kVec><<<blocks, kThreads, 0, stream>>>(a);
  else
    correct_kernel<T, 1><<<blocks, kThreads, 0, stream>>>(a);
  DCPSIM_CUDA_LAUNCHED("correct_kernel");
}

}  // namespace

void launch_correct(const CorrectArgs& a, cudaStream_t stream) {
  if (a.dcp < 1 || a.rank < 0 || a.rank >= a.dcp)
    throw InputError("correction: rank " + std::to_string(a.rank) + " outside [0, " + std::to_string(a.dcp) + ")");
  if (a.out_block_heads < 1) throw InputError("correction: out_block_heads must be >= 1");
  if (a.rows == 0 || a.heads == 0) return;
  switch (a.elem) {
    case Elem::kF32: launch_typed<float>(a, stream); break;
    case Elem::kBF16: launch_typed<__nv_bfloat16>(a, stream); break;
    case Elem::kF16: launch_typed<__half>(a, stream); break;
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
    return "N=" + std::to_string(s_.dcp) + " B=" + std::to_string(s_.rows) + " H=" + std::to_string(s_.heads) +
           " D=" + std::to_string(s_.dim) + (s_.transposed_lse ? " lse[H][B]" : "") +
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
