// The GPU timeline's bookkeeping, on synthetic CUPTI records (no GPU needed): eager activities placed by
// their tags, graph replays placed by position against the eager pass, phase spans, gaps and offsets, and the
// errors for a replay that does not match or a rank that recorded nothing.
#include <gtest/gtest.h>

#if DCPSIM_WITH_CUDA
#include "dcpsim/error.h"
#include "plan.h"
#include "timing.h"

namespace dcpsim::hw {
namespace {

StepPlan a2a_plan() {
  RunConfig c;
  c.scenario.dcp = 2;
  c.scenario.heads = 8;
  c.scenario.kv_heads = 1;
  c.scenario.head_dim = 128;
  c.scenario.qk_dim = 128;
  c.scenario.contexts = {64};
  c.scenario.strategy = models::Strategy::kA2a;
  c.mode = ProcessMode::kEmulate;
  return make_plan(c);  // q_allgather, attention, a2a_pack, all_to_all, a2a_combine
}

GpuActivity act(const char* name, std::uint64_t start, std::uint64_t end, std::uint64_t tag,
                GpuActivity::Kind kind = GpuActivity::Kind::kKernel) {
  GpuActivity a;
  a.kind = kind;
  a.name = name;
  a.start_ns = start;
  a.end_ns = end;
  a.tag = tag;
  return a;
}

// One rank's step starting at t0: prologue stamp, gather (two copies), attention, pack, all-to-all (a kernel
// standing for it); the combine slot stays empty.
void add_step(std::vector<GpuActivity>& v, int rep, int rank, std::uint64_t t0, bool graph) {
  auto tag = [&](int slot) {
    return graph ? timeline_tag(rep, 0, kGraphSlot) : timeline_tag(rep, rank, slot);
  };
  v.push_back(act("stamp_kernel(unsigned long long*)", t0, t0 + 1000, tag(0)));
  v.push_back(act("memcpy DtoD", t0 + 2000, t0 + 3000, tag(1), GpuActivity::Kind::kMemcpy));
  v.push_back(act("memcpy DtoD", t0 + 3500, t0 + 4000, tag(1), GpuActivity::Kind::kMemcpy));
  v.push_back(act("attention_split_kernel", t0 + 5000, t0 + 15000, tag(2)));
  v.push_back(act("pack_kernel", t0 + 16000, t0 + 18000, tag(3)));
  v.push_back(act("all_to_all_kernel", t0 + 18000, t0 + 21000, tag(4)));
}

void expect_step_figures(const Samples& s, int reps) {
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(s.rank_step[r].size(), static_cast<std::size_t>(reps));
    for (int k = 0; k < reps; ++k) {
      EXPECT_DOUBLE_EQ(s.duration[r][0][k], 2000);  // the two copies and the gap between them
      EXPECT_DOUBLE_EQ(s.duration[r][1][k], 10000);
      EXPECT_DOUBLE_EQ(s.offset[r][1][k], 3000);
      EXPECT_DOUBLE_EQ(s.gap[r][1][k], 1000);
      EXPECT_DOUBLE_EQ(s.gap[r][3][k], 0);  // the all-to-all starts as the pack ends
      EXPECT_DOUBLE_EQ(s.rank_step[r][k], 19000);
    }
  }
}

TEST(Timeline, PlacesEagerActivitiesByTag) {
  const StepPlan p = a2a_plan();
  ASSERT_EQ(p.phases.size(), 5u);
  std::vector<GpuActivity> v;
  for (int rep = 0; rep < 3; ++rep)  // one warm-up, two measured
    for (int rank = 0; rank < 2; ++rank) add_step(v, rep, rank, 100000 * rep + 30000 * rank + 7, false);
  v.push_back(act("untagged", 1, 2, 0));
  Samples s;
  s.from_timeline(p, 2, v, 1, 2);
  EXPECT_EQ(s.timing, Timing::kCupti);
  expect_step_figures(s, 2);
  EXPECT_EQ(s.unplaced, 1u);
  EXPECT_EQ(s.activities.size(), 2u * 2u * 6u);
  // One timeline per repetition: its origin is the earliest activity (rank 0's stamp kernel).
  EXPECT_DOUBLE_EQ(s.phase_origin[0][0], 2000);
  EXPECT_DOUBLE_EQ(s.phase_origin[1][0], 32000);
  EXPECT_DOUBLE_EQ(s.stamp_origin[1], 30000);
  for (const PlacedActivity& a : s.activities) EXPECT_GE(a.start_ns, 0);
}

TEST(Timeline, PlacesGraphReplaysByPositionAgainstTheEagerPass) {
  const StepPlan p = a2a_plan();
  std::vector<GpuActivity> v;
  // The eager pass before capture (phase-major in emulation would interleave ranks; order is what counts).
  add_step(v, kTemplateRep, 0, 7, false);
  add_step(v, kTemplateRep, 1, 30007, false);
  for (int rep = 0; rep < 3; ++rep) {
    add_step(v, rep, 0, 100000 * (rep + 1), true);
    add_step(v, rep, 1, 100000 * (rep + 1) + 30000, true);
  }
  Samples s;
  s.from_timeline(p, 2, v, 1, 2);
  expect_step_figures(s, 2);
  int exchanges = 0;
  for (const PlacedActivity& a : s.activities) exchanges += a.slot == 4 && a.rank == 1;
  EXPECT_EQ(exchanges, 2);
}

TEST(Timeline, SkipsOneTimeWorkOfTheEagerPass) {
  const StepPlan p = a2a_plan();
  std::vector<GpuActivity> v;
  add_step(v, kTemplateRep, 0, 7, false);
  v.push_back(act("memcpy HtoD", 5500, 5600, timeline_tag(kTemplateRep, 0, 2), GpuActivity::Kind::kMemcpy));
  add_step(v, kTemplateRep, 1, 30007, false);
  for (int rep = 0; rep < 2; ++rep) {
    add_step(v, rep, 0, 100000 * (rep + 1), true);
    add_step(v, rep, 1, 100000 * (rep + 1) + 30000, true);
  }
  Samples s;
  s.from_timeline(p, 2, v, 0, 2);
  expect_step_figures(s, 2);
}

// Row-stream's ranks run on their own streams, so a replay may interleave them differently from the eager
// pass: activities are then paired by name, in order.
TEST(Timeline, PlacesAReplayWhoseStreamsInterleaveDifferently) {
  const StepPlan p = a2a_plan();
  std::vector<GpuActivity> v;
  add_step(v, kTemplateRep, 0, 7, false);
  add_step(v, kTemplateRep, 1, 30007, false);
  const std::uint64_t g = timeline_tag(0, 0, kGraphSlot);
  add_step(v, 0, 1, 100000, true);  // rank 1's part of the replay...
  // ... interleaved with rank 0's, which starts first.
  v.push_back(act("stamp_kernel(unsigned long long*)", 99000, 99500, g));
  v.push_back(act("memcpy DtoD", 99600, 99700, g, GpuActivity::Kind::kMemcpy));
  v.push_back(act("memcpy DtoD", 99800, 99900, g, GpuActivity::Kind::kMemcpy));
  v.push_back(act("attention_split_kernel", 103000, 113000, g));
  v.push_back(act("pack_kernel", 113500, 114000, g));
  v.push_back(act("all_to_all_kernel", 114000, 117000, g));
  Samples s;
  s.from_timeline(p, 2, v, 0, 1);
  // Rank 0 (first in the eager pass) took the first activity of each name in the replay.
  EXPECT_DOUBLE_EQ(s.duration[0][0][0], 300);    // its copies at 99600 and 99800
  EXPECT_DOUBLE_EQ(s.duration[0][1][0], 10000);  // the attention at 103000
  ASSERT_EQ(s.activities.size(), 12u);
  int all_to_alls[2] = {0, 0};
  for (const PlacedActivity& a : s.activities)
    if (a.slot == 4) ++all_to_alls[a.rank];
  EXPECT_EQ(all_to_alls[0], 1);
  EXPECT_EQ(all_to_alls[1], 1);
}

TEST(Timeline, RefusesAReplayThatDoesNotMatchTheEagerPass) {
  const StepPlan p = a2a_plan();
  std::vector<GpuActivity> v;
  add_step(v, kTemplateRep, 0, 7, false);
  add_step(v, kTemplateRep, 1, 30007, false);
  add_step(v, 0, 0, 100000, true);
  v.push_back(act("extra_kernel", 150000, 150100, timeline_tag(0, 0, kGraphSlot)));  // not in the eager pass
  Samples s;
  try {
    s.from_timeline(p, 2, v, 0, 1);
    FAIL() << "a short replay was accepted";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("--timing events"), std::string::npos) << e.what();
  }
}

