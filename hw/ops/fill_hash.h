#pragma once
// The input generator shared by host and device: value(seed, index) = a·(2u − 1), u uniform in [0, 1) from
// one SplitMix64 finalisation of seed + index·golden. Counter-based, so any element is computed
// independently.
#include <cstdint>

#if defined(__CUDACC__)
#define DCPSIM_HD __host__ __device__ __forceinline__
#else
#define DCPSIM_HD inline
#endif

namespace dcpsim::hw::ops {

DCPSIM_HD std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

DCPSIM_HD double fill_value(std::uint64_t seed, std::uint64_t index, double a) {
  const std::uint64_t r = splitmix64(splitmix64(seed) + index * 0x9e3779b97f4a7c15ull);
  const double u = static_cast<double>(r >> 11) * (1.0 / 9007199254740992.0);  // 53 random bits
  return a * (2.0 * u - 1.0);
}

}  // namespace dcpsim::hw::ops
