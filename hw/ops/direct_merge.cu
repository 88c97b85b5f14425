// Direct (one-shot) merge, writer side: rank r writes, for every owner n, its O for heads [n·H/N, (n+1)·H/N)
// and the matching LSEs straight into n's slot r of the current buffer (peer memory across devices; plain
// device memory in emulation), then the grid's last block raises flag r on every owner with a system-scope
// release store stamped with the epoch. Buffers alternate by epoch parity, so a fast rank's next step cannot
// overwrite a slot its owner is still reading (the owner's flag for the next step implies it finished this
// one).
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

constexpr int kWarps = 8;

__device__ __forceinline__ void store_release(unsigned long long* p, unsigned long long v) {
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

template <typename T>
__global__ void __launch_bounds__(kWarps * 32) direct_write_kernel(DirectWriteArgs a) {
  pdl_begin();
  const unsigned long long epoch = *a.epoch;
  const int parity = static_cast<int>(epoch & 1);
  const int hpb = a.heads / a.dcp;
  const int pair = blockIdx.x * kWarps + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (pair < a.rows * a.heads) {
    const int b = pair / a.heads, h = pair % a.heads;
    const int n = h / hpb, j = h % hpb;
    const float lse = b < a.valid_rows
                          ? a.lse[std::int64_t(b) * a.lse_row_stride + std::int64_t(h) * a.lse_head_stride]
                          : -INFINITY;
    const bool finite = isfinite(lse);
    const std::int64_t slot = (std::int64_t(a.rank) * a.rows + b) * hpb + j;
    T* dst = static_cast<T*>(a.dst_o[parity * a.dcp + n]) + slot * a.dim;
    const T* src =
        static_cast<const T*>(a.o) + std::int64_t(b) * a.o_row_stride + std::int64_t(h) * a.o_head_stride;
    for (int d = lane; d < a.dim; d += 32) dst[d] = finite ? src[d] : from_f32<T>(0.f);
    if (lane == 0) a.dst_lse[parity * a.dcp + n][slot] = lse;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence_system();  // this block's peer writes are visible before it is counted
    const unsigned long long done = atomicAdd(a.done_counter, 1ull) + 1ull;
    if (done == epoch * gridDim.x) {  // last block of this epoch: every block's writes are fenced
      __threadfence_system();
      for (int n = 0; n < a.dcp; ++n) store_release(a.dst_flags[parity * a.dcp + n] + a.rank, epoch);
    }
  }
}

__global__ void advance_epoch_kernel(unsigned long long* epoch) {
  pdl_begin();
  *epoch += 1;
}

}  // namespace

void launch_direct_write(const DirectWriteArgs& a, cudaStream_t stream) {
  if (a.dcp < 1 || a.heads % a.dcp != 0)
    throw InputError("direct merge: H=" + std::to_string(a.heads) +
                     " is not divisible by N=" + std::to_string(a.dcp));
  const int blocks = std::max(1, ceil_div(std::int64_t(a.rows) * a.heads, kWarps));
  switch (a.elem) {
    case Elem::kF32:
      launch_kernel("direct_write_kernel", direct_write_kernel<float>, blocks, kWarps * 32, 0, stream, a);
      break;
    case Elem::kBF16:
      launch_kernel("direct_write_kernel", direct_write_kernel<__nv_bfloat16>, blocks, kWarps * 32, 0, stream,
                    a);
      break;
    case Elem::kF16:
      launch_kernel("direct_write_kernel", direct_write_kernel<__half>, blocks, kWarps * 32, 0, stream, a);
      break;
  }
  DCPSIM_CUDA_LAUNCHED("direct_write_kernel");
}

void launch_advance_epoch(unsigned long long* epoch, cudaStream_t stream) {
  launch_kernel("advance_epoch_kernel", advance_epoch_kernel, 1, 1, 0, stream, epoch);
  DCPSIM_CUDA_LAUNCHED("advance_epoch_kernel");
}

}  // namespace dcpsim::hw::ops

