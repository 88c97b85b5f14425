// KV ownership: SPEC's examples, agreement with a brute-force walk over tokens, and the shard contents.
#include "dcpsim/models/sharding.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "dcpsim/error.h"

namespace dcpsim::models {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(Sharding, SpecExamples) {
  EXPECT_THAT(local_lengths(5, 2, 1), ElementsAre(3, 2));
  EXPECT_THAT(local_lengths(1, 4, 1), ElementsAre(1, 0, 0, 0));
  EXPECT_THAT(local_lengths(10, 4, 1), ElementsAre(3, 3, 2, 2));
  EXPECT_THAT(local_lengths(100, 4, 16), ElementsAre(32, 32, 20, 16));
  EXPECT_THAT(local_lengths(0, 3, 2), ElementsAre(0, 0, 0));
}

TEST(Sharding, FormulasMatchBruteForceOwnerLoop) {
  for (int dcp = 1; dcp <= 9; ++dcp) {
    for (int interleave : {1, 2, 3, 16, 64}) {
      for (std::int64_t context : {0, 1, 2, 7, 63, 64, 65, 100, 257, 1000}) {
        std::vector<std::int64_t> counted(dcp, 0);
        for (std::int64_t t = 0; t < context; ++t) {
          // Brute force: walk the round-robin of I-token chunks.
          const int owner = static_cast<int>((t / interleave) % dcp);
          ASSERT_EQ(owner_rank(t, dcp, interleave), owner);
          // Local positions are dense and in token order: the next free slot on the owner.
          ASSERT_EQ(local_position(t, dcp, interleave), counted[owner]) << "t=" << t;
          ASSERT_EQ(global_position(counted[owner], owner, dcp, interleave), t);
          ++counted[owner];
        }
        ASSERT_EQ(local_lengths(context, dcp, interleave), counted)
            << "S=" << context << " N=" << dcp << " I=" << interleave;
      }
    }
  }
}

TEST(Sharding, ShardsHoldTheOwnersTokensInOrder) {
  const Problem p = generate_problem(4, 2, 3, 2, {0, 1, 37}, GenerateOptions{7, DType::kF64});
  const int dcp = 3, interleave = 4;
  for (int r = 0; r < dcp; ++r) {
    const KvShard s = shard_kv(p, r, dcp, interleave);
    for (int b = 0; b < p.rows; ++b) {
      ASSERT_EQ(s.lengths[b], local_length(p.contexts[b], r, dcp, interleave));
      for (std::int64_t l = 0; l < s.lengths[b]; ++l) {
        const std::int64_t t = global_position(l, r, dcp, interleave);
        for (int i = 0; i < 2 * 3; ++i) ASSERT_EQ(s.k[b][l * 6 + i], p.k[b][t * 6 + i]);
        for (int i = 0; i < 2 * 2; ++i) ASSERT_EQ(s.v[b][l * 4 + i], p.v[b][t * 4 + i]);
      }
    }
  }
  const KvShard whole = whole_kv(p);
  EXPECT_EQ(whole.k, p.k);
  EXPECT_EQ(whole.v, p.v);
}

TEST(Sharding, ImpossibleRequestsNameTheValue) {
  auto message = [](auto f) {
    try {
      f();
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(message([] { local_lengths(10, 0, 1); }), HasSubstr("dcp = 0"));
  EXPECT_THAT(message([] { local_lengths(10, 2, 0); }), HasSubstr("interleave = 0"));
  EXPECT_THAT(message([] { local_length(10, 4, 4, 1); }), HasSubstr("rank 4 is outside the group [0, 4)"));
  EXPECT_THAT(message([] { local_length(-3, 0, 4, 1); }), HasSubstr("context -3"));
  EXPECT_THAT(message([] { owner_rank(-1, 2, 1); }), HasSubstr("token -1"));
}

}  // namespace
}  // namespace dcpsim::models
