// Packed all-to-all, send side: rank r's O and LSE become one buffer [N_dest][B][H/N][D + P] in the output
// type (SPEC "Packed A2A layout"), with the padding mask fused in: rows at or past valid_rows travel with LSE
// −inf, and O lanes are zero wherever the LSE is not finite, so the receiver never meets garbage. The LSE
// travels as its exact fp32 bit pattern. With PackArgs::lse_send (a2a-2call) the same kernels write O to
// [N_dest][B][H/N][D] and the LSE to its own fp32 buffer [N_dest][B][H/N], for two all-to-alls.
//
// Two kernels. The short path (16-bit O on 16-byte rows, the runner's case): a group of lanes per (row,
// head), lane i loading the pair's i-th 16-byte piece of O at once with the LSE (no load waits on another)
// and storing it as four 32-bit words, since the packed rows start on 4-byte boundaries only. The general
// kernel (fp32, unaligned O): a warp per (row, head), element by element.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <string>
#include <vector>

#include "bench_op.h"
#include "cuda_check.h"
#include "dcpsim/error.h"
#include "device_buffer.h"
#include "device_common.cuh"
#include "elem_dispatch.cuh"
#include "ops.h"

namespace dcpsim::hw::ops {
namespace {

constexpr int kWarps = 8;

template <typename T>
__global__ void __launch_bounds__(kWarps * 32) pack_kernel(PackArgs a) {
  pdl_begin();
  const int hpb = a.heads / a.dcp;
  const int pair = blockIdx.x * kWarps + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (pair >= a.rows * a.heads) return;
  const int b = pair / a.heads, h = pair % a.heads;
  const int n = h / hpb, j = h % hpb;
  const float lse = b < a.valid_rows
                        ? a.lse[std::int64_t(b) * a.lse_row_stride + std::int64_t(h) * a.lse_head_stride]
                        : -INFINITY;
  const bool finite = isfinite(lse);
  const bool split = a.lse_send != nullptr;
  const int lanes = a.dim + (split ? 0 : sizeof(T) == 4 ? 1 : 2);
  const std::int64_t slot = (std::int64_t(n) * a.rows + b) * hpb + j;
  T* dst = static_cast<T*>(a.send) + slot * lanes;
  const T* src =
      static_cast<const T*>(a.o) + std::int64_t(b) * a.o_row_stride + std::int64_t(h) * a.o_head_stride;
  for (int d = lane; d < a.dim; d += 32) dst[d] = finite ? src[d] : from_f32<T>(0.f);
  if (lane == 0 && split) {
    a.lse_send[slot] = lse;
  } else if (lane == 0) {
    if constexpr (sizeof(T) == 4) {
      dst[a.dim] = lse;
    } else {
      reinterpret_cast<unsigned short*>(dst)[a.dim] = lse_lo(lse);
      reinterpret_cast<unsigned short*>(dst)[a.dim + 1] = lse_hi(lse);
    }
  }
}

constexpr int kFastThreads = 256;

template <typename T>
__global__ void __launch_bounds__(kFastThreads) pack_fast_kernel(PackArgs a, int shift) {
  pdl_begin();
  const int group = 1 << shift, lane = threadIdx.x & (group - 1);
  const std::int64_t pair = std::int64_t(blockIdx.x) * (kFastThreads >> shift) + (threadIdx.x >> shift);
  if (pair >= std::int64_t(a.rows) * a.heads) return;
  const int b = static_cast<int>(pair / a.heads), h = static_cast<int>(pair % a.heads);
  const int hpb = a.heads / a.dcp, n = h / hpb, j = h % hpb, pieces = a.dim / 8;
  const float lse = b < a.valid_rows
                        ? a.lse[std::int64_t(b) * a.lse_row_stride + std::int64_t(h) * a.lse_head_stride]
                        : -INFINITY;
  const bool split = a.lse_send != nullptr;
  const std::int64_t slot = (std::int64_t(n) * a.rows + b) * hpb + j;
  uint4 v = make_uint4(0u, 0u, 0u, 0u);
  const uint4* src = reinterpret_cast<const uint4*>(
      static_cast<const T*>(a.o) + std::int64_t(b) * a.o_row_stride + std::int64_t(h) * a.o_head_stride);
  if (lane < pieces) v = __ldcs(src + lane);
  if (!isfinite(lse)) v = make_uint4(0u, 0u, 0u, 0u);
  unsigned* dst = reinterpret_cast<unsigned*>(static_cast<T*>(a.send) + slot * (a.dim + (split ? 0 : 2)));
  if (lane < pieces) {
    dst[4 * lane] = v.x;
    dst[4 * lane + 1] = v.y;
    dst[4 * lane + 2] = v.z;
    dst[4 * lane + 3] = v.w;
  }
  if (lane == 0 && split) {
    a.lse_send[slot] = lse;
  } else if (lane == 0) {
    dst[a.dim / 2] = __float_as_uint(lse);  // lanes D (the low half) and D + 1
  }
}

// The short path's group size (log2), or −1 where it does not apply.
int fast_shift(const PackArgs& a) {
  if (a.elem == Elem::kF32 || a.dim % 8 != 0 || a.dim / 8 > kFastThreads) return -1;
  if (reinterpret_cast<std::uintptr_t>(a.o) % 16 != 0 || reinterpret_cast<std::uintptr_t>(a.send) % 4 != 0 ||
      a.o_row_stride % 8 != 0 || a.o_head_stride % 8 != 0)
    return -1;
  int shift = 0;
  while ((1 << shift) < a.dim / 8) ++shift;
  return shift;
}

}  // namespace

void launch_a2a_pack(const PackArgs& a, cudaStream_t stream) {
  if (a.dcp < 1 || a.heads % a.dcp != 0)
    throw InputError("a2a pack: H=" + std::to_string(a.heads) +
                     " is not divisible by N=" + std::to_string(a.dcp));
  if (a.rows == 0) return;
  if (const int shift = fast_shift(a); shift >= 0) {
    const int blocks = ceil_div(std::int64_t(a.rows) * a.heads, kFastThreads >> shift);
    with_elem(a.elem, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (sizeof(T) == 2)
        launch_kernel("pack_fast_kernel", pack_fast_kernel<T>, blocks, kFastThreads, 0, stream, a, shift);
    });
    DCPSIM_CUDA_LAUNCHED("pack_fast_kernel");
    return;
  }
  const int blocks = ceil_div(std::int64_t(a.rows) * a.heads, kWarps);
  with_elem(a.elem, [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch_kernel("pack_kernel", pack_kernel<T>, blocks, kWarps * 32, 0, stream, a);
  });
  DCPSIM_CUDA_LAUNCHED("pack_kernel");
}

}  // namespace dcpsim::hw::ops

