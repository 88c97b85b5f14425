// Properties every simulated step must have: faster links never make it slower, and the same inputs give the
// same outputs to the bit, whatever the process simulated before.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "dcpsim/traces/protobuf_writer.h"
#include "sim_test_support.h"

namespace dcpsim::sim {
namespace {

using models::Strategy;
using testing::builtin;
using testing::mla;

double step(const models::HardwareProfile& p, const models::Scenario& s) {
  return Simulator(p).run(s).step_latency_s;
}

class Monotonic : public ::testing::TestWithParam<Strategy> {};

TEST_P(Monotonic, MoreBandwidthNeverSlower) {
  const models::Scenario s = mla(16, 128, 16, 32768, GetParam());  // two H200 nodes: NVLink and NICs
  models::HardwareProfile p = builtin("h200-sxm");
  double previous = step(p, s);
  for (double factor : {1.5, 2.0, 4.0}) {
    models::HardwareProfile faster = p;
    faster.nvlink.measured_bandwidth.value *= factor;
    faster.internode.bandwidth.value *= factor;
    const double t = step(faster, s);
    EXPECT_LE(t, previous * (1 + 1e-12)) << "x" << factor;
    previous = t;
  }
  EXPECT_LT(previous, step(p, s));  // links matter: four times the bandwidth is strictly faster
  models::HardwareProfile hbm = p;
  hbm.gpu.hbm_bandwidth_measured.value *= 2;
  EXPECT_LT(step(hbm, s), step(p, s));
}

TEST_P(Monotonic, LessLatencyNeverSlower) {
  const models::Scenario s = mla(16, 128, 4, 4096, GetParam());
  models::HardwareProfile p = builtin("h200-sxm");
  models::HardwareProfile quicker = p;
  quicker.nvlink.hop_latency.value /= 2;
  quicker.internode.latency.value /= 2;
  quicker.signal.flag_write_latency.value /= 2;
  quicker.signal.poll_interval.value /= 2;
  quicker.launch.gpu_launch_latency.value /= 2;
  for (auto& proto : quicker.nccl.ring) proto.base_latency.value /= 2;
  quicker.nccl.p2p_base_latency.value /= 2;
  EXPECT_LE(step(quicker, s), step(p, s));
  EXPECT_LT(step(quicker, s), step(p, s));
}

// The same with bundled flows (three H200 nodes: bundles into two remote switches as well as the local one).
TEST_P(Monotonic, BundledFlowsKeepBothProperties) {
  SimOptions bundled;
  bundled.flows = FlowGrain::kBundle;
  const models::Scenario s = mla(24, 144, 8, 16384, GetParam());
  const models::HardwareProfile p = builtin("h200-sxm");
  models::HardwareProfile faster = p;
  faster.nvlink.measured_bandwidth.value *= 2;
  faster.internode.bandwidth.value *= 2;
  models::HardwareProfile quicker = p;
  quicker.nvlink.hop_latency.value /= 2;
  quicker.internode.latency.value /= 2;
  quicker.signal.flag_write_latency.value /= 2;
  const double base = Simulator(p, bundled).run(s).step_latency_s;
  EXPECT_LT(Simulator(faster, bundled).run(s).step_latency_s, base);
  EXPECT_LT(Simulator(quicker, bundled).run(s).step_latency_s, base);
}

INSTANTIATE_TEST_SUITE_P(Strategies, Monotonic, ::testing::ValuesIn(models::all_strategies()),
                         [](const ::testing::TestParamInfo<Strategy>& param) {
                           std::string n(models::to_string(param.param));
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

void expect_same(const StepResult& a, const StepResult& b) {
  ASSERT_EQ(a.ranks.size(), b.ranks.size());
  EXPECT_EQ(a.step_latency_s, b.step_latency_s);
  EXPECT_EQ(a.merge_latency_s, b.merge_latency_s);
  for (std::size_t r = 0; r < a.ranks.size(); ++r) {
    EXPECT_EQ(a.ranks[r].lse_ready_s, b.ranks[r].lse_ready_s);
    EXPECT_EQ(a.ranks[r].output_ready_s, b.ranks[r].output_ready_s);
    ASSERT_EQ(a.ranks[r].phases.size(), b.ranks[r].phases.size());
    for (std::size_t i = 0; i < a.ranks[r].phases.size(); ++i) {
      EXPECT_EQ(a.ranks[r].phases[i].begin_s, b.ranks[r].phases[i].begin_s);
      EXPECT_EQ(a.ranks[r].phases[i].end_s, b.ranks[r].phases[i].end_s);
    }
  }
}

TEST(Determinism, SameScenarioSameResultWhateverRanBefore) {
  const Simulator sim(builtin("gb200-nvl72"));
  for (Strategy st : models::all_strategies()) {
    const models::Scenario s = mla(8, 128, 32, 65536, st);
    const StepResult first = sim.run(s);
    sim.run(mla(4, 64, 3, 100000, Strategy::kA2a));  // something else moves the clock in between
    sim.run(mla(16, 128, 64, 1024, Strategy::kRowStream));
    expect_same(first, sim.run(s));
  }
}

std::string trace_bytes(const Simulator& sim, const models::Scenario& s, const std::filesystem::path& path) {
  {
    traces::ProtobufTraceWriter writer(path);
    traces::v1::Header header;  // fixed: provenance (time, argv) would differ between runs
    header.set_source(traces::v1::SOURCE_SIM);
    writer.on_header(header);
    sim.run(s, &writer);
    writer.finish();
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

TEST(Determinism, TraceBytesAreIdentical) {
  const Simulator sim(builtin("h200-sxm"));
  const auto dir = std::filesystem::path(DCPSIM_BINARY_DIR) / "sim_determinism";
  std::filesystem::create_directories(dir);
  for (Strategy st : {Strategy::kAgRs, Strategy::kDirect, Strategy::kRowStream}) {
    models::Scenario s = mla(8, 128, 16, 0, st);
    s.contexts = {100, 5000, 70000, 3, 131072, 9000, 64, 20000, 1, 2, 3, 4, 5, 6, 7, 40000};
    const std::string a = trace_bytes(sim, s, dir / "a.pb");
    sim.run(mla(2, 64, 1, 10, Strategy::kAgAr));
    const std::string b = trace_bytes(sim, s, dir / "b.pb");
    EXPECT_GT(a.size(), 1000u);
    EXPECT_EQ(a, b) << models::to_string(st);
  }
}

}  // namespace
}  // namespace dcpsim::sim
