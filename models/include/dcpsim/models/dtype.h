#pragma once
// Element-type emulation on the CPU: rounding fp64/fp32 values to bf16, fp16 and fp32 (round-to-nearest-even,
// NaN stays NaN, overflow goes to infinity, subnormals are kept), and the bit patterns of those formats. The
// reference stores every tensor as double: each bf16/fp16/fp32 value is exactly representable there, so "a
// bf16 tensor" is a double tensor whose values all survive round_to(kBF16, x) unchanged.
#include <cstdint>

#include "dcpsim/models/types.h"

namespace dcpsim::models {

// Bit patterns. Conversions to 16-bit formats round to nearest even, directly from the double (no double
// rounding through fp32). NaN maps to a quiet NaN keeping the sign and the high payload bits that fit.
std::uint16_t bf16_bits(double x);
std::uint16_t fp16_bits(double x);
double bf16_value(std::uint16_t bits);
double fp16_value(std::uint16_t bits);
std::uint32_t fp32_bits(float x);
float fp32_value(std::uint32_t bits);

// The value of x after a store to `type` (kF64: x itself; kFP8E4M3: saturating at ±448, subnormals down to
// 2^-9, NaN kept).
double round_to(DType type, double x);

// True when every value in [data, data+count) is unchanged by round_to(type, .).
bool representable(DType type, const double* data, std::int64_t count);

// Unit roundoff of a type: 2^-4 (fp8 e4m3), 2^-8 (bf16), 2^-11 (fp16), 2^-24 (fp32), 2^-53 (fp64). A rounded
// value differs from the exact one by at most unit_roundoff · |exact| (outside the subnormal range).
double unit_roundoff(DType type);

}  // namespace dcpsim::models
