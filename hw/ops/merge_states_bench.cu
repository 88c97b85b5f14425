// ---- benchmark descriptor "merge-states-flashinfer": FlashInfer's MergeStates (flashinfer_merge_states.cu)
// on the shapes of dcpsim's "combine" (a2a_combine.cu): N states of [B][H/N][D] per row merged into
// [B][H/N][D] and its LSE. FlashInfer takes the states row-major ([B][N][H/N][D], LSE [B][N][H/N], base 2)
// where dcpsim's slots are source-major; the bytes are the same (every input read once, O and the LSE written
// once), and the inputs rotate over enough sets to exceed L2 as dcpsim's do ----
#include <string>
#include <vector>

#include "bench_op.h"
#include "cuda_check.h"
#include "dcpsim/error.h"
#include "device_buffer.h"
#include "flashinfer_kernels.h"
#include "ops.h"

namespace dcpsim::hw::ops {

#if defined(DCPSIM_WITH_FLASHINFER)
namespace {

class MergeStatesBench final : public BenchOp {
 public:
  MergeStatesBench(const OpShape& s, std::uint64_t seed) : s_(s), elem_(elem_of(s.dtype)) {
    if (s.dcp < 1 || s.rows < 1 || s.heads < 1 || s.dim < 1)
      throw InputError("merge-states-flashinfer bench: N, B, H and D must be >= 1");
    if (s.heads % s.dcp != 0) throw InputError("merge-states-flashinfer bench: H must be divisible by N");
    if (elem_ == Elem::kF32) throw InputError("merge-states-flashinfer bench: --dtype must be bf16 or fp16");
    j_ = s.heads / s.dcp;
    const std::int64_t v_elems = std::int64_t(s.dcp) * s.rows * j_ * s.dim;
    const std::int64_t s_elems = std::int64_t(s.dcp) * s.rows * j_;
    sets_ = rotation_sets(double(v_elems) * 2 + double(s_elems) * 4);
    for (int i = 0; i < sets_; ++i) {
      v_.emplace_back(std::size_t(v_elems) * 2);
      launch_fill_uniform(v_.back().get(), v_elems, elem_, 4.f, seed + i, 0, nullptr);
      lse_.emplace_back(std::size_t(s_elems) * 4);
      launch_fill_uniform(lse_.back().get(), s_elems, Elem::kF32, 8.f, seed + 100 + i, 0, nullptr);
    }
    out_ = DeviceBuffer(std::size_t(s.rows) * j_ * s.dim * 2);
    merged_ = DeviceBuffer(std::size_t(s.rows) * j_ * 4);
    DCPSIM_CUDA(cudaDeviceSynchronize());
  }
  std::string label() const override {
    return "N=" + std::to_string(s_.dcp) + " B=" + std::to_string(s_.rows) + " H/N=" + std::to_string(j_) +
           " D=" + std::to_string(s_.dim);
  }
  double bytes() const override {
    const double pairs = double(s_.rows) * j_;
    return s_.dcp * pairs * (s_.dim * 2 + 4) + pairs * (s_.dim * 2 + 4);
  }
  void launch(int call, cudaStream_t stream) override {
    flashinfer_kernels::MergeStatesRun r;
    r.fp16 = elem_ == Elem::kF16;
    r.v = v_[call % sets_].get();
    r.s = lse_[call % sets_].as<float>();
    r.v_merged = out_.get();
    r.s_merged = merged_.as<float>();
    r.states = s_.dcp;
    r.rows = s_.rows;
    r.heads = j_;
    r.dim = s_.dim;
    flashinfer_kernels::merge_states_run(r, stream);
  }

 private:
  OpShape s_;
  Elem elem_;
  int j_ = 1, sets_ = 1;
  std::vector<DeviceBuffer> v_, lse_;
  DeviceBuffer out_, merged_;
};

}  // namespace

std::unique_ptr<BenchOp> make_merge_states_flashinfer_bench(const OpShape& s, std::uint64_t seed) {
  return std::make_unique<MergeStatesBench>(s, seed);
}
#else
std::unique_ptr<BenchOp> make_merge_states_flashinfer_bench(const OpShape&, std::uint64_t) {
  throw InputError(
      "merge-states-flashinfer: this dcpsim was built without FlashInfer (-DDCPSIM_WITH_FLASHINFER=ON)");
}
#endif

}  // namespace dcpsim::hw::ops
