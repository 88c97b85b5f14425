// bf16/fp16/fp32 emulation: round-to-nearest-even, specials, subnormals and bit patterns, checked against
// values worked out from the formats' definitions and exhaustively over every 16-bit pattern.
#include "dcpsim/models/dtype.h"

#include <bit>
#include <cmath>
#include <limits>

#include <gtest/gtest.h>

namespace dcpsim::models {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

TEST(Dtype, Bf16KnownPatterns) {
  EXPECT_EQ(bf16_bits(1.0), 0x3f80);
  EXPECT_EQ(bf16_bits(-2.0), 0xc000);
  EXPECT_EQ(bf16_bits(0.0), 0x0000);
  EXPECT_EQ(bf16_bits(-0.0), 0x8000);
  EXPECT_EQ(bf16_bits(kInfinity), 0x7f80);
  EXPECT_EQ(bf16_bits(-kInfinity), 0xff80);
  EXPECT_EQ(bf16_bits(std::ldexp(1.0, -133)), 0x0001);  // smallest subnormal 2^-133
}

TEST(Dtype, Bf16RoundsToNearestEven) {
  const double ulp = std::ldexp(1.0, -7);                             // spacing of bf16 in [1, 2)
  EXPECT_EQ(round_to(DType::kBF16, 1.0 + ulp / 2), 1.0);              // tie to even (1.0)
  EXPECT_EQ(round_to(DType::kBF16, 1.0 + 1.5 * ulp), 1.0 + 2 * ulp);  // tie to even (2 ulp)
  EXPECT_EQ(round_to(DType::kBF16, 1.0 + ulp / 2 + 1e-12), 1.0 + ulp);
  EXPECT_EQ(round_to(DType::kBF16, 1.0 + ulp / 2 - 1e-12), 1.0);
}

TEST(Dtype, NoDoubleRoundingThroughFp32) {
  // Just above the bf16 midpoint by less than half an fp32 ulp: rounding through fp32 would land on the tie
  // and go to even (down); a single rounding goes up.
  const double x = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -30);
  EXPECT_EQ(round_to(DType::kBF16, x), 1.0 + std::ldexp(1.0, -7));
  EXPECT_EQ(round_to(DType::kBF16, static_cast<double>(static_cast<float>(x))), 1.0);
}

TEST(Dtype, OverflowAndUnderflow) {
  const double bf16_max = std::ldexp(2.0 - std::ldexp(1.0, -7), 127);
  EXPECT_EQ(round_to(DType::kBF16, bf16_max), bf16_max);
  EXPECT_EQ(round_to(DType::kBF16, bf16_max * (1 + std::ldexp(1.0, -9))), bf16_max);  // below half an ulp
  EXPECT_EQ(round_to(DType::kBF16, bf16_max * (1 + std::ldexp(1.0, -8))), kInfinity);
  EXPECT_EQ(round_to(DType::kF16, 65504.0), 65504.0);
  EXPECT_EQ(round_to(DType::kF16, 65519.0), 65504.0);
  EXPECT_EQ(round_to(DType::kF16, 65520.0), kInfinity);  // the tie with 65536 rounds to even = overflow
  EXPECT_EQ(round_to(DType::kF16, -70000.0), -kInfinity);
  EXPECT_EQ(round_to(DType::kF16, std::ldexp(1.0, -25)), 0.0);                   // tie with 0: even
  EXPECT_EQ(round_to(DType::kF16, std::ldexp(1.5, -25)), std::ldexp(1.0, -24));  // smallest subnormal
  EXPECT_EQ(round_to(DType::kF16, std::ldexp(3.0, -25)), std::ldexp(2.0, -24));  // tie 1.5 -> 2
  EXPECT_EQ(round_to(DType::kF32, 1e39), kInfinity);
  EXPECT_EQ(round_to(DType::kF32, std::ldexp(1.0, -150)), 0.0);
  EXPECT_EQ(round_to(DType::kF32, std::ldexp(1.0, -149)), std::ldexp(1.0, -149));
  EXPECT_TRUE(std::signbit(round_to(DType::kBF16, -1e-300)));
}