// ---- benchmark descriptor: one direct-merge step of N ranks on one device (epochs, N writers, N waiting
// combiners); bytes = every rank's O and LSE read once, every slot written and read once, every owner's block
// of O and LSE written once ----
namespace dcpsim::hw::ops {
namespace {

class DirectBench final : public BenchOp {
 public:
  DirectBench(const OpShape& s, std::uint64_t seed) : s_(s) {
    if (s.heads % s.dcp != 0) throw InputError("direct bench: H must be divisible by N");
    const int N = s.dcp;
    j_ = s.heads / N;
    slot_o_ = std::size_t(N) * s.rows * j_ * s.dim;
    slot_l_ = std::size_t(N) * s.rows * j_;
    std::vector<void*> po(2 * N);
    std::vector<float*> pl(2 * N);
    std::vector<unsigned long long*> pf(2 * N);
    for (int r = 0; r < N; ++r) {
      o_.emplace_back(std::size_t(s.rows) * s.heads * s.dim * 2);
      lse_.emplace_back(std::size_t(s.rows) * s.heads * 4);
      launch_fill_uniform(o_.back().get(), std::int64_t(s.rows) * s.heads * s.dim, Elem::kBF16, 1.f, seed + r,
                          0, nullptr);
      launch_fill_uniform(lse_.back().get(), std::int64_t(s.rows) * s.heads, Elem::kF32, 8.f, seed + 100 + r,
                          0, nullptr);
      slots_o_.emplace_back(2 * slot_o_ * 2);
      slots_l_.emplace_back(2 * slot_l_ * 4);
      flags_.emplace_back(2 * N * 8);
      out_.emplace_back(std::size_t(s.rows) * j_ * s.dim * 2);
      DCPSIM_CUDA(cudaMemset(flags_.back().get(), 0, flags_.back().bytes()));
      for (int par = 0; par < 2; ++par) {
        po[par * N + r] = slots_o_[r].as<std::uint8_t>() + par * slot_o_ * 2;
        pl[par * N + r] = slots_l_[r].as<float>() + par * slot_l_;
        pf[par * N + r] = flags_[r].as<unsigned long long>() + par * N;
      }
    }
    po_ = upload(po);
    pl_ = upload(pl);
    pf_ = upload(pf);
    counters_ = DeviceBuffer(2 * N * 8);
    error_ = DeviceBuffer(4);
    DCPSIM_CUDA(cudaMemset(counters_.get(), 0, counters_.bytes()));
    DCPSIM_CUDA(cudaMemset(error_.get(), 0, 4));
    DCPSIM_CUDA(cudaDeviceSynchronize());
  }
  std::string label() const override {
    return "N=" + std::to_string(s_.dcp) + " B=" + std::to_string(s_.rows) +
           " H=" + std::to_string(s_.heads) + " D=" + std::to_string(s_.dim) + " (all ranks, one device)";
  }
  double bytes() const override {
    const double o = double(s_.rows) * s_.heads * s_.dim * 2, l = double(s_.rows) * s_.heads * 4;
    return s_.dcp * (o + l) * 3;  // read partials, write + read slots, write outputs (≈ O + LSE per rank)
  }
  void launch(int, cudaStream_t stream) override {
    const int N = s_.dcp;
    auto* counters = counters_.as<unsigned long long>();
    for (int r = 0; r < N; ++r) launch_advance_epoch(counters + r, stream);
    for (int r = 0; r < N; ++r) {
      DirectWriteArgs w;
      w.dcp = N;
      w.rank = r;
      w.rows = w.valid_rows = s_.rows;
      w.heads = s_.heads;
      w.dim = s_.dim;
      w.o = o_[r].get();
      w.o_row_stride = std::int64_t(s_.heads) * s_.dim;
      w.o_head_stride = s_.dim;
      w.lse = lse_[r].as<float>();
      w.lse_row_stride = s_.heads;
      w.lse_head_stride = 1;
      w.dst_o = po_.as<void* const>();
      w.dst_lse = pl_.as<float* const>();
      w.dst_flags = pf_.as<unsigned long long* const>();
      w.epoch = counters + r;
      w.done_counter = counters + N + r;
      launch_direct_write(w, stream);
    }
    for (int n = 0; n < N; ++n) {
      CombineArgs c;
      c.dcp = N;
      c.rows = c.valid_rows = s_.rows;
      c.heads = j_;
      c.dim = s_.dim;
      c.o = slots_o_[n].get();
      c.o_lanes = s_.dim;
      c.src_stride = std::int64_t(s_.rows) * j_ * s_.dim;
      c.lse = slots_l_[n].as<float>();
      c.lse_src_stride = std::int64_t(s_.rows) * j_;
      c.dst = out_[n].get();
      c.dst_row_stride = std::int64_t(j_) * s_.dim;
      c.dst_head_stride = s_.dim;
      c.flags = flags_[n].as<unsigned long long>();
      c.epoch = counters + n;
      c.parity_o_stride = static_cast<std::int64_t>(slot_o_);
      c.parity_lse_stride = static_cast<std::int64_t>(slot_l_);
      c.parity_flag_stride = N;
      c.timeout_ns = 2'000'000'000LL;
      c.error = error_.as<int>();
      launch_combine(c, stream);
    }
  }

 private:
  OpShape s_;
  int j_ = 1;
  std::size_t slot_o_ = 0, slot_l_ = 0;
  std::vector<DeviceBuffer> o_, lse_, slots_o_, slots_l_, flags_, out_;
  DeviceBuffer po_, pl_, pf_, counters_, error_;
};

}  // namespace

std::unique_ptr<BenchOp> make_direct_bench(const OpShape& s, std::uint64_t seed) {
  return std::make_unique<DirectBench>(s, seed);
}

}  // namespace dcpsim::hw::ops
