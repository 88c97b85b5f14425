// Packed all-to-all: the byte layout of SPEC, a bit-exact LSE (NaN payloads and infinities included), the
// exchange as a pure permutation, and unpacking.
#include "dcpsim/models/a2a_pack.h"

#include <bit>
#include <cmath>
#include <limits>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "dcpsim/error.h"
#include "dcpsim/models/dtype.h"

namespace dcpsim::models {
namespace {

// B=2, H=4, D=3 with O(b,h,d) = b·100 + h·10 + d (exact in every dtype) and a chosen LSE bit pattern each.
Partial make_partial(const std::vector<std::uint32_t>& lse_bits) {
  Partial p{OutLayout::dense(2, 4, 3), std::vector<double>(24), LseLayout::dense(2, 4),
            std::vector<double>(8)};
  for (int b = 0; b < 2; ++b) {
    for (int h = 0; h < 4; ++h) {
      for (int d = 0; d < 3; ++d) p.out[p.out_layout.index(b, h, d)] = b * 100 + h * 10 + d;
      p.lse[p.lse_layout.index(b, h)] = static_cast<double>(fp32_value(lse_bits[b * 4 + h]));
    }
  }
  return p;
}

const std::vector<std::uint32_t> kLseBits = {
    0x3f800000u,  // 1.0
    0x7f800000u,  // +inf
    0xff800000u,  // -inf
    0x7fc12345u,  // quiet NaN with payload
    0xffe00001u,  // negative quiet NaN with payload
    0x00000001u,  // smallest fp32 subnormal
    0xc2f6e979u,  // -123.456
    0x80000000u,  // -0
};

std::uint16_t lane16(const A2aBuffer& b, std::int64_t element) {
  return static_cast<std::uint16_t>(b.bytes[element * 2] | (b.bytes[element * 2 + 1] << 8));
}

TEST(A2aPack, SixteenBitLayoutMatchesSpec) {
  const A2aBuffer buf = pack_a2a(make_partial(kLseBits), 2, DType::kBF16);
  EXPECT_EQ(buf.lanes(), 5);                                                 // D + 2
  EXPECT_EQ(buf.bytes.size(), static_cast<std::size_t>(2 * 2 * 2 * 5 * 2));  // [N][B][H/N][D+2] bf16
  // Destination 1, row 1, local head 0 = global head 2: O = 120, 121, 122, LSE 0xc2f6e979 low half first.
  const std::int64_t at = buf.element_index(1, 1, 0, 0);
  EXPECT_EQ(at, ((1 * 2 + 1) * 2 + 0) * 5);
  EXPECT_EQ(lane16(buf, at), bf16_bits(120.0));
  EXPECT_EQ(lane16(buf, at + 2), bf16_bits(122.0));
  EXPECT_EQ(lane16(buf, at + 3), 0xe979);
  EXPECT_EQ(lane16(buf, at + 4), 0xc2f6);
}

TEST(A2aPack, Fp32LayoutHasOneLseLane) {
  const A2aBuffer buf = pack_a2a(make_partial(kLseBits), 4, DType::kF32);
  EXPECT_EQ(buf.lanes(), 4);
  const std::int64_t at = buf.element_index(3, 0, 0, 3) * 4;  // head 3 of row 0: LSE 0x7fc12345
  const std::uint32_t bits = buf.bytes[at] | (buf.bytes[at + 1] << 8) | (buf.bytes[at + 2] << 16) |
                             (static_cast<std::uint32_t>(buf.bytes[at + 3]) << 24);
  EXPECT_EQ(bits, 0x7fc12345u);
}

TEST(A2aPack, LseBitsSurvivePackExchangeUnpack) {
  for (DType dtype : {DType::kBF16, DType::kF16, DType::kF32}) {
    std::vector<A2aBuffer> send;
    for (int r = 0; r < 2; ++r) {
      std::vector<std::uint32_t> bits = kLseBits;
      std::rotate(bits.begin(), bits.begin() + 3 * r, bits.end());  // different patterns on each rank
      send.push_back(pack_a2a(make_partial(bits), 2, dtype));
    }
    const std::vector<A2aBuffer> recv = all_to_all(send);
    for (int dest = 0; dest < 2; ++dest) {
      for (int src = 0; src < 2; ++src) {
        std::vector<std::uint32_t> bits = kLseBits;
        std::rotate(bits.begin(), bits.begin() + 3 * src, bits.end());
        const Partial p = unpack_a2a(recv[dest], src);
        for (int b = 0; b < 2; ++b) {
          for (int hl = 0; hl < 2; ++hl) {
            const int h = dest * 2 + hl;
            EXPECT_EQ(fp32_bits(static_cast<float>(p.l(b, hl))), bits[b * 4 + h]) << to_string(dtype);
            for (int d = 0; d < 3; ++d) EXPECT_EQ(p.o(b, hl, d), b * 100 + h * 10 + d);
          }
        }
      }
    }
  }
}

TEST(A2aPack, ExchangeIsAPurePermutationOfBlocks) {
  std::vector<A2aBuffer> send;
  for (int r = 0; r < 3; ++r) {
    A2aBuffer b{DType::kBF16, 3, 1, 1, 2, std::vector<std::uint8_t>(3 * 4 * 2)};
    for (std::size_t i = 0; i < b.bytes.size(); ++i) b.bytes[i] = static_cast<std::uint8_t>(r * 64 + i);
    send.push_back(b);
  }
  const std::vector<A2aBuffer> recv = all_to_all(send);
  const std::size_t block = 8;
  for (int r = 0; r < 3; ++r) {
    for (int n = 0; n < 3; ++n) {
      EXPECT_TRUE(std::equal(recv[r].bytes.begin() + n * block, recv[r].bytes.begin() + (n + 1) * block,
                             send[n].bytes.begin() + r * block));
    }
  }
  send[1].dim = 3;
  EXPECT_THROW(all_to_all(send), InputError);
}

TEST(A2aPack, ValuesAreRoundedToTheBufferType) {
  Partial p = make_partial(kLseBits);
  p.out[0] = 1.0 + std::ldexp(1.0, -9);  // rounds to 1.0 in bf16, kept in fp16
  EXPECT_EQ(a2a_value(pack_a2a(p, 1, DType::kBF16), 0, 0, 0, 0), 1.0);
  EXPECT_EQ(a2a_value(pack_a2a(p, 1, DType::kF16), 0, 0, 0, 0), 1.0 + std::ldexp(1.0, -9));
  const A2aBuffer f64 = pack_a2a(p, 2, DType::kF64);
  EXPECT_EQ(f64.lanes(), 4);
  EXPECT_EQ(std::bit_cast<std::uint64_t>(a2a_lse(f64, 0, 0, 0)), std::bit_cast<std::uint64_t>(p.l(0, 0)));
}

TEST(A2aPack, ImpossibleRequestsThrow) {
  const Partial p = make_partial(kLseBits);
  try {
    pack_a2a(p, 3, DType::kBF16);
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("heads = 4 is not divisible by dcp = 3"));
  }
  EXPECT_THROW(pack_a2a(p, 0, DType::kBF16), InputError);
  EXPECT_THROW(unpack_a2a(pack_a2a(p, 2, DType::kBF16), 2), InputError);
}

}  // namespace
}  // namespace dcpsim::models