TEST(Timeline, RefusesARankWithoutActivityInAMeasuredRepetition) {
  const StepPlan p = a2a_plan();
  std::vector<GpuActivity> v;
  add_step(v, 0, 0, 7, false);
  add_step(v, 0, 1, 30007, false);
  add_step(v, 1, 0, 100007, false);  // rank 1 recorded nothing in repetition 1
  Samples s;
  EXPECT_THROW(s.from_timeline(p, 2, v, 0, 2), RuntimeError);
}

// PDL: the pack kernel is launched while attention still runs and waits on the GPU; it is charged only from
// the attention's end.
TEST(Timeline, AnEarlyStartedKernelIsChargedFromItsPredecessorsEnd) {
  const StepPlan p = a2a_plan();
  std::vector<GpuActivity> v;
  for (int rank = 0; rank < 2; ++rank) add_step(v, 0, rank, 30000 * rank + 7, false);
  v[4].start_ns = v[3].start_ns + 500;  // rank 0's pack starts 500 ns into the attention
  Samples s;
  s.from_timeline(p, 2, v, 0, 1);
  EXPECT_DOUBLE_EQ(s.duration[0][2][0], 3000);  // attention ends at 15000, the pack at 18000
  EXPECT_DOUBLE_EQ(s.duration[0][1][0], 10000);
  EXPECT_DOUBLE_EQ(s.gap[0][2][0], 0);
}

TEST(Timeline, TagsRoundTrip) {
  const std::uint64_t t = timeline_tag(kTemplateRep, 71, kGraphSlot);
  EXPECT_EQ(tag_rep(t), kTemplateRep);
  EXPECT_EQ(tag_rank(t), 71);
  EXPECT_EQ(tag_slot(t), kGraphSlot);
  EXPECT_NE(timeline_tag(0, 0, 0), 0u);  // 0 means "no tag"
}

}  // namespace
}  // namespace dcpsim::hw
#endif
