// The direct merge's window layout and the NCCL version rule (dcpsim/hw/direct_protocol.h): plain arithmetic,
// so these run in CPU-only builds too. Every slot of every (parity, source, row, head) must be distinct,
// inside its region, 16-byte aligned for vector stores, and no region may overlap another.
#include <gtest/gtest.h>

#include <set>

#include "dcpsim/hw/direct_protocol.h"

namespace dcpsim::hw {
namespace {

TEST(DirectLayout, SlotsAreDistinctAlignedAndInsideTheirRegions) {
  for (const DirectLayout l :
       {DirectLayout{3, 17, 32, 512, 2}, DirectLayout{5, 17, 20, 128, 2}, DirectLayout{6, 17, 16, 512, 4},
        DirectLayout{1, 1, 1, 7, 2}, DirectLayout{72, 3, 2, 128, 2}}) {
    SCOPED_TRACE("N=" + std::to_string(l.dcp) + " B=" + std::to_string(l.rows) +
                 " J=" + std::to_string(l.heads) + " D=" + std::to_string(l.dim));
    EXPECT_EQ(l.o_region() % DirectLayout::kAlign, 0u);
    EXPECT_EQ(l.lse_region() % DirectLayout::kAlign, 0u);
    EXPECT_GE(l.o_region(), l.flag(1, l.dcp - 1) + 8);  // flags end before the O slots
    std::set<std::size_t> flags, o, lse;
    for (int par = 0; par < 2; ++par)
      for (int src = 0; src < l.dcp; ++src) {
        flags.insert(l.flag(par, src));
        for (int b = 0; b < l.rows; ++b)
          for (int j = 0; j < l.heads; ++j) {
            const std::size_t at = l.o(par, src, b, j);
            ASSERT_GE(at, l.o_region());
            ASSERT_LE(at + std::size_t(l.dim) * l.elem_bytes, l.lse_region());
            if (std::size_t(l.dim) * l.elem_bytes % 16 == 0) {
              ASSERT_EQ(at % 16, 0u);
            }
            o.insert(at);
            const std::size_t at_l = l.lse(par, src, b, j);
            ASSERT_GE(at_l, l.lse_region());
            ASSERT_LE(at_l + 4, l.bytes());
            lse.insert(at_l);
          }
      }
    const std::size_t slots = 2 * l.entries();
    EXPECT_EQ(flags.size(), 2u * l.dcp);
    EXPECT_EQ(o.size(), slots);
    EXPECT_EQ(lse.size(), slots);
    // The two buffers are disjoint: the highest slot of buffer 0 ends before the lowest of buffer 1.
    EXPECT_LE(l.o(0, l.dcp - 1, l.rows - 1, l.heads - 1) + std::size_t(l.dim) * l.elem_bytes,
              l.o(1, 0, 0, 0));
  }
}

// The chunk flags: one per (parity, source, chunk), distinct from each other and from the per-source flags,
// all inside the flag region (which is what the host zeroes), and enough chunks for every pair of every row.
TEST(DirectLayout, ChunkFlagsAreDistinctAndInsideTheFlagRegion) {
  for (const DirectLayout l :
       {DirectLayout{3, 17, 32, 512, 2}, DirectLayout{6, 17, 16, 512, 2}, DirectLayout{1, 1, 1, 7, 2},
        DirectLayout{8, 1, 16, 512, 2}, DirectLayout{72, 3, 2, 128, 2}, DirectLayout{5, 9, 3, 128, 2}}) {
    SCOPED_TRACE("N=" + std::to_string(l.dcp) + " B=" + std::to_string(l.rows) +
                 " J=" + std::to_string(l.heads));
    const int chunks = l.chunks(l.rows);
    EXPECT_GE(chunks * DirectLayout::kChunkPairs, l.rows * l.heads);
    EXPECT_LT((chunks - 1) * DirectLayout::kChunkPairs, l.rows * l.heads);
    EXPECT_LE(l.chunks(l.rows - 1), chunks);  // fewer valid rows never need more flags
    EXPECT_EQ(l.chunks(0), 0);
    std::set<std::size_t> at;
    for (int par = 0; par < 2; ++par)
      for (int src = 0; src < l.dcp; ++src) {
        at.insert(l.flag(par, src));
        for (int c = 0; c < chunks; ++c) {
          const std::size_t f = l.chunk_flag(par, src, c);
          ASSERT_EQ(f % 8, 0u);
          ASSERT_GE(f, l.source_flags_bytes());
          ASSERT_LE(f + 8, l.flags_bytes());
          at.insert(f);
        }
      }
    EXPECT_EQ(at.size(), 2u * l.dcp * (1 + chunks));
    EXPECT_LE(l.flags_bytes(), l.o_region());
    EXPECT_EQ(l.o_region() % DirectLayout::kAlign, 0u);
  }
}

TEST(DirectLayout, HeadsGoToTheirBlockOwner) {
  const DirectLayout l{4, 2, 8, 128, 2};  // H = 32
  for (int h = 0; h < 32; ++h) {
    EXPECT_EQ(l.owner_of(h), h / 8);
    EXPECT_EQ(l.local_head(h), h % 8);
    EXPECT_EQ(l.owner_of(h) * l.heads + l.local_head(h), h);
  }
  EXPECT_EQ(DirectLayout::parity(1), 1);  // the first step's epoch
  EXPECT_EQ(DirectLayout::parity(2), 0);
  EXPECT_NE(DirectLayout::parity(41), DirectLayout::parity(42));
}

TEST(FlashInferDcpLayout, MatchesFlashInfersWorkspaceFormula) {
  // flashinfer/comm/dcp_lse_reduce.py: payload = (16 + 2·N·4 + 15) // 16 · 16, size = payload +
  // 2·N·max_tokens·local_heads·(D·itemsize + 4).
  for (int n : {1, 2, 3, 6, 8, 64}) {
    const FlashInferDcpLayout l{n, 17 * 16, 512, 2};
    const std::size_t payload = (16 + 2 * std::size_t(n) * 4 + 15) / 16 * 16;
    EXPECT_EQ(l.payload_offset(), payload);
    EXPECT_EQ(l.bytes(), payload + 2 * std::size_t(n) * 17 * 16 * (512 * 2 + 4));
    EXPECT_EQ(l.out_region() % 16, 0u);
    EXPECT_GE(l.payload_offset(), l.signal_offset() + 2 * std::size_t(n) * 4);
  }
}

TEST(NcclDeviceApi, AcceptsOnly228WithTheKnownWindowLayout) {
  EXPECT_EQ(nccl_device_api_mismatch(22809, 22803), "");  // CUDA 13's headers, PyTorch's library
  EXPECT_EQ(nccl_device_api_mismatch(22803, 22809), "");
  EXPECT_NE(nccl_device_api_mismatch(22809, 22802), "");  // before the layout dcpsim was checked against
  EXPECT_NE(nccl_device_api_mismatch(22809, 22900), "");  // a later minor release may reorder the window
  EXPECT_NE(nccl_device_api_mismatch(22709, 22809), "");  // headers without the device API
  const std::string why = nccl_device_api_mismatch(22809, 22901);
  EXPECT_NE(why.find("2.28.9"), std::string::npos) << why;
  EXPECT_NE(why.find("2.29.1"), std::string::npos) << why;
}

}  // namespace
}  // namespace dcpsim::hw
