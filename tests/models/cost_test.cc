// Launch, memory-bound kernel, merge-kernel, signal and metric costs: properties that would break if a
// formula were wrong, and hand-computed examples.
#include <vector>

#include <gtest/gtest.h>

#include "dcpsim/error.h"
#include "dcpsim/models/cost.h"

namespace dcpsim::models {
namespace {

// h200-sxm with round kernel numbers for hand calculations: floor 1 us, 1 TB/s, efficiency 0.5·x/(x + 1 MB).
HardwareProfile round_profile() {
  HardwareProfile p = load_profile("h200-sxm");
  p.kernel.floor = {1, Unit::kMicroseconds, "test"};
  p.gpu.hbm_bandwidth_measured = {1, Unit::kTBps, "test"};
  p.kernel.hbm_efficiency_max = {0.5, Unit::kRatio, "test"};
  p.kernel.half_efficiency_bytes = {1, Unit::kMB, "test"};
  return p;
}

TEST(CostLaunch, IssueCostPerModeComesFromTheProfile) {
  const HardwareProfile p = load_profile("h200-sxm");
  EXPECT_DOUBLE_EQ(cpu_issue_time(p, LaunchMode::kEager), 8.8e-6);
  EXPECT_DOUBLE_EQ(cpu_issue_time(p, LaunchMode::kGraph), 1.26e-6);
  EXPECT_DOUBLE_EQ(cpu_issue_time(p, LaunchMode::kPdl), p.launch.cpu_issue_pdl.si());
  EXPECT_DOUBLE_EQ(gpu_launch_latency(p), 3e-6);
}

TEST(CostLaunch, PdlHidesPartOfTheDependentGap) {
  for (const std::string& name : builtin_profile_names()) {
    const HardwareProfile p = load_profile(name);
    EXPECT_LT(dependent_kernel_gap(p, LaunchMode::kPdl), dependent_kernel_gap(p, LaunchMode::kGraph)) << name;
    EXPECT_GE(dependent_kernel_gap(p, LaunchMode::kEager), dependent_kernel_gap(p, LaunchMode::kGraph))
        << name;
    EXPECT_LT(cpu_issue_time(p, LaunchMode::kGraph), cpu_issue_time(p, LaunchMode::kEager)) << name;
  }
}

// Eager kernels have their own gap where the profile gives one (h200-sxm: measured), else the graph's.
TEST(CostLaunch, EagerGapIsItsOwnOrTheGraphs) {
  HardwareProfile p = load_profile("h200-sxm");
  ASSERT_TRUE(p.launch.dependent_gap_eager.has_value());
  EXPECT_DOUBLE_EQ(dependent_kernel_gap(p, LaunchMode::kEager), 1.4e-6);
  EXPECT_DOUBLE_EQ(dependent_kernel_gap(p, LaunchMode::kGraph), 0.35e-6);
  p.launch.dependent_gap_eager.reset();
  EXPECT_DOUBLE_EQ(dependent_kernel_gap(p, LaunchMode::kEager), 0.35e-6);
}

TEST(CostLaunch, KernelStartsAfterLaunchLatencyOrAfterItsPredecessor) {
  const HardwareProfile p = load_profile("h200-sxm");
  EXPECT_DOUBLE_EQ(kernel_start_time(p, LaunchMode::kGraph, 10e-6, -1), 13e-6);        // idle stream
  EXPECT_DOUBLE_EQ(kernel_start_time(p, LaunchMode::kGraph, 10e-6, 20e-6), 20.35e-6);  // queued behind
  EXPECT_DOUBLE_EQ(kernel_start_time(p, LaunchMode::kEager, 10e-6, 20e-6), 21.4e-6);
  EXPECT_DOUBLE_EQ(kernel_start_time(p, LaunchMode::kPdl, 10e-6, 20e-6), 20.2e-6);
  EXPECT_DOUBLE_EQ(kernel_start_time(p, LaunchMode::kGraph, 10e-6, 11e-6), 13e-6);  // issued late
}

TEST(CostKernels, MemoryKernelHandExample) {
  const HardwareProfile p = round_profile();
  // 1e6 bytes: efficiency 0.5·1e6/2e6 = 0.25 → 1 us + 1e6 / 0.25e12 = 5 us.
  EXPECT_NEAR(hbm_efficiency(p, 1e6), 0.25, 1e-15);
  EXPECT_NEAR(memory_kernel_time(p, 1e6), 5e-6, 1e-12);
  EXPECT_EQ(memory_kernel_time(p, 0), 1e-6);
  EXPECT_THROW(memory_kernel_time(p, -1), InputError);
}

TEST(CostKernels, MemoryKernelMonotonicInBytesAndBandwidth) {
  HardwareProfile p = load_profile("h200-sxm");
  HardwareProfile faster = p;
  faster.gpu.hbm_bandwidth_measured.value *= 1.5;
  double previous = 0;
  for (double bytes = 0; bytes < 1e10; bytes = bytes * 3 + 17) {
    const double t = memory_kernel_time(p, bytes);
    EXPECT_GE(t, previous) << bytes;
    EXPECT_LE(memory_kernel_time(faster, bytes), t) << bytes;
    EXPECT_GE(t, p.kernel.floor.si());
    previous = t;
  }
}

TEST(CostKernels, CorrectionHandExample) {
  const HardwareProfile p = round_profile();
  const MergeShape m{4, 2, 8, 16, DType::kBF16, false};
  // 4 B × N·B·H LSEs + read and write of O_r: 4·4·2·8 + 2·2·8·16·2 = 256 + 1024 = 1280 bytes.
  EXPECT_EQ(correction_bytes(m), 1280.0);
  // 1 us + (1280 + 1e6) / (1e12 · 0.5) = 1 us + 2.00256 us.
  EXPECT_NEAR(correction_time(p, m), 3.00256e-6, 1e-12);
}

TEST(CostKernels, MergeKernelByteCounts) {
  const MergeShape m{4, 2, 8, 16, DType::kBF16, false};  // H/N = 2 heads per block, P = 2 lanes
  EXPECT_EQ(packed_lse_lanes(DType::kBF16), 2);
  EXPECT_EQ(packed_lse_lanes(DType::kF32), 1);
  // read O 2·8·16·2 = 512, read L 2·8·4 = 64, write [4][2][2][18]·2 = 576
  EXPECT_EQ(a2a_pack_bytes(m), 1152.0);
  // read 576, write [2][2][16]·2 = 128
  EXPECT_EQ(unpack_combine_bytes(m), 704.0);
  // read 4·2·2·(16·2 + 4) = 576, 4 flags · 8 = 32, write 128
  EXPECT_EQ(direct_combine_bytes(m), 736.0);
  const MergeShape f32{4, 2, 8, 16, DType::kF32, false};
  EXPECT_EQ(a2a_pack_bytes(f32), 2 * 8 * 16 * 4 + 2 * 8 * 4 + 2 * 8 * 17 * 4);
}

TEST(CostKernels, MergeKernelsCostNothingForOneRank) {
  const HardwareProfile p = load_profile("h200-sxm");
  const MergeShape m{1, 64, 128, 512, DType::kBF16, false};
  EXPECT_EQ(correction_time(p, m), 0.0);
  EXPECT_EQ(a2a_pack_time(p, m), 0.0);
  EXPECT_EQ(unpack_combine_time(p, m), 0.0);
  EXPECT_EQ(direct_combine_time(p, m), 0.0);
}

TEST(CostKernels, HeadScatteringKernelsNeedNDividingH) {
  const HardwareProfile p = load_profile("h200-sxm");
  const MergeShape m{3, 4, 128, 512, DType::kBF16, false};
  EXPECT_THROW(a2a_pack_time(p, m), InputError);
  EXPECT_THROW(unpack_combine_time(p, m), InputError);
  EXPECT_THROW(direct_combine_time(p, m), InputError);
  EXPECT_GT(correction_time(p, m), 0.0);  // AG+AR keeps every head: no divisibility needed
}

TEST(CostKernels, MergeCostsGrowWithRowsAndShrinkWithBandwidth) {
  HardwareProfile p = load_profile("gb200-nvl72");
  HardwareProfile faster = p;
  faster.gpu.hbm_bandwidth_measured.value *= 2;
  double previous = 0;
  for (int rows = 1; rows <= 512; rows *= 2) {
    const MergeShape m{8, rows, 128, 512, DType::kBF16, false};
    const double t =
        correction_time(p, m) + a2a_pack_time(p, m) + unpack_combine_time(p, m) + direct_combine_time(p, m);
    EXPECT_GT(t, previous);
    EXPECT_LT(correction_time(faster, m), correction_time(p, m));
    previous = t;
  }
}

TEST(CostKernels, MergeShapeFromScenario) {
  Scenario s;
  s.dcp = 8;
  s.contexts = {100, 200, 300};
  const MergeShape m = merge_shape(s);
  EXPECT_EQ(m.dcp, 8);
  EXPECT_EQ(m.rows, 3);
  EXPECT_EQ(m.heads, 128);
  EXPECT_EQ(m.head_dim, 512);
  s.padded_rows = 2;  // CUDA-graph padding: merged like any row
  EXPECT_EQ(merge_shape(s).rows, 5);
}

TEST(CostSignals, ExpectedWaitIsHalfThePollInterval) {
  HardwareProfile p = load_profile("h200-sxm");
  p.signal.poll_interval = {0.8, Unit::kMicroseconds, "test"};
  p.signal.flag_write_latency = {1.1, Unit::kMicroseconds, "test"};
  EXPECT_NEAR(expected_poll_wait(p), 0.4e-6, 1e-18);
  EXPECT_NEAR(flag_signal_time(p), 1.5e-6, 1e-18);
  EXPECT_DOUBLE_EQ(epoch_handshake_time(p), p.signal.epoch_handshake.si());
}

TEST(CostMetrics, NcclTestsSizesAndBusBandwidthFactors) {
  EXPECT_EQ(nccl_tests_size_bytes(Collective::kAllGather, 8, 1000), 8000);
  EXPECT_EQ(nccl_tests_size_bytes(Collective::kReduceScatter, 8, 1000), 8000);
  EXPECT_EQ(nccl_tests_size_bytes(Collective::kAllReduce, 8, 1000), 1000);
  EXPECT_EQ(nccl_tests_size_bytes(Collective::kAllToAll, 8, 1000), 1000);
  EXPECT_DOUBLE_EQ(busbw_factor(Collective::kAllReduce, 8), 1.75);
  EXPECT_DOUBLE_EQ(busbw_factor(Collective::kAllGather, 8), 0.875);
  EXPECT_DOUBLE_EQ(busbw_factor(Collective::kAllToAll, 4), 0.75);
  EXPECT_EQ(busbw_factor(Collective::kAllGather, 1), 0.0);
  EXPECT_DOUBLE_EQ(algbw(1e9, 1e-3), 1e12);
  EXPECT_DOUBLE_EQ(busbw(Collective::kAllReduce, 4, 1e9, 1e-3), 1.5e12);
  EXPECT_THROW(algbw(1, 0), InputError);
}

// With every latency at zero, a ring's busbw is exactly its link bandwidth: the busbw factors and the plans
// describe the same data movement.
TEST(CostMetrics, BusBandwidthOfALatencyFreeRingIsTheLinkBandwidth) {
  HardwareProfile p = load_profile("h200-sxm");
  for (auto& lat : p.nccl.ring) {
    lat.base_latency.value = 0;
    lat.nvlink_hop_latency.value = 0;
  }
  const CollectiveOptions simple_ring{Algorithm::kRing, Protocol::kSimple};
  for (Collective c : {Collective::kAllGather, Collective::kReduceScatter, Collective::kAllReduce}) {
    for (int n : {2, 3, 5, 8}) {
      const double per_rank = 3.0e6 * n;
      const double t = collective_time(p, c, n, per_rank, simple_ring);
      const double bw = busbw(c, n, nccl_tests_size_bytes(c, n, per_rank), t);
      EXPECT_NEAR(bw / p.nvlink.measured_bandwidth.si(), 1.0, 1e-12) << to_string(c) << " n=" << n;
    }
  }
}

}  // namespace
}  // namespace dcpsim::models
