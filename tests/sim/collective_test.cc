// NCCL collectives realised as SimGrid transfers must reproduce their plan's analytic time when nothing else
// contends (the plan's own alpha-beta formula), and react to skew and contention the way a ring or a switch
// does.
#include <gtest/gtest.h>

#include <algorithm>

#include "dcpsim/models/cost_collectives.h"
#include "sim_test_support.h"

namespace dcpsim::sim {
namespace {

using models::Algorithm;
using models::Collective;
using models::Protocol;
using testing::builtin;

struct CollectiveCase {
  Collective collective;
  Algorithm algorithm;
  Protocol protocol;
  double bytes_per_rank;
};

class UncontendedCollective : public ::testing::TestWithParam<CollectiveCase> {};

TEST_P(UncontendedCollective, MatchesThePlanWithinAPointOnePercent) {
  const CollectiveCase c = GetParam();
  SimOptions options;
  options.collective = {c.algorithm, c.protocol};
  const Simulator sim(builtin("h200-sxm"), options);
  const CollectiveRun run = sim.run_collective(c.collective, 8, c.bytes_per_rank);
  ASSERT_EQ(run.plan.algorithm, c.algorithm);
  ASSERT_GT(run.plan.steps, 0);
  EXPECT_NEAR(run.time_s, run.plan.analytic_time_s, 1e-3 * run.plan.analytic_time_s);
  // Symmetric ranks entering together leave together.
  for (double end : run.end_s) EXPECT_NEAR(end, run.time_s, 1e-9);
}

INSTANTIATE_TEST_SUITE_P(
    Plans, UncontendedCollective,
    ::testing::Values(
        CollectiveCase{Collective::kAllGather, Algorithm::kRing, Protocol::kLL, 2048},
        CollectiveCase{Collective::kAllGather, Algorithm::kRing, Protocol::kLL128, 1 << 20},
        CollectiveCase{Collective::kAllGather, Algorithm::kRing, Protocol::kSimple, 8 << 20},
        CollectiveCase{Collective::kReduceScatter, Algorithm::kRing, Protocol::kSimple, 1 << 20},
        CollectiveCase{Collective::kAllReduce, Algorithm::kRing, Protocol::kLL, 64 << 10},
        CollectiveCase{Collective::kAllReduce, Algorithm::kTree, Protocol::kLL128, 4 << 20},
        CollectiveCase{Collective::kAllGather, Algorithm::kNvls, Protocol::kSimple, 1 << 20},
        CollectiveCase{Collective::kReduceScatter, Algorithm::kNvls, Protocol::kSimple, 4 << 20},
        CollectiveCase{Collective::kAllReduce, Algorithm::kNvls, Protocol::kSimple, 16 << 20},
        CollectiveCase{Collective::kAllToAll, Algorithm::kP2p, Protocol::kLL, 8 * 4096},
        CollectiveCase{Collective::kAllToAll, Algorithm::kP2p, Protocol::kSimple, 8 << 20}));

TEST(Collective, ALateRankDelaysEveryRankOfARing) {
  SimOptions options;
  options.collective = {Algorithm::kRing, Protocol::kSimple};
  const Simulator sim(builtin("h200-sxm"), options);
  const CollectiveRun together = sim.run_collective(Collective::kAllGather, 8, 1 << 20);
  std::vector<double> entry(8, 0.0);
  entry[3] = 20e-6;
  const CollectiveRun skewed = sim.run_collective(Collective::kAllGather, 8, 1 << 20, entry);
  for (int r = 0; r < 8; ++r) {
    EXPECT_GE(skewed.end_s[r], entry[3]);
    // Every other rank needs rank 3's shard, which cannot leave before rank 3 arrives. Rank 3 itself only has
    // to catch up: its sends pipeline, so they may finish before its last receive, as if it had been on time.
    if (r == 3) {
      EXPECT_GE(skewed.end_s[r], together.end_s[r]);
    } else {
      EXPECT_GT(skewed.end_s[r], together.end_s[r] + 10e-6) << "rank " << r;
    }
  }
}

TEST(Collective, AllToAllSharesEachPortAmongItsPeers) {
  SimOptions options;
  options.collective.protocol = Protocol::kSimple;
  const Simulator sim(builtin("h200-sxm"), options);
  const double block = 1 << 20;
  const CollectiveRun run = sim.run_collective(Collective::kAllToAll, 8, 8 * block);
  const models::HardwareProfile& p = builtin("h200-sxm");
  // Seven blocks leave through one NVLink uplink at once: they take seven times one block's transfer time.
  const double bw = p.nvlink.measured_bandwidth.si() * p.nccl.protocol_efficiency[2].si();
  // Simple send/recv has its own base latency where the profile fitted one.
  const double base =
      p.nccl.p2p_simple_base_latency ? p.nccl.p2p_simple_base_latency->si() : p.nccl.p2p_base_latency.si();
  const double hand = base + p.nvlink.hop_latency.si() + 7 * block / bw;
  EXPECT_NEAR(run.time_s, hand, 1e-3 * hand);
}

TEST(Collective, OneRankOrNoBytesMovesNothing) {
  const Simulator sim(builtin("h200-sxm"));
  EXPECT_EQ(sim.run_collective(Collective::kAllGather, 1, 1 << 20).time_s, 0.0);
  EXPECT_EQ(sim.run_collective(Collective::kAllReduce, 8, 0).time_s, 0.0);
}

TEST(Collective, RingAcrossNodesIsBoundByTheNicAndStaysNearThePlan) {
  SimOptions options;
  options.collective = {Algorithm::kRing, Protocol::kSimple};
  const Simulator sim(builtin("h200-sxm"), options);
  const CollectiveRun run = sim.run_collective(Collective::kAllGather, 16, 4 << 20);
  ASSERT_EQ(run.plan.layout.domains, 2);
  // The NIC (50 GB/s) is far slower than NVLink, so the ring is paced by it; the plan charges every step at
  // the slowest link, the simulation only the steps that cross it, so the simulation is at most the plan.
  EXPECT_LE(run.time_s, run.plan.analytic_time_s * 1.001);
  const double nic_only = 15 * (4 << 20) / builtin("h200-sxm").internode.bandwidth.si();
  EXPECT_GE(run.time_s, nic_only);
}

}  // namespace
}  // namespace dcpsim::sim
