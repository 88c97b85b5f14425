#pragma once
// Shared by calibrate_test.cc and validate_test.cc: a "true" hardware profile made by perturbing h200-sxm, a
// grid of scenarios chosen so that every perturbed number moves some figure, and traces the simulator writes
// from the true profile (standing in for measurements whose answer is known).
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <string>
#include <vector>

#include "dcpsim/models/profile.h"
#include "dcpsim/models/scenario.h"
#include "dcpsim/sim/simulator.h"
#include "dcpsim/traces/protobuf_writer.h"

namespace dcpsim::analysis::testing {

// A fresh folder under the build tree, removed when the object goes.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::path(DCPSIM_BINARY_DIR) / "test-tmp" /
            (std::string(info ? info->name() : "cal") + "-" + std::to_string(::getpid()) + "-" +
             std::to_string(counter++));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

inline void scale_si(models::Quantity& q, double factor) {
  q.value *= factor;
}

// The base the closed loops calibrate from: h200-sxm with tensor cores fast enough that bytes bound every
// attention wave. At h200-sxm's 660 TFLOP/s the grid's long MLA kernels are compute-bound, which hides the
// eager CPU issue cost behind them in every scenario, so the grid would no longer identify it (the roofline's
// own closed loop is Calibrate.RecoversPerKernelTypeNumbersAndTheTensorRate).
inline models::HardwareProfile base_profile() {
  models::HardwareProfile p = models::load_profile("h200-sxm");
  p.launch.dependent_gap_eager.reset();  // as the truth's: calibrate does not fit it
  p.launch.pdl_saving = {};              // seen in PDL steps only (CalibrateClosedLoop.RecoversPdlSavings...)
  p.launch.pdl_saving_attention.reset();  // (the same)
  p.launch.after_copy_node = {};          // emulated graph steps only (...RecoversCopyNodeTerms...)
  p.launch.graph_saving = {};             // (the same)
  p.attention.tensor_rate.value = 1e6;    // TFLOP/s
  p.tables.clear();                       // the analytic models are what is fitted
  // ... NCCL's model too (no measured collective tables), without the in-step, event-timing and one-sided
  // terms fitted on real two-GPU traces: the loops below perturb and recover the analytic numbers.
  p.comm_tables.clear();
  p.nccl.in_step_graph.reset();
  p.nccl.in_step_eager.reset();
  p.nccl.eager_host_issue.reset();
  p.nccl.arrival_skew_graph.reset();
  p.nccl.arrival_skew_eager.reset();
  p.nccl.p2p_simple_base_latency.reset();
  p.nvlink.store_bandwidth.reset();
  p.launch.event_pair.reset();
  p.launch.event_gap.reset();
  return p;
}

// base_profile() with its kernel, launch, collective and signal numbers moved by 10-40%: what calibration
// must find.
inline models::HardwareProfile true_profile() {
  models::HardwareProfile p = base_profile();
  p.name = "h200-true";
  p.kernel.floor.value = 0.9;                  // us, base 0.66
  p.kernel.hbm_efficiency_max.value = 0.8;     // base 0.9
  p.kernel.half_efficiency_bytes.value = 1.5;  // MiB, base 1
  p.attention.floor.value = 8.5;               // us, base 7
  p.attention.cta_overhead.value = 1.6;        // us, base 2
  scale_si(p.launch.dependent_gap, 1.4);
  scale_si(p.launch.cpu_issue_eager, 0.8);
  scale_si(p.launch.cpu_issue_graph, 1.25);
  scale_si(p.nvlink.measured_bandwidth, 0.85);
  scale_si(p.nccl.ring[0].base_latency, 1.3);  // LL: the small collectives of decode
  scale_si(p.nccl.p2p_base_latency, 1.2);
  scale_si(p.signal.flag_write_latency, 1.4);
  return p;
}

inline models::Scenario make_scenario(int dcp, int heads, int kv_heads, int head_dim, int qk_dim, int rows,
                                      int64_t context, models::Strategy strategy, models::LaunchMode launch) {
  models::Scenario s;
  s.dcp = dcp;
  s.heads = heads;
  s.kv_heads = kv_heads;
  s.head_dim = head_dim;
  s.qk_dim = qk_dim;
  s.contexts = models::uniform_contexts(rows, context);
  s.strategy = strategy;
  s.launch = launch;
  return s;
}

// Sizes from one small batch of short rows (where fixed costs dominate) to large batches of long rows (where
// bandwidth does), over three group sizes, three strategies and two launch modes, MLA and GQA.
inline std::vector<models::Scenario> calibration_grid() {
  using models::LaunchMode;
  using models::Strategy;
  std::vector<models::Scenario> out;
  const std::vector<std::pair<int, int64_t>> sizes = {{1, 2048}, {4, 16384}, {16, 4096}, {64, 32768}};
  for (int dcp : {2, 4, 8}) {
    for (Strategy st : {Strategy::kAgRs, Strategy::kA2a, Strategy::kDirect}) {
      for (const auto& [rows, ctx] : sizes) {
        const LaunchMode launch = (rows + dcp) % 2 == 0 ? LaunchMode::kGraph : LaunchMode::kEager;
        out.push_back(make_scenario(dcp, 128, 1, 512, 576, rows, ctx, st, launch));
      }
    }
  }
  out.push_back(make_scenario(4, 32, 8, 128, 128, 8, 8192, Strategy::kAgRs, LaunchMode::kGraph));
  out.push_back(make_scenario(8, 64, 8, 128, 128, 32, 65536, Strategy::kA2a, LaunchMode::kGraph));
  return out;
}

// Simulates `scenarios` under `profile` into one trace file; `source` overrides the header's (SIM) to stand
// in for measured traces (EMULATED: as `hw run --emulate` labels them).
inline void write_sim_trace(const std::filesystem::path& path, const models::HardwareProfile& profile,
                            const std::vector<models::Scenario>& scenarios,
                            traces::v1::Source source = traces::v1::SOURCE_SIM) {
  // Emulated traces as the runner's --emulate makes them: every rank's kernels on one GPU, phase-major.
  sim::SimOptions options;
  options.emulated_ranks = source == traces::v1::SOURCE_EMULATED;
  const sim::Simulator simulator(profile, options);
  traces::ProtobufTraceWriter writer(path);
  traces::v1::Header header = sim::sim_trace_header(profile, {"calibration-test"});
  header.set_source(source);
  writer.on_header(header);
  for (const models::Scenario& s : scenarios) simulator.run(s, &writer);
  writer.finish();
}

}  // namespace dcpsim::analysis::testing
