// Software rounding to bf16/fp16/fp32. A double is rounded to the target format in a single step (never
// through fp32 first): a generic routine for any value, and a bit-level fast path for the normal range.
#include "dcpsim/models/dtype.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

namespace dcpsim::models {
namespace {

struct Format {
  int precision;      // significand bits including the implicit one
  int emin;           // exponent of the smallest normal number
  int emax;           // exponent of the largest finite number
  double min_normal;  // 2^emin
  double max_finite;  // (2 − 2^(1−p))·2^emax
};

constexpr Format kBf16{8, -126, 127, 0x1p-126, 0x1.fep127};
constexpr Format kFp16{11, -14, 15, 0x1p-14, 65504.0};
constexpr Format kFp32{24, -126, 127, 0x1p-126, 0x1.fffffep127};
// e4m3fn (OCP FP8): no infinities, one NaN pattern per sign, largest finite 448.
constexpr Format kFp8E4m3{4, -6, 8, 0x1p-6, 448.0};

// Round-to-nearest-even of x into `f`; NaN is returned unchanged, overflow becomes ±inf, the subnormal range
// keeps the format's fixed quantum 2^(emin − p + 1).
double round_format(double x, const Format& f) {
  if (!std::isfinite(x) || x == 0.0) return x;
  const int exponent = std::max(std::ilogb(x), f.emin);
  const double quantum = std::ldexp(1.0, exponent - (f.precision - 1));
  // x / quantum is exact (a power-of-two scaling inside the double range); nearbyint rounds half to even
  // under the default rounding mode.
  const double rounded = std::nearbyint(x / quantum) * quantum;
  if (std::fabs(rounded) > f.max_finite) return std::copysign(std::numeric_limits<double>::infinity(), x);
  return rounded;
}

std::uint64_t double_bits(double x) {
  return std::bit_cast<std::uint64_t>(x);
}

// Fast path for the normal range: round-to-nearest-even on the double's bit pattern, keeping p − 1 stored
// bits (a carry out of the mantissa bumps the exponent; at most max_finite it cannot overflow). NaN, inf,
// overflow and the format's subnormal range take round_format.
double round_normal_bits(double x, const Format& f) {
  const double a = std::fabs(x);
  if (!(a >= f.min_normal) || !(a <= f.max_finite)) return round_format(x, f);
  const int drop = 52 - (f.precision - 1);
  const std::uint64_t bits = double_bits(x);
  const std::uint64_t half = (std::uint64_t{1} << (drop - 1)) - 1 + ((bits >> drop) & 1);
  return std::bit_cast<double>((bits + half) & ~((std::uint64_t{1} << drop) - 1));
}

// A quiet NaN with `mantissa_bits` stored bits: sign, all-ones exponent, the double's high payload bits.
std::uint16_t nan16(double x, int mantissa_bits, std::uint16_t exponent_mask) {
  const std::uint64_t bits = double_bits(x);
  const auto sign = static_cast<std::uint16_t>((bits >> 63) << 15);
  const auto payload =
      static_cast<std::uint16_t>((bits & ((std::uint64_t{1} << 52) - 1)) >> (52 - mantissa_bits));
  const auto quiet = static_cast<std::uint16_t>(1u << (mantissa_bits - 1));
  return static_cast<std::uint16_t>(sign | exponent_mask | quiet | payload);
}

}  // namespace

std::uint16_t bf16_bits(double x) {
  if (std::isnan(x)) return nan16(x, 7, 0x7f80);
  // The rounded value is exact in fp32, whose upper half is the bf16 pattern.
  const auto f = static_cast<float>(round_normal_bits(x, kBf16));
  return static_cast<std::uint16_t>(fp32_bits(f) >> 16);
}

std::uint16_t fp16_bits(double x) {
  if (std::isnan(x)) return nan16(x, 10, 0x7c00);
  const double r = round_normal_bits(x, kFp16);
  const auto sign = static_cast<std::uint16_t>(std::signbit(r) ? 0x8000 : 0);
  const double a = std::fabs(r);
  if (std::isinf(a)) return static_cast<std::uint16_t>(sign | 0x7c00);
  if (a < std::ldexp(1.0, kFp16.emin)) {  // zero or subnormal: a multiple of 2^-24
    return static_cast<std::uint16_t>(sign | static_cast<std::uint16_t>(std::ldexp(a, 24)));
  }
  const int e = std::ilogb(a);
  const auto mantissa = static_cast<std::uint16_t>(std::ldexp(a, 10 - e) - 1024.0);
  return static_cast<std::uint16_t>(sign | ((e + 15) << 10) | mantissa);
}

double bf16_value(std::uint16_t bits) {
  return fp32_value(static_cast<std::uint32_t>(bits) << 16);
}

double fp16_value(std::uint16_t bits) {
  const double sign = (bits & 0x8000) ? -1.0 : 1.0;
  const int exponent = (bits >> 10) & 0x1f;
  const int mantissa = bits & 0x3ff;
  if (exponent == 0x1f) {
    if (mantissa == 0) return sign * std::numeric_limits<double>::infinity();
    // Widen the payload into a double NaN so that fp16_bits() gives the same pattern back.
    const std::uint64_t nan = (std::uint64_t{bits & 0x8000u} << 48) | (std::uint64_t{0x7ff} << 52) |
                              (std::uint64_t{static_cast<std::uint64_t>(mantissa)} << 42);
    return std::bit_cast<double>(nan);
  }
  if (exponent == 0) return sign * std::ldexp(static_cast<double>(mantissa), -24);
  return sign * std::ldexp(static_cast<double>(mantissa + 1024), exponent - 25);
}

std::uint32_t fp32_bits(float x) {
  return std::bit_cast<std::uint32_t>(x);
}
float fp32_value(std::uint32_t bits) {
  return std::bit_cast<float>(bits);
}

double round_to(DType type, double x) {
  switch (type) {
    case DType::kF64:
      return x;
    case DType::kF32:
      // Inside the fp32 range the hardware conversion rounds to nearest even (subnormals included).
      if (std::fabs(x) <= static_cast<double>(std::numeric_limits<float>::max())) {
        return static_cast<double>(static_cast<float>(x));
      }
      return round_format(x, kFp32);
    case DType::kBF16:
      return round_normal_bits(x, kBf16);
    case DType::kF16:
      return round_normal_bits(x, kFp16);
    case DType::kFP8E4M3: {
      // Saturating, as the CUDA conversion the KV-cache writers use (__NV_SATFINITE): beyond ±448 (or ±inf)
      // the value becomes ±448; NaN stays NaN.
      if (std::isnan(x)) return x;
      const double r = round_format(std::clamp(x, -kFp8E4m3.max_finite, kFp8E4m3.max_finite), kFp8E4m3);
      return std::isinf(r) ? std::copysign(kFp8E4m3.max_finite, x) : r;
    }
  }
  return x;
}

bool representable(DType type, const double* data, std::int64_t count) {
  for (std::int64_t i = 0; i < count; ++i) {
    const double r = round_to(type, data[i]);
    if (!(r == data[i]) && !(std::isnan(r) && std::isnan(data[i]))) return false;
  }
  return true;
}

double unit_roundoff(DType type) {
  switch (type) {
    case DType::kF64:
      return std::ldexp(1.0, -53);
    case DType::kF32:
      return std::ldexp(1.0, -24);
    case DType::kBF16:
      return std::ldexp(1.0, -8);
    case DType::kF16:
      return std::ldexp(1.0, -11);
    case DType::kFP8E4M3:
      return std::ldexp(1.0, -4);
  }
  return 1.0;
}

}  // namespace dcpsim::models
