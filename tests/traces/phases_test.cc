// The step vocabulary (traces/phases.h): older traces' phase names are read as the current ones, exact names
// only, and the measured traces committed to the repository read entirely in the vocabulary.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>

#include "dcpsim/traces/phases.h"
#include "dcpsim/traces/protobuf_writer.h"
#include "dcpsim/traces/trace_collector.h"
#include "dcpsim/traces/trace_reader.h"
#include "trace_test_support.h"

namespace dcpsim::traces {
namespace {

using testing::ScratchDir;

TEST(StepPhases, LegacyNamesMapToCurrentOnesAndOthersStay) {
  EXPECT_EQ(current_phase_name("q_allgather"), "query_all_gather");
  EXPECT_EQ(current_phase_name("lse_allgather"), "lse_all_gather");
  EXPECT_EQ(current_phase_name("correct"), "correction");
  EXPECT_EQ(current_phase_name("direct_push"), "direct_write");
  EXPECT_EQ(current_phase_name("unpack_combine"), "a2a_combine");
  for (const StepPhase& p : step_phases()) {
    EXPECT_EQ(current_phase_name(p.name), p.name);
    EXPECT_TRUE(is_step_phase(p.name));
  }
  EXPECT_EQ(current_phase_name("query_gather step 3 to rank 1"), "query_gather step 3 to rank 1");
  EXPECT_FALSE(is_step_phase("q_allgather"));
}

// A trace as the runner wrote it before the vocabulary: every place a phase name sits is renamed on read;
// names that merely contain an old name, and transfers, are not.
TEST(StepPhases, ReaderRenamesLegacyNamesEverywhere) {
  ScratchDir dir;
  {
    ProtobufTraceWriter w(dir / "old.pb");
    w.on_header(make_header(v1::SOURCE_HW, {"dcpsim", "hw", "run"}));
    w.on_scenario(testing::sample_scenario(2, 1, v1::STRATEGY_AG_RS));
    w.on_event(make_event(0, "comm", v1::EVENT_KIND_COLLECTIVE, "q_allgather", 0, 10));
    w.on_event(make_event(0, "stream0", v1::EVENT_KIND_KERNEL, "correct", 20, 30));
    w.on_event(make_event(0, "nvlink", v1::EVENT_KIND_COPY, "correct", 20, 30));  // not a phase: a copy
    w.on_event(make_event(1, "stream0", v1::EVENT_KIND_KERNEL, "correct_bias", 20, 30));
    v1::PhaseSummary ps;
    ps.set_rank(0);
    ps.set_phase("lse_allgather");
    ps.set_median_ns(5);
    ps.set_min_ns(5);
    ps.set_max_ns(5);
    ps.set_repetitions(1);
    w.on_phase_summary(ps);
    v1::Summary sum;
    sum.set_step_latency_ns(40);
    (*sum.mutable_values())["gap_before.correct_ns"] = 2.5;
    (*sum.mutable_values())["gap_before.attention_ns"] = 1.5;
    w.on_summary(sum);
    v1::GpuActivity a;
    a.set_rank(0);
    a.set_kind(v1::GpuActivity::KIND_KERNEL);
    a.set_phase("q_allgather");
    a.set_start_ns(0);
    a.set_end_ns(10);
    w.on_gpu_activity(a);
    w.finish();
  }
  const Trace t = read_trace(dir / "old.pb");
  ASSERT_EQ(t.sections.size(), 1u);
  const TraceSection& s = t.sections[0];
  EXPECT_EQ(s.events[0].name(), "query_all_gather");
  EXPECT_EQ(s.events[1].name(), "correction");
  EXPECT_EQ(s.events[2].name(), "correct");
  EXPECT_EQ(s.events[3].name(), "correct_bias");
  EXPECT_EQ(s.phase_summaries[0].phase(), "lse_all_gather");
  EXPECT_EQ(s.gpu_activities[0].phase(), "query_all_gather");
  const auto& values = s.summaries[0].values();
  EXPECT_EQ(values.count("gap_before.correct_ns"), 0u);
  EXPECT_EQ(values.at("gap_before.correction_ns"), 2.5);
  EXPECT_EQ(values.at("gap_before.attention_ns"), 1.5);
}

// Every committed measured trace (written by the runner before the vocabulary) reads in it.
TEST(StepPhases, CommittedMeasuredTracesReadInTheVocabulary) {
  int traces = 0;
  std::set<std::string> seen;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(
           std::filesystem::path(DCPSIM_SOURCE_DIR) / "traces" / "measured")) {
    if (!is_trace_file_name(entry.path()) || ++traces > 6) continue;  // a few of each folder's kinds suffice
    const Trace t = read_trace(entry.path());
    for (const TraceSection& s : t.sections) {
      for (const auto& ps : s.phase_summaries) {
        EXPECT_TRUE(is_step_phase(ps.phase())) << entry.path() << ": " << ps.phase();
        seen.insert(ps.phase());
      }
      for (const auto& a : s.gpu_activities) {
        EXPECT_TRUE(a.phase() == "prologue" || is_step_phase(a.phase())) << entry.path() << ": " << a.phase();
      }
    }
  }
  EXPECT_GT(traces, 0);
  EXPECT_TRUE(seen.count("query_all_gather"));
  EXPECT_TRUE(seen.count("correction"));
}

}  // namespace
}  // namespace dcpsim::traces
