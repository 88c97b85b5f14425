#pragma once
// CUDA and NCCL error checks: a failed call becomes dcpsim::RuntimeError naming the call, the error and
// where.
#include <cuda_runtime.h>
#include <nccl.h>

#include <string>

#include "dcpsim/error.h"

namespace dcpsim::hw {

[[noreturn]] inline void throw_cuda(cudaError_t e, const char* what, const char* file, int line) {
  throw RuntimeError(std::string("CUDA error ") + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) +
                     ") in " + what + " at " + file + ":" + std::to_string(line));
}

[[noreturn]] inline void throw_nccl(ncclResult_t e, const char* what, const char* file, int line) {
  throw RuntimeError(std::string("NCCL error ") + ncclGetErrorString(e) + " in " + what + " at " + file +
                     ":" + std::to_string(line));
}

}  // namespace dcpsim::hw

#define DCPSIM_CUDA(call)                                                                         \
  do {                                                                                            \
    cudaError_t dcpsim_e_ = (call);                                                               \
    if (dcpsim_e_ != cudaSuccess) ::dcpsim::hw::throw_cuda(dcpsim_e_, #call, __FILE__, __LINE__); \
  } while (0)

// After a kernel launch: launch-configuration errors surface here, not at the next call.
#define DCPSIM_CUDA_LAUNCHED(name) DCPSIM_CUDA(cudaGetLastError())

#define DCPSIM_NCCL(call)                                                                         \
  do {                                                                                            \
    ncclResult_t dcpsim_r_ = (call);                                                              \
    if (dcpsim_r_ != ncclSuccess) ::dcpsim::hw::throw_nccl(dcpsim_r_, #call, __FILE__, __LINE__); \
  } while (0)
