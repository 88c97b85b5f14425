// The two grains of all-pairs sends (sim/src/fanout.h): one SimGrid transfer per peer, or bundles of a window
// of peers into the destination domain's NVSwitch. They must give the same times when the ranks enter the
// phase together (the all-to-all and direct cases below agree to within the flags' bytes), stay within a few
// percent for row-stream, whose pushes start at different moments, and bundles must create far fewer
// activities.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "dcpsim/error.h"
#include "dcpsim/traces/trace_collector.h"
#include "sim_test_support.h"

namespace dcpsim::sim {
namespace {

using models::Strategy;
using testing::builtin;
using testing::mla;
using testing::together;

SimOptions with(FlowGrain grain) {
  SimOptions o;
  o.flows = grain;
  return o;
}

// Largest difference between two runs' per-row, per-rank ready times.
double max_row_gap(const StepResult& a, const StepResult& b) {
  double gap = 0.0;
  for (std::size_t r = 0; r < a.ranks.size(); ++r) {
    const RankTimeline& x = a.ranks[r];
    const RankTimeline& y = b.ranks[r];
    for (std::size_t i = 0; i < x.lse_ready_s.size(); ++i) {
      gap = std::max(gap, std::abs(x.lse_ready_s[i] - y.lse_ready_s[i]));
      gap = std::max(gap, std::abs(x.output_ready_s[i] - y.output_ready_s[i]));
    }
  }
  return gap;
}

TEST(FlowGrain, NamesRoundTripAndBadNamesAreInputErrors) {
  for (FlowGrain g : {FlowGrain::kAuto, FlowGrain::kPair, FlowGrain::kBundle}) {
    EXPECT_EQ(parse_flow_grain(to_string(g)), g);
  }
  try {
    parse_flow_grain("bundles");
    FAIL() << "accepted 'bundles'";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("'bundles'"), std::string::npos) << what;
    EXPECT_NE(what.find("auto, pair, bundle"), std::string::npos) << what;
  }
}

// (profile, ranks, strategy): groups of one NVLink domain (gb200-nvl72) and of three nodes (h200-sxm, whose
// windows mix NVLink and NIC peers).
class SymmetricAllPairs : public ::testing::TestWithParam<std::tuple<std::string, int, Strategy>> {};

TEST_P(SymmetricAllPairs, BundlesGiveThePairTimes) {
  const auto& [profile, n, strategy] = GetParam();
  const models::Scenario s = mla(n, 144, 8, 32768, strategy);
  const StepResult pair = Simulator(together(profile), with(FlowGrain::kPair)).run(s);
  const StepResult bundle = Simulator(together(profile), with(FlowGrain::kBundle)).run(s);
  // Pair flags (8 B each) share the uplink with the next window's data; a bundle's flags are a latency: the
  // difference is a few bytes' worth of bandwidth per window.
  EXPECT_NEAR(bundle.step_latency_s, pair.step_latency_s, 1e-4 * pair.step_latency_s);
  // Across h200-sxm's three nodes the ranks enter the merge up to 0.6 µs apart (the query gather's ring), and
  // a bundle's flags land with its last byte rather than peer by peer: the direct merge's owners, which wait
  // for the peers' flags right after their own stores, then see them up to 0.52 µs later with bundles.
  const bool mixed_direct = profile == "h200-sxm" && strategy == Strategy::kDirect;
  EXPECT_LT(max_row_gap(pair, bundle), mixed_direct ? 1e-6 : 1e-8);
  EXPECT_NEAR(bundle.attention_end_s, pair.attention_end_s,
              1e-6 * pair.attention_end_s);  // SimGrid rounds remaining work
  // A window of W peers becomes one transfer per destination domain.
  EXPECT_LT(bundle.activities, pair.activities);
  if (n == 72) {
    EXPECT_LT(bundle.activities * 4, pair.activities);
  }
}

INSTANTIATE_TEST_SUITE_P(Groups, SymmetricAllPairs,
                         ::testing::Values(std::make_tuple("gb200-nvl72", 24, Strategy::kA2a),
                                           std::make_tuple("gb200-nvl72", 24, Strategy::kDirect),
                                           std::make_tuple("gb200-nvl72", 72, Strategy::kA2a),
                                           std::make_tuple("gb200-nvl72", 72, Strategy::kDirect),
                                           std::make_tuple("h200-sxm", 24, Strategy::kA2a),
                                           std::make_tuple("h200-sxm", 24, Strategy::kDirect)));

TEST(Flows, RowStreamBundlesStayWithinAFewPercentOfPairs) {
  for (int n : {24, 72}) {
    const models::Scenario s = mla(n, 144, 64, 32768, Strategy::kRowStream);
    const StepResult pair = Simulator(builtin("gb200-nvl72"), with(FlowGrain::kPair)).run(s);
    const StepResult bundle = Simulator(builtin("gb200-nvl72"), with(FlowGrain::kBundle)).run(s);
    // Pushes of consecutive row groups overlap in a window; bundles of different sizes then share the uplink
    // equally where per-peer flows share it by count.
    EXPECT_NEAR(bundle.step_latency_s, pair.step_latency_s, 0.025 * pair.step_latency_s) << n;
    EXPECT_LT(max_row_gap(pair, bundle), 0.025 * pair.step_latency_s) << n;
    EXPECT_LT(bundle.activities * 5, pair.activities) << n;
  }
}

// Ring plans over one NVLink domain (NCCL's ring forced on gb200-nvl72) and the p2p all-to-all, alone:
// bundled rounds of steps give the per-step times and the plan's analytic time.
TEST(Flows, BundledCollectivesGiveThePairTimesAndThePlan) {
  using models::Algorithm;
  using models::Collective;
  using models::Protocol;
  struct Case {
    Collective collective;
    Algorithm algorithm;
    Protocol protocol;
    double bytes;
  };
  for (const Case& c : {Case{Collective::kAllGather, Algorithm::kRing, Protocol::kLL, 36864},
                        Case{Collective::kAllGather, Algorithm::kRing, Protocol::kSimple, 8 << 20},
                        Case{Collective::kReduceScatter, Algorithm::kRing, Protocol::kLL128, 1 << 20},
                        Case{Collective::kAllReduce, Algorithm::kRing, Protocol::kLL, 64 << 10},
                        Case{Collective::kAllToAll, Algorithm::kP2p, Protocol::kSimple, 8 << 20}}) {
    SimOptions pair = with(FlowGrain::kPair), bundle = with(FlowGrain::kBundle);
    pair.collective = bundle.collective = {c.algorithm, c.protocol};
    const CollectiveRun p = Simulator(builtin("gb200-nvl72"), pair).run_collective(c.collective, 72, c.bytes);
    const CollectiveRun b =
        Simulator(builtin("gb200-nvl72"), bundle).run_collective(c.collective, 72, c.bytes);
    const std::string what =
        std::string(models::to_string(c.collective)) + " " + std::string(models::to_string(c.algorithm));
    ASSERT_EQ(b.plan.algorithm, c.algorithm) << what;
    EXPECT_NEAR(b.time_s, p.time_s, 1e-5 * p.time_s) << what;
    for (int r = 0; r < 72; ++r)
      EXPECT_NEAR(b.end_s[r], p.end_s[r], 1e-5 * p.time_s) << what << " rank " << r;
    // The all-to-all's plan ignores that each port carries 71 flows at once; rings reproduce theirs.
    if (c.algorithm == Algorithm::kRing) {
      EXPECT_NEAR(b.time_s, b.plan.analytic_time_s, 1e-3 * b.time_s) << what;
    }
  }
}

// A rank entering 20 µs late holds the whole ring back by at least that much, bundled or not.
TEST(Flows, ALateRankDelaysABundledRingByAtLeastItsLateness) {
  SimOptions bundle = with(FlowGrain::kBundle);
  bundle.collective = {models::Algorithm::kRing, models::Protocol::kLL};
  const Simulator sim(builtin("gb200-nvl72"), bundle);
  std::vector<double> entry(72, 0.0);
  entry[30] = 20e-6;
  const CollectiveRun late = sim.run_collective(models::Collective::kAllGather, 72, 36864, entry);
  const CollectiveRun together = sim.run_collective(models::Collective::kAllGather, 72, 36864);
  for (int r = 0; r < 72; ++r) EXPECT_GE(late.end_s[r], together.end_s[r]) << r;
  EXPECT_GE(late.time_s, together.time_s + 20e-6 * (1 - 1e-9));
}

TEST(Flows, AutoPairsSmallGroupsAndBundlesLargeOnes) {
  const Simulator automatic(builtin("gb200-nvl72"));
  const Simulator pair(builtin("gb200-nvl72"), with(FlowGrain::kPair));
  const Simulator bundle(builtin("gb200-nvl72"), with(FlowGrain::kBundle));
  const models::Scenario at_limit = mla(kBundleAboveRanks, 144, 4, 8192, Strategy::kDirect);
  EXPECT_EQ(automatic.run(at_limit).activities, pair.run(at_limit).activities);
  EXPECT_NE(bundle.run(at_limit).activities, pair.run(at_limit).activities);
  const models::Scenario above = mla(24, 144, 4, 8192, Strategy::kDirect);
  EXPECT_EQ(automatic.run(above).activities, bundle.run(above).activities);
}

TEST(Flows, BundledFlagsFlowToEveryOwnersWait) {
  const int n = 24;
  traces::TraceCollector collector;
  collector.on_header(sim_trace_header(builtin("gb200-nvl72")));
  Simulator(builtin("gb200-nvl72"), with(FlowGrain::kBundle))
      .run(mla(n, 144, 8, 8192, Strategy::kDirect), &collector);
  collector.finish();
  ASSERT_EQ(collector.trace().sections.size(), 1u);
  const traces::TraceSection& sec = collector.trace().sections.front();
  EXPECT_EQ(sec.scenario.params().at("flows"), "bundle");
  EXPECT_EQ(sec.scenario.params().at("peers_in_flight"), "16");
  std::map<std::uint64_t, const traces::v1::Event*> by_id;
  double pushed = 0.0;
  for (const auto& e : sec.events) {
    if (e.has_id()) by_id[e.id()] = &e;
    if (e.kind() == traces::v1::EVENT_KIND_COPY && e.name().find("ranks via nvswitch") != std::string::npos) {
      pushed += static_cast<double>(e.bytes());
    }
  }
  // Every rank's block for every other rank, each block 8 rows x 6 heads x (512 bf16 + one fp32 LSE).
  EXPECT_EQ(pushed, n * (n - 1) * 8.0 * 6 * (512 * 2 + 4));
  // Every owner waits on a flag from every other rank.
  std::set<std::pair<int, int>> pairs;
  for (const auto& f : sec.flows) {
    const auto* from = by_id.at(f.from_event());
    const auto* to = by_id.at(f.to_event());
    EXPECT_EQ(from->kind(), traces::v1::EVENT_KIND_SIGNAL);
    EXPECT_EQ(to->kind(), traces::v1::EVENT_KIND_WAIT);
    EXPECT_GE(to->end_ns(), from->end_ns());
    pairs.insert({static_cast<int>(from->rank()), static_cast<int>(to->rank())});
  }
  EXPECT_EQ(pairs.size(), static_cast<std::size_t>(n * (n - 1)));
  for (const auto& [from, to] : pairs) EXPECT_NE(from, to);
}

}  // namespace
}  // namespace dcpsim::sim
