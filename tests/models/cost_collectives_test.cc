// NCCL collective plans and the tuner: ring structure, N = 1, monotonicity, the LL-to-Simple crossover
// against hand calculations from NCCL's tuning.cc numbers, inter-node rings, all-to-all.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "dcpsim/error.h"
#include "dcpsim/models/cost.h"

namespace dcpsim::models {
namespace {

constexpr Collective kAll[] = {Collective::kAllGather, Collective::kReduceScatter, Collective::kAllReduce,
                               Collective::kAllToAll, Collective::kSendRecv};

// A built-in profile with NCCL's own tuning numbers (src/graph/tuning.cc) in place of the fitted ones and no
// measured tables: the hand calculations below check the model's formulas, not a calibration.
HardwareProfile tuning(const std::string& name, double nvlink_gbs, double ll_cap_gbs) {
  HardwareProfile p = load_profile(name);
  p.comm_tables.clear();
  const Unit us = Unit::kMicroseconds;
  const double base[2][3] = {{6.6, 14, 8.4}, {6.8, 14, 8.4}};
  const double hop[2][3] = {{0.6, 1.9, 3.4}, {0.6, 1.25, 4}};
  for (int pr = 0; pr < 3; ++pr) {
    p.nccl.ring[pr].base_latency = {base[0][pr], us, "tuning.cc"};
    p.nccl.ring[pr].nvlink_hop_latency = {hop[0][pr], us, "tuning.cc"};
    p.nccl.tree[pr].base_latency = {base[1][pr], us, "tuning.cc"};
    p.nccl.tree[pr].nvlink_hop_latency = {hop[1][pr], us, "tuning.cc"};
  }
  p.nvlink.measured_bandwidth = {nvlink_gbs, Unit::kGBps, "nccl #1264"};
  p.nccl.ll_max_bus_bandwidth = {ll_cap_gbs, Unit::kGBps, "tuning.cc"};
  p.nccl.nvls_latency = {25, us, "tuning.cc"};
  p.nccl.p2p_base_latency = {6.9, us, "estimate"};
  p.nccl.p2p_simple_base_latency.reset();
  p.nccl.in_step_graph.reset();
  p.nccl.in_step_eager.reset();
  p.nvlink.hop_latency = {0.6, us, "tuning.cc"};
  return p;
}
HardwareProfile tuning_h200() {
  return tuning("h200-sxm", 380, 141);
}
HardwareProfile tuning_nvl72() {
  return tuning("gb200-nvl72", 760, 282);
}

TEST(CostCollectives, RingAllGatherAndReduceScatterMoveNMinusOneOverNOfTheData) {
  const HardwareProfile p = tuning_nvl72();
  const CollectiveOptions ring{Algorithm::kRing, std::nullopt};
  for (Collective c : {Collective::kAllGather, Collective::kReduceScatter}) {
    for (int n = 2; n <= 72; n += 7) {
      const double shard = 4096.0 * 3;
      const CollectivePlan plan = plan_collective(p, c, n, shard, ring);
      EXPECT_EQ(plan.steps, n - 1);
      EXPECT_EQ(plan.bytes_per_step_per_rank, shard);
      const double total = nccl_tests_size_bytes(c, n, shard);
      EXPECT_NEAR(plan.bytes_sent_per_rank(), (n - 1.0) / n * total, 1e-9 * total)
          << to_string(c) << " " << n;
    }
  }
}

TEST(CostCollectives, RingAllReduceHasTwiceTheSteps) {
  const HardwareProfile p = tuning_h200();
  const CollectivePlan plan =
      plan_collective(p, Collective::kAllReduce, 8, 8e6, {Algorithm::kRing, std::nullopt});
  EXPECT_EQ(plan.steps, 14);
  EXPECT_EQ(plan.bytes_per_step_per_rank, 1e6);
  EXPECT_NEAR(plan.bytes_sent_per_rank(), 2.0 * 7 / 8 * 8e6, 1e-6);
}

TEST(CostCollectives, OneRankCostsNothing) {
  for (const std::string& name : builtin_profile_names()) {
    const HardwareProfile p = load_profile(name);
    for (Collective c : kAll) {
      for (double bytes : {0.0, 1.0, 1e9}) {
        for (const CollectivePlan& plan : candidate_plans(p, c, 1, bytes)) {
          EXPECT_EQ(plan.analytic_time_s, 0.0) << name << " " << to_string(c);
          EXPECT_EQ(plan.steps, 0);
        }
        EXPECT_EQ(collective_time(p, c, 1, bytes), 0.0);
      }
    }
  }
}

TEST(CostCollectives, MonotonicInBytesForEveryPlanAndTheTuner) {
  const HardwareProfile p = tuning_h200();
  for (Collective c : kAll) {
    for (int n : {2, 3, 8, 12}) {
      std::vector<double> previous;
      double previous_tuned = 0;
      for (double bytes = 1; bytes < 4e9; bytes *= 2.7) {
        const std::vector<CollectivePlan> plans = candidate_plans(p, c, n, bytes);
        for (std::size_t i = 0; i < plans.size(); ++i) {
          if (i < previous.size()) {
            EXPECT_GE(plans[i].analytic_time_s, previous[i]) << to_string(c) << " " << n;
          }
        }
        previous.clear();
        for (const CollectivePlan& plan : plans) previous.push_back(plan.analytic_time_s);
        const double tuned = collective_time(p, c, n, bytes);
        EXPECT_GE(tuned, previous_tuned);
        previous_tuned = tuned;
      }
    }
  }
}

TEST(CostCollectives, MoreBandwidthIsNeverSlower) {
  const HardwareProfile p = tuning_h200();
  HardwareProfile faster = p;
  faster.nvlink.measured_bandwidth.value *= 1.7;
  faster.internode.bandwidth.value *= 2;
  for (Collective c : kAll) {
    for (int n : {2, 8, 16, 24}) {
      for (double bytes : {64.0, 65536.0, 1e8}) {
        EXPECT_LE(collective_time(faster, c, n, bytes), collective_time(p, c, n, bytes)) << to_string(c) << n;
      }
    }
  }
}

// h200-sxm all-gather on 8 ranks; NCCL numbers: ring LL 6.6 + 7 × 0.6 us, LL128 14.0 + 7 × 1.9 us, Simple 8.4
// + 7 × 3.4 us, NVLS 25 us. LL runs at min(0.5 × 380 GB/s, 141 GB/s) = 141 GB/s, LL128 at 0.92 × 380 GB/s,
// Simple at 380 GB/s, NVLS at 380 × 5/6 GB/s over 7 shards.
TEST(CostCollectives, TunerPicksLLForTinyMessagesHandCalculation) {
  const HardwareProfile p = tuning_h200();
  const double shard = 1024;  // 1 KiB per rank
  const CollectivePlan plan = plan_collective(p, Collective::kAllGather, 8, shard);
  EXPECT_EQ(plan.algorithm, Algorithm::kRing);
  EXPECT_EQ(plan.protocol, Protocol::kLL);
  // 10.8 us + 7168 B / 141 GB/s
  EXPECT_NEAR(plan.analytic_time_s, 10.8e-6 + 7 * 1024 / 141e9, 1e-12);
  EXPECT_DOUBLE_EQ(plan.link_bandwidth_Bps, 141e9);
  EXPECT_NEAR(plan.per_step_latency_s, 0.6e-6, 1e-18);
}

TEST(CostCollectives, TunerPicksSimpleForLargeMessagesHandCalculation) {
  const HardwareProfile p = tuning_h200();
  const double shard = 64.0 * 1024 * 1024;
  const CollectivePlan plan = plan_collective(p, Collective::kAllGather, 8, shard);
  EXPECT_EQ(plan.algorithm, Algorithm::kRing);
  EXPECT_EQ(plan.protocol, Protocol::kSimple);
  // 32.2 us + 7 × 64 MiB / 380 GB/s = 1.268416 ms; LL128 would be 27.3 us + 1.343708 ms, NVLS 25 us
  // + 1.483457 ms.
  EXPECT_NEAR(plan.analytic_time_s, 32.2e-6 + 7 * shard / 380e9, 1e-12);
}

TEST(CostCollectives, ProtocolCrossoversAreOrderedBySize) {
  // LL wins small, Simple wins large, and once the tuner leaves LL it never comes back.
  const HardwareProfile p = tuning_h200();
  int last_rank = 0;  // LL = 0, LL128 = 1, Simple = 2
  for (double bytes = 8; bytes < 1e9; bytes *= 1.5) {
    const CollectivePlan plan = plan_collective(p, Collective::kAllGather, 8, bytes, {Algorithm::kRing, {}});
    const int rank = static_cast<int>(plan.protocol);
    EXPECT_GE(rank, last_rank) << bytes;
    last_rank = rank;
  }
  EXPECT_EQ(last_rank, 2);
}

TEST(CostCollectives, ForcedAlgorithmAndProtocol) {
  const HardwareProfile p = tuning_h200();
  const CollectivePlan ll = plan_collective(p, Collective::kAllReduce, 8, 1e9, {std::nullopt, Protocol::kLL});
  EXPECT_EQ(ll.protocol, Protocol::kLL);
  const CollectivePlan tree =
      plan_collective(p, Collective::kAllReduce, 8, 1e3, {Algorithm::kTree, std::nullopt});
  EXPECT_EQ(tree.algorithm, Algorithm::kTree);
  EXPECT_EQ(tree.steps, 14);
  EXPECT_THAT(
      [&] {
        plan_collective(p, Collective::kAllGather, 8, 1e3, {Algorithm::kTree, std::nullopt});
      },
      ::testing::ThrowsMessage<InputError>(::testing::HasSubstr("allowed: ring/ll, ring/ll128")));
  EXPECT_THROW(plan_collective(p, Collective::kAllToAll, 8, 1e3, {std::nullopt, Protocol::kLL128}),
               InputError);
  EXPECT_THROW(plan_collective(p, Collective::kAllGather, 0, 1e3), InputError);
  EXPECT_THROW(plan_collective(p, Collective::kAllGather, 8, -1), InputError);
}

TEST(CostCollectives, NvlsOnlyWhenEnabledAndInsideOneDomain) {
  HardwareProfile p = tuning_h200();
  const CollectivePlan nvls =
      plan_collective(p, Collective::kAllGather, 8, 1e6, {Algorithm::kNvls, std::nullopt});
  EXPECT_EQ(nvls.steps, 1);
  EXPECT_EQ(nvls.bytes_per_step_per_rank, 7e6);
  EXPECT_NEAR(nvls.analytic_time_s, 25e-6 + 7e6 / (380e9 * 5.0 / 6.0), 1e-12);
  EXPECT_THROW(plan_collective(p, Collective::kAllGather, 16, 1e6, {Algorithm::kNvls, std::nullopt}),
               InputError);
  p.nccl.nvls_enabled.value = false;
  for (const CollectivePlan& plan : candidate_plans(p, Collective::kAllReduce, 8, 1e9)) {
    EXPECT_NE(plan.algorithm, Algorithm::kNvls);
  }
}

// 16 ranks of h200-sxm span two 8-GPU nodes: one of the 15 ring steps crosses the NIC, and the ring runs at
// the NIC's 50 GB/s. Simple: 8.4 + 14 × 3.4 + (14.0 + 2 × 3) us + 15 × shard / 50 GB/s.
TEST(CostCollectives, InterNodeRingIsBoundedByTheSlowestLink) {
  const HardwareProfile p = tuning_h200();
  const double shard = 1e6;
  const CollectivePlan plan =
      plan_collective(p, Collective::kAllGather, 16, shard, {Algorithm::kRing, Protocol::kSimple});
  EXPECT_EQ(plan.layout.domains, 2);
  EXPECT_EQ(plan.steps, 15);
  EXPECT_EQ(plan.inter_domain_steps, 1);
  EXPECT_DOUBLE_EQ(plan.link_bandwidth_Bps, 50e9);
  EXPECT_NEAR(plan.analytic_time_s, 8.4e-6 + 14 * 3.4e-6 + 20e-6 + 15 * shard / 50e9, 1e-12);
  const CollectivePlan ar =
      plan_collective(p, Collective::kAllReduce, 24, shard, {Algorithm::kRing, Protocol::kLL});
  EXPECT_EQ(ar.inter_domain_steps, 4);  // 2 × (3 nodes − 1)
  // GB200 NVL72 keeps 64 ranks inside one NVLink domain.
  const HardwareProfile nvl72 = tuning_nvl72();
  const CollectivePlan in_rack = plan_collective(nvl72, Collective::kAllGather, 64, shard);
  EXPECT_EQ(in_rack.layout.domains, 1);
  EXPECT_EQ(in_rack.inter_domain_steps, 0);
  EXPECT_EQ(plan_collective(nvl72, Collective::kAllGather, 144, shard).layout.domains, 2);
}

// All-to-all of 8 ranks: every rank sends 7 of its 8 blocks at once. Small blocks use LL (NCCL
// P2P_LL_THRESHOLD 16 KiB): 6.9 us + 0.6 us + 7/8 × bytes / (0.5 × 380 GB/s).
TEST(CostCollectives, AllToAllIsConcurrentPointToPoint) {
  const HardwareProfile p = tuning_h200();
  const double send = 8 * 4096.0;
  const CollectivePlan small = plan_collective(p, Collective::kAllToAll, 8, send);
  EXPECT_EQ(small.algorithm, Algorithm::kP2p);
  EXPECT_EQ(small.protocol, Protocol::kLL);
  EXPECT_EQ(small.steps, 1);
  EXPECT_EQ(small.bytes_per_step_per_rank, 7 * 4096.0);
  EXPECT_NEAR(small.analytic_time_s, 7.5e-6 + 7 * 4096.0 / 190e9, 1e-12);
  const CollectivePlan large = plan_collective(p, Collective::kAllToAll, 8, 8 * 1e6);
  EXPECT_EQ(large.protocol, Protocol::kSimple);
  // Across two nodes the NIC carries 8 of the 15 remote blocks: 8 × block / 50 GB/s bounds the step.
  const CollectivePlan two_nodes = plan_collective(p, Collective::kAllToAll, 16, 16 * 1e6);
  EXPECT_EQ(two_nodes.inter_domain_steps, 1);
  EXPECT_NEAR(two_nodes.link_bandwidth_Bps, 15e6 / (8e6 / 50e9), 1e-3);
}

TEST(CostCollectives, MeasuredSmallMessageRangesAreReproduced) {
  // aiconfigurator tables, 8 × H200, <= 64 KB: all-gather / reduce-scatter 10-13 us, all-to-all 7.5-11 us.
  const HardwareProfile p = tuning_h200();
  for (double total : {1024.0, 16384.0, 65536.0}) {
    const double ag = collective_time(p, Collective::kAllGather, 8, total / 8);
    const double a2a = collective_time(p, Collective::kAllToAll, 8, total);
    EXPECT_GE(ag, 10e-6) << total;
    EXPECT_LE(ag, 13e-6) << total;
    EXPECT_GE(a2a, 7.5e-6) << total;
    EXPECT_LE(a2a, 11e-6) << total;
  }
}

TEST(CostCollectives, NamesParse) {
  for (Collective c : kAll) EXPECT_EQ(parse_collective(to_string(c)), c);
  // nccl-tests' binary names and NCCL's spellings name the same collectives; anything else is refused.
  EXPECT_EQ(parse_collective("allgather"), Collective::kAllGather);
  EXPECT_EQ(parse_collective("all_gather_perf"), Collective::kAllGather);
  EXPECT_EQ(parse_collective("ReduceScatter"), Collective::kReduceScatter);
  EXPECT_EQ(parse_collective("alltoall"), Collective::kAllToAll);
  EXPECT_EQ(parse_collective("sendrecv_perf"), Collective::kSendRecv);
  EXPECT_THROW(parse_collective("gather"), InputError);
  EXPECT_THROW(parse_collective("broadcast"), InputError);
  EXPECT_THROW(parse_collective(""), InputError);
  EXPECT_NEAR(nvlink_transfer_time(tuning_h200(), 38e3), 0.6e-6 + 0.1e-6, 1e-15);
}

}  // namespace
}  // namespace dcpsim::models
