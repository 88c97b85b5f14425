// The device-copy ceiling every bandwidth figure is compared with: one large cudaMemcpy device to device,
// counting the bytes read plus the bytes written.
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
    src_ = DeviceBuffer(std::size_t(bytes_));
    dst_ = DeviceBuffer(std::size_t(bytes_));
    launch_fill_uniform(src_.get(), bytes_ / 2, Elem::kBF16, 1.f, seed, 0, nullptr);  // never time zeros
    DCPSIM_CUDA(cudaDeviceSynchronize());
  }
  std::string label() const override { return std::to_string(bytes_ >> 20) + " MiB D2D"; }
  double bytes() const override { return 2.0 * double(bytes_); }
  void launch(int, cudaStream_t stream) override {
    DCPSIM_CUDA(
        cudaMemcpyAsync(dst_.get(), src_.get(), std::size_t(bytes_), cudaMemcpyDeviceToDevice, stream));
  }

 private:
  std::int64_t bytes_;
  DeviceBuffer src_, dst_;
};

}  // namespace

std::unique_ptr<BenchOp> make_copy_bench(const OpShape& s, std::uint64_t seed) {
  return std::make_unique<CopyBench>(s, seed);
}

}  // namespace dcpsim::hw::ops
