// The receiver's N-way combine, shared by the packed all-to-all (LSE in the packed lanes) and the direct
// merge (LSE in its own slots, behind epoch-stamped flags): merged LSE and weights per (row, head) in shared
// memory, then fp32 accumulation over the N partials with one rounding to the output type. A partial whose
// weight is 0 is never read.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <string>

#include "bench_op.h"
#include "cuda_check.h"
#include "dcpsim/error.h"
#include "device_buffer.h"
#include "device_common.cuh"
#include "ops.h"

namespace dcpsim::hw::ops {
namespace {

constexpr int kThreads = 128;

__device__ __forceinline__ unsigned long long load_acquire(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

// Thread 0 waits for every source's flag of this epoch; false (and *error set) after the timeout.
__device__ bool wait_flags(const CombineArgs& a, const unsigned long long* flags, unsigned long long epoch) {
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

template <typename TIn, typename TOut>
__global__ void __launch_bounds__(kThreads) combine_kernel(CombineArgs a) {
  pdl_begin();
  extern __shared__ float w[];  // [N]
  __shared__ LseShift shift;
  const int j = blockIdx.x, b = blockIdx.y;
  const TIn* o = static_cast<const TIn*>(a.o);
  const float* lse = a.lse;
  if (a.flags != nullptr) {
    const unsigned long long epoch = *a.epoch;
    const int parity = static_cast<int>(epoch & 1);
    o += parity * a.parity_o_stride;
    lse += parity * a.parity_lse_stride;
    if (!wait_flags(a, a.flags + parity * a.parity_flag_stride, epoch)) return;
  }
  const std::int64_t pair = std::int64_t(b) * a.heads + j;
  auto lse_of = [&](int s) {
    return lse != nullptr ? __ldcg(lse + s * a.lse_src_stride + pair)
                          : packed_lse(o + s * a.src_stride + pair * a.o_lanes, a.dim);
  };
  const float k = a.base2 ? 1.f : kLog2e;
  if (threadIdx.x == 0) {
    shift = b < a.valid_rows ? lse_shift(a.dcp, k, lse_of) : LseShift{-INFINITY, 0.f};
  }
  __syncthreads();
  const LseShift sh = shift;
  for (int s = threadIdx.x; s < a.dcp; s += kThreads) w[s] = merge_weight(lse_of(s), k, sh);
  __syncthreads();
  TOut* dst =
      static_cast<TOut*>(a.dst) + std::int64_t(b) * a.dst_row_stride + std::int64_t(j) * a.dst_head_stride;
  for (int d = threadIdx.x; d < a.dim; d += kThreads) {
    float acc = 0.f;
    for (int s = 0; s < a.dcp; ++s)
      if (w[s] != 0.f) acc += w[s] * to_f32(__ldcg(o + s * a.src_stride + pair * a.o_lanes + d));
    dst[d] = from_f32<TOut>(acc);
  }
  if (threadIdx.x == 0 && a.merged_lse.ptr != nullptr)
    a.merged_lse.ptr[std::int64_t(b) * a.merged_lse.row_stride + std::int64_t(j) * a.merged_lse.head_stride] =
        merged_lse(sh, k);
  row_unit_done(a.stamps, b, static_cast<unsigned>(a.heads));
}

template <typename TIn>
void launch_out(const CombineArgs& a, cudaStream_t stream) {
  const dim3 grid(a.heads, a.rows);
  // Padded to whole 32-byte groups: the unrolled sum may load the weights several at a time.
  const std::size_t smem = std::size_t(a.dcp + 7) / 8 * 8 * sizeof(float);
  switch (a.out) {
    case Elem::kF32:
      launch_kernel("combine_kernel", combine_kernel<TIn, float>, grid, kThreads, smem, stream, a);
      break;
    case Elem::kBF16:
      launch_kernel("combine_kernel", combine_kernel<TIn, __nv_bfloat16>, grid, kThreads, smem, stream, a);
      break;
    case Elem::kF16:
      launch_kernel("combine_kernel", combine_kernel<TIn, __half>, grid, kThreads, smem, stream, a);
      break;
  }
  DCPSIM_CUDA_LAUNCHED("combine_kernel");
}

}  // namespace

void launch_combine(const CombineArgs& a, cudaStream_t stream) {
  if (a.dcp < 1 || a.dcp > 4096)
    throw InputError("combine: N=" + std::to_string(a.dcp) + " outside [1, 4096]");
  if (a.flags != nullptr && (a.epoch == nullptr || a.error == nullptr))
    throw InputError("combine: flags need an epoch counter and an error word");
  if (a.rows == 0 || a.heads == 0) return;
  switch (a.in) {
    case Elem::kF32:
      launch_out<float>(a, stream);
      break;
    case Elem::kBF16:
      launch_out<__nv_bfloat16>(a, stream);
      break;
    case Elem::kF16:
      launch_out<__half>(a, stream);
      break;
  }
}

}  // namespace dcpsim::hw::ops

// ---- benchmark descriptor: the receiver's unpack-combine of N packed bf16 blocks [N][B][H/N][D + 2]; bytes
// = the received buffer read once, O [B][H/N][D] and its LSE written once ----
namespace dcpsim::hw::ops {
namespace {

class CombineBench final : public BenchOp {
 public:
  CombineBench(const OpShape& s, std::uint64_t seed) : s_(s) {
    if (s.heads % s.dcp != 0) throw InputError("a2a-combine bench: H must be divisible by N");
    j_ = s.heads / s.dcp;
    const std::int64_t packed = std::int64_t(s.dcp) * s.rows * j_ * (s.dim + 2);
    recv_ = DeviceBuffer(std::size_t(packed) * 2);
    // Random 16-bit lanes: the LSE lanes then hold arbitrary fp32 patterns, NaN included, as real garbage
    // would.
    launch_fill_uniform(recv_.get(), packed, Elem::kBF16, 4.f, seed, 0, nullptr);
    out_ = DeviceBuffer(std::size_t(s.rows) * j_ * s.dim * 2);
    lse_ = DeviceBuffer(std::size_t(s.rows) * j_ * 4);
    DCPSIM_CUDA(cudaDeviceSynchronize());
  }
  std::string label() const override {
    return "N=" + std::to_string(s_.dcp) + " B=" + std::to_string(s_.rows) + " H/N=" + std::to_string(j_) +
           " D=" + std::to_string(s_.dim);
  }
  double bytes() const override {
    return double(s_.dcp) * s_.rows * j_ * (s_.dim + 2) * 2 + double(s_.rows) * j_ * (s_.dim * 2 + 4);
  }
  void launch(int, cudaStream_t stream) override {
    CombineArgs a;
    a.dcp = s_.dcp;
    a.rows = a.valid_rows = s_.rows;
    a.heads = j_;
    a.dim = s_.dim;
    a.o = recv_.get();
    a.o_lanes = s_.dim + 2;
    a.src_stride = std::int64_t(s_.rows) * j_ * a.o_lanes;
    a.dst = out_.get();
    a.dst_row_stride = std::int64_t(j_) * s_.dim;
    a.dst_head_stride = s_.dim;
    a.merged_lse = {lse_.as<float>(), j_, 1};
    launch_combine(a, stream);
  }

 private:
  OpShape s_;
  int j_ = 1;
  DeviceBuffer recv_, out_, lse_;
};

}  // namespace

std::unique_ptr<BenchOp> make_a2a_combine_bench(const OpShape& s, std::uint64_t seed) {
  return std::make_unique<CombineBench>(s, seed);
}

}  // namespace dcpsim::hw::ops
