// The row-streaming merge's index arithmetic and sizing (no GPU needed): every (source, row, head) has its
// own window slot, flag and counter; a head block's heads split over the owners exactly; the combine's grid
// never takes more than half the device; the emulated attention chunks cover the batch; and the runner's
// plan for row-stream.
#include <gtest/gtest.h>

#if DCPSIM_WITH_CUDA
#include <set>

#include "dcpsim/error.h"
#include "plan.h"
#include "row_stream_layout.h"

namespace dcpsim::hw {
namespace {

using row_stream::Shape;

TEST(RowStreamLayout, EverySlotFlagAndCounterIsDistinctAndInRange) {
  for (const Shape s :
       {Shape{3, 17, 32, 512}, Shape{6, 5, 16, 128}, Shape{8, 64, 16, 512}, Shape{1, 4, 8, 128}}) {
    std::set<std::int64_t> slots, offsets, flags, counters;
    for (int src = 0; src < s.dcp; ++src)
      for (int row = 0; row < s.rows; ++row) {
        flags.insert(row_stream::flag_index(s, src, row));
        counters.insert(row_stream::counter_index(s, row, src));  // src plays the owner here
        for (int j = 0; j < s.heads_per_owner; ++j) {
          slots.insert(row_stream::slot(s, src, row, j));
          offsets.insert(row_stream::o_offset(s, src, row, j));
        }
      }
    EXPECT_EQ(static_cast<std::int64_t>(slots.size()), row_stream::lse_elems(s));
    EXPECT_EQ(*slots.begin(), 0);
    EXPECT_EQ(*slots.rbegin(), row_stream::lse_elems(s) - 1);
    EXPECT_EQ(static_cast<std::int64_t>(flags.size()), row_stream::flag_elems(s));
    EXPECT_EQ(*flags.rbegin(), row_stream::flag_elems(s) - 1);
    EXPECT_EQ(static_cast<std::int64_t>(counters.size()), row_stream::counter_elems(s));
    EXPECT_EQ(*counters.rbegin(), row_stream::counter_elems(s) - 1);
    // O slices are D apart and the last one ends at the window's end.
    EXPECT_EQ(*offsets.rbegin() + s.dim, row_stream::o_elems(s));
    EXPECT_EQ(static_cast<std::int64_t>(offsets.size()) * s.dim, row_stream::o_elems(s));
  }
}

TEST(RowStreamLayout, HeadBlocksSplitOverTheOwnersExactly) {
  // MLA blocks of 64 heads over H = 96 with N = 3 (J = 32) and N = 6 (J = 16); GQA blocks of 16 over J = 48.
  for (const auto& [H, J, block] : {std::tuple{96, 32, 64}, std::tuple{96, 16, 64}, std::tuple{96, 48, 16},
                                    std::tuple{128, 16, 64}, std::tuple{8, 1, 16}}) {
    std::vector<int> per_owner(H / J, 0);
    for (int h0 = 0; h0 < H; h0 += block) {
      const int h1 = std::min(H, h0 + block);
      int covered = 0;
      for (int n = row_stream::owner_of(h0, J); n <= row_stream::owner_of(h1 - 1, J); ++n) {
        const int k = row_stream::heads_for_owner(h0, h1, n, J);
        EXPECT_GT(k, 0) << "owner " << n << " of heads [" << h0 << ", " << h1 << ")";
        per_owner[n] += k;
        covered += k;
      }
      EXPECT_EQ(covered, h1 - h0);
      EXPECT_EQ(row_stream::heads_for_owner(h0, h1, H / J, J), 0);  // past the last owner
    }
    // Each owner's counter reaches exactly J per step, so epoch·J is reached once per step.
    for (int n = 0; n < H / J; ++n) EXPECT_EQ(per_owner[n], J) << "owner " << n;
  }
  EXPECT_EQ(row_stream::publish_count(3, 16), 48u);
}

TEST(RowStreamLayout, StreamingCombinesLeaveTheDeviceToTheProducers) {
  for (int sms : {132, 148, 16, 1})
    for (int ranks : {1, 3, 6, 8, 66}) {
      const int streaming = row_stream::combine_blocks(sms, ranks, 1 << 20, false);
      const int tail = row_stream::combine_blocks(sms, ranks, 1 << 20, true);
      EXPECT_GE(streaming, 1);
      EXPECT_GE(tail, streaming);
      if (sms >= 16 * ranks) {
        EXPECT_LE(streaming * ranks, sms / 16) << sms << " SMs, " << ranks << " ranks";
      }
      if (2 * ranks <= sms) {  // what emulation accepts: the streaming grids leave half the device at least
        EXPECT_LE(streaming * ranks, sms / 2) << sms << " SMs, " << ranks << " ranks";
      }
      EXPECT_LE(tail * ranks, std::max(sms, ranks));
      if (2 * ranks <= sms) {  // the tail grids fit beside the streaming grids
        EXPECT_LE((tail + streaming) * ranks, sms) << sms << " SMs, " << ranks << " ranks";
      }
    }
  EXPECT_EQ(row_stream::combine_blocks(132, 1, 3, false), 3);  // never more blocks than work
  EXPECT_EQ(row_stream::combine_blocks(132, 8, 0, true), 1);
  EXPECT_EQ(row_stream::combine_blocks(132, 8, 1000, false), 1);  // N = 8 on an H200: one block each
  EXPECT_EQ(row_stream::combine_blocks(132, 8, 1000, true), 15);  // with the 8 streaming blocks: 128 of 132
  EXPECT_EQ(row_stream::combine_blocks(148, 1, 1000, true), 139);
}

TEST(RowStreamLayout, CombineItemsCoverEveryHead) {
  for (int J : {1, 2, 16, 32, 48, 128})
    for (int D : {128, 512}) {
      const int per = row_stream::heads_per_item(J, D);
      EXPECT_GE(per, 1);
      EXPECT_LE(per, J);
      EXPECT_GE(per * row_stream::items_per_row(J, D), J);
      EXPECT_LT(per * (row_stream::items_per_row(J, D) - 1), J);
    }
  EXPECT_EQ(row_stream::heads_per_item(16, 512), 2);
  EXPECT_EQ(row_stream::heads_per_item(16, 128), 8);
}

TEST(RowStreamLayout, AttentionChunksCoverTheBatchInOrder) {
  EXPECT_EQ(row_stream::rows_per_chunk(66, 8),
            4);  // MLA, B = 64, H = 128 on an H200: 132 SMs / 2 head blocks
  EXPECT_EQ(row_stream::rows_per_chunk(3, 8), 1);
  for (int rows : {1, 17, 64, 68})
    for (int chunk : {1, 4, 7, 100}) {
      const auto c = row_stream::row_chunks(rows, chunk);
      ASSERT_FALSE(c.empty());
      EXPECT_EQ(c.front().first, 0);
      EXPECT_EQ(c.back().second, rows);
      for (std::size_t i = 0; i < c.size(); ++i) {
        EXPECT_LT(c[i].first, c[i].second);
        EXPECT_LE(c[i].second - c[i].first, chunk);
        if (i > 0) {
          EXPECT_EQ(c[i].first, c[i - 1].second);
        }
      }
    }
}

RunConfig row_stream_config(int dcp, ProcessMode mode) {
  RunConfig c;
  c.scenario.dcp = dcp;
  c.scenario.heads = 16 * dcp;
  c.scenario.kv_heads = 1;
  c.scenario.head_dim = 512;
  c.scenario.qk_dim = 576;
  c.scenario.contexts = {64, 0, 7};
  c.scenario.strategy = models::Strategy::kRowStream;
  c.mode = mode;
  return c;
}

TEST(RowStreamPlan, EmulationRunsAttentionWithItsPushThenTheCombine) {
  const StepPlan p = make_plan(row_stream_config(3, ProcessMode::kEmulate));
  ASSERT_EQ(p.phases.size(), 3u);
  EXPECT_EQ(p.phases[0], Phase::kQAllGather);
  EXPECT_EQ(p.phases[1], Phase::kAttention);
  EXPECT_EQ(p.phases[2], Phase::kRowCombine);
  EXPECT_STREQ(phase_name(Phase::kRowCombine), "row_stream_combine");
  EXPECT_EQ(p.attention, AttentionImpl::kDcpsim);  // auto: FlashInfer has no epilogue to push from
  EXPECT_TRUE(p.row_stamps);                       // its figures are per row
  EXPECT_EQ(p.J, 16);
  // N = 1 is plain attention.
  const StepPlan one = make_plan(row_stream_config(1, ProcessMode::kEmulate));
  ASSERT_EQ(one.phases.size(), 1u);
  EXPECT_FALSE(one.row_stamps);
}

TEST(RowStreamPlan, FlashInferAttentionIsRefused) {
  RunConfig c = row_stream_config(3, ProcessMode::kEmulate);
  c.attention = AttentionImpl::kFlashInfer;
  try {
    make_plan(c);
    FAIL() << "FlashInfer accepted for row-stream";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("epilogue"), std::string::npos) << e.what();
  }
  c.attention = AttentionImpl::kDcpsim;
  EXPECT_EQ(make_plan(c).attention, AttentionImpl::kDcpsim);
}

TEST(RowStreamPlan, SeveralDevicesAreRefusedUntilNcclWindows) {
  for (ProcessMode mode : {ProcessMode::kThreads, ProcessMode::kMpi}) {
    try {
      make_plan(row_stream_config(2, mode));
      FAIL() << "row-stream accepted outside emulation";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("--emulate"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace dcpsim::hw
#endif
