// The trace of a simulated step: one section with events on each rank's lanes, flows from every flag to the
// wait it releases, a row result per (row, rank), phase summaries and the step summary, all consistent with
// the StepResult the run returned.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "dcpsim/traces/phases.h"
#include "dcpsim/traces/trace_collector.h"
#include "sim_test_support.h"

namespace dcpsim::sim {
namespace {

using models::Strategy;
using testing::builtin;
using testing::mla;

traces::TraceSection simulate(const models::Scenario& s, StepResult* result = nullptr) {
  traces::TraceCollector collector;
  collector.on_header(sim_trace_header(builtin("h200-sxm")));
  const StepResult r = Simulator(builtin("h200-sxm")).run(s, &collector);
  collector.finish();
  if (result != nullptr) *result = r;
  EXPECT_EQ(collector.trace().sections.size(), 1u);
  return collector.trace().sections.front();
}

TEST(Trace, SectionMatchesTheResult) {
  StepResult r;
  const models::Scenario s = mla(4, 128, 8, 16384, Strategy::kAgRs);
  const traces::TraceSection sec = simulate(s, &r);
  EXPECT_EQ(sec.scenario.dcp(), 4);
  EXPECT_EQ(sec.scenario.params().at("profile"), "h200-sxm");
  EXPECT_EQ(sec.row_results.size(), 4u * 8u);
  for (const auto& row : sec.row_results) {
    EXPECT_EQ(row.output_ready_ns(), std::llround(r.ranks[row.rank()].output_ready_s[row.row()] * 1e9));
  }
  ASSERT_EQ(sec.summaries.size(), 1u);
  EXPECT_DOUBLE_EQ(sec.summaries[0].step_latency_ns(), r.step_latency_s * 1e9);
  EXPECT_EQ(sec.summaries[0].kv_bytes_per_rank_size(), 4);
  EXPECT_EQ(sec.phase_summaries.size(), 4u * 5u);

  std::map<int, std::set<std::string>> lanes;
  std::int64_t last_end = 0;
  for (const auto& e : sec.events) {
    lanes[e.rank()].insert(e.lane());
    EXPECT_LE(e.start_ns(), e.end_ns());
    last_end = std::max(last_end, e.end_ns());
  }
  EXPECT_EQ(last_end, std::llround(r.step_latency_s * 1e9));
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_TRUE(lanes[rank].count("cpu")) << rank;
    EXPECT_TRUE(lanes[rank].count("stream0")) << rank;
    EXPECT_TRUE(lanes[rank].count("nvlink")) << rank;
  }
}

TEST(Trace, EveryFlagFlowsToTheWaitItReleases) {
  for (Strategy st : {Strategy::kDirect, Strategy::kRowStream}) {
    const traces::TraceSection sec = simulate(mla(4, 128, 64, 2048, st));
    std::map<std::uint64_t, const traces::v1::Event*> by_id;
    int flags = 0;
    for (const auto& e : sec.events) {
      if (e.has_id()) by_id[e.id()] = &e;
      if (e.kind() == traces::v1::EVENT_KIND_SIGNAL) ++flags;
    }
    EXPECT_GT(flags, 0);
    ASSERT_GE(sec.flows.size(), static_cast<std::size_t>(flags));
    std::set<std::uint64_t> flagged;
    for (const auto& f : sec.flows) {
      const auto* from = by_id.at(f.from_event());
      const auto* to = by_id.at(f.to_event());
      EXPECT_EQ(from->kind(), traces::v1::EVENT_KIND_SIGNAL);
      EXPECT_EQ(to->kind(), traces::v1::EVENT_KIND_WAIT);
      EXPECT_NE(from->rank(), to->rank());
      EXPECT_EQ(from->name(), "flag to rank " + std::to_string(to->rank()));
      EXPECT_GE(to->end_ns(), from->end_ns());  // a wait ends only once its flags landed
      flagged.insert(f.from_event());
    }
    EXPECT_EQ(flagged.size(), static_cast<std::size_t>(flags)) << models::to_string(st);
  }
}

// Simulated traces speak the step vocabulary (traces/phases.h) the hardware runner writes: phase summaries
// per kernel, with the runner's names for each strategy (hw/src/plan.cc), and kernel, collective and launch
// events named the same way.
TEST(Trace, PhasesAreNamedInTheStepVocabulary) {
  const std::map<Strategy, std::vector<std::string>> expected = {
      {Strategy::kAgRs, {"query_all_gather", "attention", "lse_all_gather", "correction", "reduce_scatter"}},
      {Strategy::kAgAr, {"query_all_gather", "attention", "lse_all_gather", "correction", "all_reduce"}},
      {Strategy::kA2a, {"query_all_gather", "attention", "a2a_pack", "all_to_all", "a2a_combine"}},
      {Strategy::kDirect, {"query_all_gather", "attention", "direct_merge"}},
      {Strategy::kFlashInferA2a, {"query_all_gather", "attention", "flashinfer_merge"}},
      {Strategy::kRowStream, {"query_all_gather", "attention", "row_stream_push", "row_stream_combine"}}};
  for (const auto& [strategy, names] : expected) {
    SCOPED_TRACE(std::string(models::to_string(strategy)));
    StepResult r;
    const traces::TraceSection sec = simulate(mla(4, 128, 8, 4096, strategy), &r);
    std::vector<std::string> rank0;
    for (const auto& ps : sec.phase_summaries) {
      EXPECT_TRUE(traces::is_step_phase(ps.phase())) << ps.phase();
      if (ps.rank() == 0) rank0.push_back(ps.phase());
    }
    EXPECT_EQ(rank0, names);
    for (const auto& e : sec.events) {
      const auto k = e.kind();
      if (k == traces::v1::EVENT_KIND_KERNEL || k == traces::v1::EVENT_KIND_COLLECTIVE ||
          k == traces::v1::EVENT_KIND_LAUNCH) {
        EXPECT_TRUE(traces::is_step_phase(e.name())) << e.name();
      }
    }
    // The one-kernel merges span the simulator's push, wait and combine; row-stream's combine kernel its wait
    // and combine.
    if (strategy == Strategy::kDirect || strategy == Strategy::kFlashInferA2a) {
      const PhaseSpan* push = r.phase(0, kPhasePush);
      const PhaseSpan* combine = r.phase(0, kPhaseCombine);
      ASSERT_TRUE(push && combine);
      EXPECT_DOUBLE_EQ(sec.phase_summaries[2].median_ns(), (combine->end_s - push->begin_s) * 1e9);
    }
    if (strategy == Strategy::kRowStream) {
      const PhaseSpan* wait = r.phase(0, kPhaseWait);
      const PhaseSpan* combine = r.phase(0, kPhaseCombine);
      ASSERT_TRUE(wait && combine);
      EXPECT_DOUBLE_EQ(sec.phase_summaries[3].median_ns(),
                       (combine->end_s - std::min(wait->begin_s, combine->begin_s)) * 1e9);
    }
  }
}

TEST(Trace, HeaderCarriesTheProfile) {
  const traces::v1::Header h = sim_trace_header(builtin("gb200-nvl72"), {"dcpsim", "simulate"});
  EXPECT_EQ(h.source(), traces::v1::SOURCE_SIM);
  EXPECT_EQ(h.profile().name(), "gb200-nvl72");
  EXPECT_EQ(h.profile().numbers().at("gpus_per_nvlink_domain"), 72);
  EXPECT_EQ(models::parse_profile(h.profile().json(), "trace"), builtin("gb200-nvl72"));
}

}  // namespace
}  // namespace dcpsim::sim
