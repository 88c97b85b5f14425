#pragma once
// Checked arithmetic and number checks for values that come from users: flags and files. Sizes, times and
// counts are 64-bit; an overflow or a NaN is an InputError naming what was being computed, never a wrapped
// or silently wrong number.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "dcpsim/error.h"

namespace dcpsim {

// Bounds on what dcpsim accepts from users (docs/SPEC.md, "Limits").
inline constexpr std::int64_t kMaxTimeNs = std::int64_t{1} << 62;  // ±146 years: sums of two never overflow
inline constexpr std::int64_t kMaxTokens = std::int64_t{1} << 40;  // 1.1e12 tokens in one request
inline constexpr int kMaxDcp = 1152;         // the largest NVLink domain (GB300 NVL576 x2)
inline constexpr int kMaxHeads = 1 << 16;    // query or KV heads on a rank
inline constexpr int kMaxHeadDim = 1 << 16;  // D and D_qk
inline constexpr int kMaxRows = 1 << 24;     // batch rows in one step

inline std::int64_t checked_mul(std::int64_t a, std::int64_t b, std::string_view what) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) {
    throw InputError(std::string(what) + ": " + std::to_string(a) + " x " + std::to_string(b) +
                     " does not fit in 64 bits");
  }
  return r;
}

inline std::int64_t checked_add(std::int64_t a, std::int64_t b, std::string_view what) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) {
    throw InputError(std::string(what) + ": " + std::to_string(a) + " + " + std::to_string(b) +
                     " does not fit in 64 bits");
  }
  return r;
}

inline std::int64_t checked_sub(std::int64_t a, std::int64_t b, std::string_view what) {
  std::int64_t r = 0;
  if (__builtin_sub_overflow(a, b, &r)) {
    throw InputError(std::string(what) + ": " + std::to_string(a) + " - " + std::to_string(b) +
                     " does not fit in 64 bits");
  }
  return r;
}

// A double that must become an int64 (e.g. seconds scaled to nanoseconds): finite and within
// [lo, hi], else an InputError naming `what`.
inline std::int64_t to_int64_checked(double v, std::string_view what, std::int64_t lo = 0,
                                     std::int64_t hi = std::numeric_limits<std::int64_t>::max()) {
  // 2^63 is exactly representable; anything at or above it does not fit.
  if (!std::isfinite(v) || v < static_cast<double>(lo) || v >= 9223372036854775808.0 ||
      std::llround(v) > hi) {
    throw InputError(std::string(what) + " = " + std::to_string(v) + " is out of range [" +
                     std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  return std::llround(v);
}

// A time in ns (or a duration) from a file: |v| <= kMaxTimeNs, so adding or subtracting two stays exact.
inline std::int64_t require_time_ns(std::int64_t v, std::string_view what) {
  if (v > kMaxTimeNs || v < -kMaxTimeNs) {
    throw InputError(std::string(what) + " = " + std::to_string(v) + " ns is outside +-" +
                     std::to_string(kMaxTimeNs) + " ns (146 years)");
  }
  return v;
}

// An integer from a file that must fit an int field in [lo, hi].
inline int to_int_checked(std::int64_t v, std::string_view what, int lo, int hi) {
  if (v < lo || v > hi) {
    throw InputError(std::string(what) + " = " + std::to_string(v) + " is outside [" + std::to_string(lo) +
                     ", " + std::to_string(hi) + "]");
  }
  return static_cast<int>(v);
}

// NaN is never a valid user number.
inline double require_not_nan(double v, std::string_view what) {
  if (std::isnan(v)) throw InputError(std::string(what) + " is NaN; a number is needed");
  return v;
}

}  // namespace dcpsim
