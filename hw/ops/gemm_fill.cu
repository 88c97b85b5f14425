// The GEMM sweep's input fill (gemm_fill.h).
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include "cuda_check.h"
#include "fill_hash.h"
#include "gemm_fill.h"

namespace dcpsim::hw::ops {
namespace {

template <typename T>
__global__ void fill_kernel(T* out, std::int64_t n, float a, std::uint64_t seed) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    out[i] = T(static_cast<float>(fill_value(seed, static_cast<std::uint64_t>(i), a)));
  }
}

template <typename T>
void launch(void* ptr, std::int64_t n, float a, std::uint64_t seed, cudaStream_t stream) {
  if (n <= 0) return;
  const int threads = 256;
  const auto blocks = static_cast<unsigned>(std::min<std::int64_t>((n + threads - 1) / threads, 65535));
  fill_kernel<T><<<blocks, threads, 0, stream>>>(static_cast<T*>(ptr), n, a, seed);
  DCPSIM_CUDA(cudaGetLastError());
}

}  // namespace

void launch_fill_fp8(void* ptr, std::int64_t n, float a, std::uint64_t seed, cudaStream_t stream) {
  launch<__nv_fp8_e4m3>(ptr, n, a, seed, stream);
}

void launch_fill_bf16(void* ptr, std::int64_t n, float a, std::uint64_t seed, cudaStream_t stream) {
  launch<__nv_bfloat16>(ptr, n, a, seed, stream);
}

}  // namespace dcpsim::hw::ops