TEST(Dtype, Fp16KnownPatterns) {
  EXPECT_EQ(fp16_bits(1.0), 0x3c00);
  EXPECT_EQ(fp16_bits(-2.5), 0xc100);
  EXPECT_EQ(fp16_bits(65504.0), 0x7bff);
  EXPECT_EQ(fp16_bits(std::ldexp(1.0, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(fp16_bits(std::ldexp(1.0, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(fp16_bits(std::ldexp(1023.0, -24)), 0x03ff);
  EXPECT_EQ(fp16_bits(-kInfinity), 0xfc00);
  EXPECT_EQ(fp16_bits(-0.0), 0x8000);
}

TEST(Dtype, NaNStaysNaNWithPayload) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(std::isnan(round_to(DType::kBF16, nan)));
  EXPECT_TRUE(std::isnan(round_to(DType::kF16, nan)));
  EXPECT_TRUE(std::isnan(round_to(DType::kF32, nan)));
  EXPECT_EQ(bf16_bits(nan) & 0x7fc0, 0x7fc0);
  EXPECT_EQ(fp16_bits(nan) & 0x7e00, 0x7e00);
  EXPECT_EQ(bf16_bits(-nan) & 0x8000, 0x8000);
  // A payload in the high mantissa bits survives bf16 -> double -> bf16.
  EXPECT_EQ(bf16_bits(bf16_value(0x7fd5)), 0x7fd5);
  EXPECT_EQ(fp16_bits(fp16_value(0xfe55)), 0xfe55);
}

TEST(Dtype, EveryBf16AndFp16PatternRoundTrips) {
  for (std::uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const auto b = static_cast<std::uint16_t>(bits);
    const double vb = bf16_value(b);
    const double vh = fp16_value(b);
    if (std::isnan(vb)) {
      EXPECT_TRUE(std::isnan(round_to(DType::kBF16, vb)));
      EXPECT_EQ(bf16_bits(vb), b | 0x0040) << std::hex << bits;  // quietened, payload kept
    } else {
      ASSERT_EQ(bf16_bits(vb), b) << std::hex << bits;
      ASSERT_EQ(round_to(DType::kBF16, vb), vb);
    }
    if (std::isnan(vh)) {
      EXPECT_EQ(fp16_bits(vh), b | 0x0200) << std::hex << bits;
    } else {
      ASSERT_EQ(fp16_bits(vh), b) << std::hex << bits;
      ASSERT_EQ(round_to(DType::kF16, vh), vh);
    }
  }
}

TEST(Dtype, MidpointsBetweenNeighboursRoundToTheEvenOne) {
  // For every pair of adjacent positive finite values the midpoint goes to the one with the even pattern, and
  // anything off the midpoint goes to the nearer one (normal, subnormal and binade-crossing pairs alike).
  struct Case {
    DType type;
    double (*value)(std::uint16_t);
    std::uint16_t max_pattern;
  };
  for (const Case& c : {Case{DType::kF16, fp16_value, 0x7bff}, Case{DType::kBF16, bf16_value, 0x7f7f}}) {
    for (std::uint16_t bits = 0; bits < c.max_pattern; ++bits) {
      const double lo = c.value(bits), hi = c.value(static_cast<std::uint16_t>(bits + 1));
      const double mid = (lo + hi) / 2, nudge = (hi - lo) / 1024;
      ASSERT_EQ(round_to(c.type, mid), bits % 2 == 0 ? lo : hi) << bits;
      ASSERT_EQ(round_to(c.type, mid - nudge), lo) << bits;
      ASSERT_EQ(round_to(c.type, mid + nudge), hi) << bits;
      ASSERT_EQ(round_to(c.type, -(mid + nudge)), -hi) << bits;
    }
  }
}

TEST(Dtype, Fp32MatchesHardwareConversion) {
  for (double x : {0.1, -3.3333333333, 1e-40, 6.02214076e23, 1.0 + std::ldexp(1.0, -24)}) {
    EXPECT_EQ(round_to(DType::kF32, x), static_cast<double>(static_cast<float>(x))) << x;
  }
  EXPECT_EQ(fp32_bits(1.0f), 0x3f800000u);
  EXPECT_EQ(fp32_value(0xff800000u), -std::numeric_limits<float>::infinity());
}

TEST(Dtype, RepresentableAndUnitRoundoff) {
  const double v[] = {1.0, 0.5, -3.0};
  const double w[] = {1.0, 0.1};
  EXPECT_TRUE(representable(DType::kBF16, v, 3));
  EXPECT_FALSE(representable(DType::kBF16, w, 2));
  EXPECT_TRUE(representable(DType::kF64, w, 2));
  EXPECT_EQ(unit_roundoff(DType::kBF16), std::ldexp(1.0, -8));
  EXPECT_EQ(unit_roundoff(DType::kF16), std::ldexp(1.0, -11));
  EXPECT_EQ(unit_roundoff(DType::kF32), std::ldexp(1.0, -24));
  for (double x = 0.3; x < 1e6; x *= 3.7) {
    EXPECT_LE(std::fabs(round_to(DType::kBF16, x) - x), unit_roundoff(DType::kBF16) * x);
  }
}

}  // namespace
}  // namespace dcpsim::models
