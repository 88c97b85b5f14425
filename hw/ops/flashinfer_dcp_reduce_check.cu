// Build check only (target flashinfer_dcp_reduce_check, not part of the runner): FlashInfer's fused DCP
// all-to-all + LSE merge (flashinfer/comm/dcp_lse_reduce.cuh) compiles against NCCL 2.28's device API
// (nccl_device.h: ncclWindow_t, ncclGetLsaPointer). Running it needs what the runner does not set up yet: an
// NCCL symmetric window registered on every rank (ncclCommWindowRegister), a team inside one NVLink (LSA)
// domain, so at least two GPUs, and a cooperative launch. See hw/README.md.
#include <flashinfer/comm/dcp_lse_reduce.cuh>

namespace dcpsim::hw::ops::flashinfer_kernels {

// Takes the address of the kernel instantiations a bf16 runner would launch (base e and base 2, both merge
// distributions), so nvcc compiles them.
const void* dcp_lse_reduce_kernel(bool base_e, bool row_distributed) {
  namespace dcp = flashinfer::comm::dcp;
  if (base_e)
    return row_distributed ? reinterpret_cast<const void*>(dcp::FusedKernel<__nv_bfloat16, true, true>)
                           : reinterpret_cast<const void*>(dcp::FusedKernel<__nv_bfloat16, true, false>);
  return row_distributed ? reinterpret_cast<const void*>(dcp::FusedKernel<__nv_bfloat16, false, true>)
                         : reinterpret_cast<const void*>(dcp::FusedKernel<__nv_bfloat16, false, false>);
}

}  // namespace dcpsim::hw::ops::flashinfer_kernels
