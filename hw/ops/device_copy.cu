// The device-copy ceiling every bandwidth figure is compared with: one large cudaMemcpy device to device,
// counting the bytes read plus the bytes written. Small copies rotate over enough buffer pairs to exceed L2
// (as the operations' inputs do), so "a copy of the same size" is a copy through device memory too. And the
// empty kernel: the launch floor under every small kernel's time; the touch kernel: a correction's floor.
#include <algorithm>
#include <vector>

#include <string>

#include "bench_op.h"
#include "cuda_check.h"
#include "dcpsim/error.h"
#include "device_buffer.h"
#include "ops.h"

namespace dcpsim::hw::ops {
namespace {

class CopyBench final : public BenchOp {
 public:
  CopyBench(const OpShape& s, std::uint64_t seed) : bytes_(s.copy_bytes) {
    if (bytes_ < 1) throw InputError("copy bench: --copy-bytes must be >= 1");
    sets_ = rotation_sets(2.0 * double(bytes_));
    for (int i = 0; i < sets_; ++i) {
      src_.emplace_back(std::size_t(bytes_));
      dst_.emplace_back(std::size_t(bytes_));
      launch_fill_uniform(src_.back().get(), bytes_ / 2, Elem::kBF16, 1.f, seed + i, 0,
                          nullptr);  // not zeros
    }
    DCPSIM_CUDA(cudaDeviceSynchronize());
  }
  std::string label() const override {
    return bytes_ >= (1 << 20) ? std::to_string(bytes_ >> 20) + " MiB D2D"
                               : std::to_string(bytes_) + " B D2D";
  }
  double bytes() const override { return 2.0 * double(bytes_); }
  void launch(int call, cudaStream_t stream) override {
    const int i = call % sets_;
    DCPSIM_CUDA(
        cudaMemcpyAsync(dst_[i].get(), src_[i].get(), std::size_t(bytes_), cudaMemcpyDeviceToDevice, stream));
  }

 private:
  std::int64_t bytes_;
  int sets_ = 1;
  std::vector<DeviceBuffer> src_, dst_;
};

__global__ void empty_kernel() {}

class EmptyBench final : public BenchOp {
 public:
  std::string label() const override { return "empty kernel"; }
  double bytes() const override { return 0.0; }
  void launch(int, cudaStream_t stream) override {
    empty_kernel<<<1, 32, 0, stream>>>();
    DCPSIM_CUDA(cudaGetLastError());
  }
};

// The least any correction does at its shape: every 16-byte unit of O read and written back in place, one
// unit a thread, no LSE and no arithmetic; O's bytes rotated over input sets as the correction's are. A
// correction cannot be faster than this at the same shape, whatever its kernel.
__global__ void touch_kernel(uint4* o, int units, unsigned flip) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= units) return;
  uint4 v = o[i];
  v.x ^= flip;  // 0: the store writes what was read, yet the compiler cannot drop it
  o[i] = v;
}

class TouchBench final : public BenchOp {
 public:
  TouchBench(const OpShape& s, std::uint64_t seed) : s_(s) {
    const std::int64_t bytes = std::int64_t(s.rows) * s.heads * s.dim * 2;
    if (bytes < 16 || bytes % 16 != 0 || bytes / 16 > (std::int64_t{1} << 30))
      throw InputError("touch bench: B·H·D·2 bytes must be a positive multiple of 16, at most 2^34");
    units_ = int(bytes / 16);
    sets_ = std::max(kMinInputSets, rotation_sets(double(bytes)));  // as the correction rotates O
    for (int i = 0; i < sets_; ++i) {
      o_.emplace_back(std::size_t(bytes));
      launch_fill_uniform(o_.back().get(), bytes / 2, Elem::kBF16, 1.f, seed + i, 0, nullptr);
    }
    DCPSIM_CUDA(cudaDeviceSynchronize());
  }
  std::string label() const override {
    return "B=" + std::to_string(s_.rows) + " H=" + std::to_string(s_.heads) +
           " D=" + std::to_string(s_.dim) + " (O read and written)";
  }
  double bytes() const override { return 32.0 * units_; }
  void launch(int call, cudaStream_t stream) override {
    touch_kernel<<<(units_ + 255) / 256, 256, 0, stream>>>(o_[call % sets_].as<uint4>(), units_, 0u);
    DCPSIM_CUDA(cudaGetLastError());
  }

 private:
  OpShape s_;
  int units_ = 0, sets_ = 1;
  std::vector<DeviceBuffer> o_;
};

}  // namespace

std::unique_ptr<BenchOp> make_touch_bench(const OpShape& s, std::uint64_t seed) {
  return std::make_unique<TouchBench>(s, seed);
}

std::unique_ptr<BenchOp> make_empty_bench(const OpShape&, std::uint64_t) {
  return std::make_unique<EmptyBench>();
}

std::unique_ptr<BenchOp> make_copy_bench(const OpShape& s, std::uint64_t seed) {
  return std::make_unique<CopyBench>(s, seed);
}

}  // namespace dcpsim::hw::ops