// ---- benchmark descriptor: pack one rank's bf16 O [B][H][D] and LSE for N destinations; bytes = O and LSE
// read once, the packed buffer written once ----
namespace dcpsim::hw::ops {
namespace {

class PackBench final : public BenchOp {
 public:
  PackBench(const OpShape& s, std::uint64_t seed) : s_(s) {
    if (s.heads % s.dcp != 0) throw InputError("a2a-pack bench: H must be divisible by N");
    const std::int64_t o_elems = std::int64_t(s.rows) * s.heads * s.dim,
                       lse_elems = std::int64_t(s.rows) * s.heads;
    // At least kMinInputSets input sets: a call and the ones before it read different buffers, as ranks'
    // packs do.
    sets_ = std::max(kMinInputSets, rotation_sets(double(o_elems) * 2 + double(lse_elems) * 4));
    for (int i = 0; i < sets_; ++i) {
      o_.emplace_back(std::size_t(o_elems) * 2);
      lse_.emplace_back(std::size_t(lse_elems) * 4);
      launch_fill_uniform(o_.back().get(), o_elems, Elem::kBF16, 1.f, seed + 2 * i, 0, nullptr);
      launch_fill_uniform(lse_.back().get(), lse_elems, Elem::kF32, 8.f, seed + 2 * i + 1, 0, nullptr);
    }
    // Packed: O rows of D + 2 lanes (the LSE's bit pattern in the last two); split (a2a-2call): O rows of D
    // lanes and the LSEs in a buffer of their own.
    send_ = DeviceBuffer(std::size_t(s.rows) * s.heads * (s.dim + (s.split_lse ? 0 : 2)) * 2);
    if (s.split_lse) lse_send_ = DeviceBuffer(std::size_t(s.rows) * s.heads * 4);
    DCPSIM_CUDA(cudaDeviceSynchronize());
  }
  std::string label() const override {
    return "N=" + std::to_string(s_.dcp) + " B=" + std::to_string(s_.rows) +
           " H=" + std::to_string(s_.heads) + " D=" + std::to_string(s_.dim) + (s_.split_lse ? " split" : "");
  }
  double bytes() const override { return double(s_.rows) * s_.heads * (2.0 * s_.dim * 2 + 4 + 4); }
  void launch(int call, cudaStream_t stream) override {
    auto a = with_dims<PackArgs>({s_.dcp, s_.rows, s_.rows, s_.heads, s_.dim, false, Elem::kBF16});
    a.o = o_[call % sets_].get();
    a.o_row_stride = std::int64_t(s_.heads) * s_.dim;
    a.o_head_stride = s_.dim;
    a.lse = lse_[call % sets_].as<float>();
    a.lse_row_stride = s_.heads;
    a.lse_head_stride = 1;
    a.send = send_.get();
    if (s_.split_lse) a.lse_send = lse_send_.as<float>();
    launch_a2a_pack(a, stream);
  }

 private:
  OpShape s_;
  int sets_ = 1;
  std::vector<DeviceBuffer> o_, lse_;
  DeviceBuffer send_, lse_send_;
};

}  // namespace

std::unique_ptr<BenchOp> make_a2a_pack_bench(const OpShape& s, std::uint64_t seed) {
  return std::make_unique<PackBench>(s, seed);
}

}  // namespace dcpsim::hw::ops
