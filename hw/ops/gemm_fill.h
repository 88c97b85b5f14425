#pragma once
// Inputs of the GEMM sweep (hw/src/gemm_sweep.cc): values of the shared hash generator (fill_hash.h) stored
// as fp8 e4m3 (|x| <= a, a well inside e4m3's range) or bf16.
#include <cuda_runtime.h>

#include <cstdint>

namespace dcpsim::hw::ops {

void launch_fill_fp8(void* ptr, std::int64_t n, float a, std::uint64_t seed, cudaStream_t stream);
void launch_fill_bf16(void* ptr, std::int64_t n, float a, std::uint64_t seed, cudaStream_t stream);

}  // namespace dcpsim::hw::ops
