// FlashInfer's MergeStates (flashinfer/attention/cascade.cuh), instantiated for bf16 and fp16 in and out: N
// attention states [B][N][H][D] with base-2 LSEs [B][N][H] merged into [B][H][D] and [B][H]. Only the
// benchmark comparison uses it (hw bench --op merge-states-flashinfer); dcpsim's own combine is
// a2a_combine.cu.
#include <flashinfer/attention/cascade.cuh>

#include <string>

#include "dcpsim/error.h"
#include "flashinfer_kernels.h"

namespace dcpsim::hw::ops::flashinfer_kernels {
namespace {

template <typename T>
cudaError_t merge(const MergeStatesRun& r, cudaStream_t stream) {
  return flashinfer::MergeStates<T, T>(
      static_cast<T*>(const_cast<void*>(r.v)), const_cast<float*>(r.s), static_cast<T*>(r.v_merged),
      r.s_merged, static_cast<std::uint32_t>(r.states), static_cast<std::uint32_t>(r.rows),
      static_cast<std::uint32_t>(r.heads), static_cast<std::uint32_t>(r.dim), stream);
}

}  // namespace

void merge_states_run(const MergeStatesRun& r, cudaStream_t stream) {
  cudaError_t e = cudaSuccess;
  try {
    e = r.fp16 ? merge<__half>(r, stream) : merge<__nv_bfloat16>(r, stream);
  } catch (const flashinfer::Error& err) {
    throw InputError(std::string("FlashInfer MergeStates: ") + err.what());
  }
  if (e != cudaSuccess) {
    (void)cudaGetLastError();  // a launch-configuration error is not sticky: leave nothing for the next check
    throw RuntimeError(std::string("FlashInfer MergeStates: ") + cudaGetErrorString(e));
  }
}

}  // namespace dcpsim::hw::ops::flashinfer_kernels
