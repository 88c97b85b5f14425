// FlashInfer's fused DCP merge as an operation of the runner (ops.h): checks what FlashInfer's kernel needs
// and hands plain pointers to the FlashInfer translation unit (flashinfer_dcp_merge.cu, behind
// flashinfer_kernels.h). Builds without FlashInfer's headers get a clear error instead.
#include <string>

#include "dcpsim/error.h"
#include "flashinfer_kernels.h"
#include "ops.h"

namespace dcpsim::hw::ops {

#if defined(DCPSIM_WITH_FLASHINFER)

bool flashinfer_dcp_merge_built() {
  return true;
}

void launch_flashinfer_dcp_merge(const FlashInferDcpArgs& a, cudaStream_t stream) {
  if (a.elem == Elem::kF32)
    throw InputError(
        "--strategy flashinfer-a2a: FlashInfer's fused merge takes bf16 or fp16 outputs, not fp32");
  if (a.dcp < 1 || a.heads % a.dcp != 0)
    throw InputError("--strategy flashinfer-a2a: H=" + std::to_string(a.heads) +
                     " is not divisible by N=" + std::to_string(a.dcp));
  if (a.dim * 2 % 16 != 0)
    throw InputError(
        "--strategy flashinfer-a2a: FlashInfer's fused merge needs D·2 bytes to be a multiple of 16");
  flashinfer_kernels::DcpMergeRun r;
  r.o = a.o;
  r.lse = a.lse;
  r.window = a.window;
  r.workspace = a.workspace;
  r.out = a.out;
  r.dcp = a.dcp;
  r.rank = a.rank;
  r.entries = a.rows * (a.heads / a.dcp);
  r.dim = a.dim;
  r.bf16 = a.elem == Elem::kBF16;
  r.lse_base_e = !a.base2;
  flashinfer_kernels::dcp_merge(r, stream);
}

#else

bool flashinfer_dcp_merge_built() {
  return false;
}

void launch_flashinfer_dcp_merge(const FlashInferDcpArgs&, cudaStream_t) {
  throw InputError(
      "--strategy flashinfer-a2a: this dcpsim was built without FlashInfer's headers "
      "(-DDCPSIM_WITH_FLASHINFER=ON)");
}

#endif

}  // namespace dcpsim::hw::ops
