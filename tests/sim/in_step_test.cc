// What a step adds around its collectives (the ranks' arrival skew absorbed by the first collective, an eager
// NCCL call's host time, the in-step term) and what a run may take from a measurement (kernel durations, the
// arrival order, the runner's two-kernel direct merge), on synthetic steps.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <string_view>

#include "dcpsim/error.h"
#include "dcpsim/models/cost.h"
#include "sim_test_support.h"

namespace dcpsim::sim {
namespace {

using models::LaunchMode;
using models::Quantity;
using models::Strategy;
using models::Unit;
using testing::mla;

double phase_s(const StepResult& r, int rank, std::string_view name) {
  for (const PhaseSpan& ph : r.ranks[rank].phases) {
    if (ph.name == name) return ph.duration_s();
  }
  return -1.0;
}

// h200-sxm with round in-step numbers.
models::HardwareProfile in_step_profile(double skew_us, double in_step_us, double host_us) {
  models::HardwareProfile p = models::load_profile("h200-sxm");
  p.nccl.arrival_skew_graph = Quantity{skew_us, Unit::kMicroseconds, "test"};
  p.nccl.arrival_skew_eager = Quantity{skew_us, Unit::kMicroseconds, "test"};
  p.nccl.in_step_graph = Quantity{in_step_us, Unit::kMicroseconds, "test"};
  p.nccl.in_step_eager = Quantity{in_step_us, Unit::kMicroseconds, "test"};
  p.nccl.eager_host_issue = Quantity{host_us, Unit::kMicroseconds, "test"};
  return p;
}

TEST(InStep, TheFirstCollectiveAbsorbsTheArrivalSkewOfTheRanksBeforeIt) {
  const models::Scenario s = mla(2, 32, 4, 8192, Strategy::kAgRs);
  const StepResult together = Simulator(in_step_profile(0, 0, 0)).run(s);
  const StepResult skewed = Simulator(in_step_profile(7, 0, 0)).run(s);
  // Rank 0 arrives first (rank order) and waits the whole skew in the query all-gather; rank 1 none.
  EXPECT_NEAR(phase_s(skewed, 0, kPhaseQueryGather) - phase_s(together, 0, kPhaseQueryGather), 7e-6, 1e-9);
  EXPECT_NEAR(phase_s(skewed, 1, kPhaseQueryGather), phase_s(together, 1, kPhaseQueryGather), 1e-9);
  // After it the ranks run together again: the later phases do not see the skew.
  EXPECT_NEAR(phase_s(skewed, 0, kPhaseLseGather), phase_s(together, 0, kPhaseLseGather), 1e-9);
  // The arrival order can come from a measurement.
  StepInputs in;
  in.arrival_order = {1, 0};
  const StepResult reversed = Simulator(in_step_profile(7, 0, 0)).run(s, in);
  EXPECT_NEAR(phase_s(reversed, 1, kPhaseQueryGather) - phase_s(together, 1, kPhaseQueryGather), 7e-6, 1e-9);
  in.arrival_order = {0, 0};
  EXPECT_THROW(Simulator(in_step_profile(7, 0, 0)).run(s, in), InputError);
}

TEST(InStep, EveryCollectiveInAStepPaysTheInStepTerm) {
  const models::Scenario s = mla(2, 32, 4, 8192, Strategy::kAgAr);
  const StepResult base = Simulator(in_step_profile(0, 0, 0)).run(s);
  const StepResult more = Simulator(in_step_profile(0, 2, 0)).run(s);
  for (std::string_view phase : {kPhaseQueryGather, kPhaseLseGather, kPhaseCollective}) {
    EXPECT_NEAR(phase_s(more, 0, phase) - phase_s(base, 0, phase), 2e-6, 1e-9) << phase;
  }
  // Three collectives, each 2 us longer, one after another on the critical path.
  EXPECT_NEAR(more.step_latency_s - base.step_latency_s, 6e-6, 1e-9);
}

TEST(InStep, AnEagerStepsFirstCollectiveWaitsForItsHostCall) {
  const models::Scenario s = mla(2, 32, 4, 8192, Strategy::kAgRs, LaunchMode::kEager);
  const StepResult quick = Simulator(in_step_profile(0, 0, 2)).run(s);
  const StepResult slow = Simulator(in_step_profile(0, 0, 12)).run(s);
  // The GPU is idle when the step begins: the query all-gather's phase holds the host's NCCL call.
  EXPECT_NEAR(phase_s(slow, 0, kPhaseQueryGather) - phase_s(quick, 0, kPhaseQueryGather), 10e-6, 1e-9);
}

TEST(InStep, MeasuredKernelsReplaceTheModelsExactly) {
  const models::Scenario s = mla(2, 32, 4, 8192, Strategy::kA2a);
  StepInputs in;
  in.kernel_s = {{{"attention", 50e-6}, {"a2a_pack", 4e-6}, {"a2a_combine", 6e-6}},
                 {{"attention", 60e-6}, {"a2a_pack", 4e-6}}};
  const StepResult r = Simulator(in_step_profile(0, 0, 0)).run(s, in);
  // (SimGrid's clock resolves 1 ns.)
  EXPECT_NEAR(phase_s(r, 0, kPhaseAttention), 50e-6, 1e-9);
  EXPECT_NEAR(phase_s(r, 1, kPhaseAttention), 60e-6, 1e-9);
  EXPECT_NEAR(phase_s(r, 0, kPhasePack), 4e-6, 1e-9);
  EXPECT_NEAR(phase_s(r, 0, kPhaseCombine), 6e-6, 1e-9);
  // Rank 1's combine was not given: the profile prices it.
  EXPECT_GT(std::abs(phase_s(r, 1, kPhaseCombine) - 6e-6), 1e-8);
  int measured = 0;
  for (const KernelFigure& f : r.kernel_figures) measured += f.source == models::FigureSource::kMeasured;
  EXPECT_EQ(measured, 5);
  in.kernel_s[0]["attention"] = -1;
  EXPECT_THROW(Simulator(in_step_profile(0, 0, 0)).run(s, in), InputError);
}

TEST(InStep, TheTwoKernelDirectMergePushesThenPollsAndCombines) {
  const models::Scenario s = mla(2, 32, 4, 8192, Strategy::kDirect);
  StepInputs in;
  in.direct_two_kernels = true;
  const models::HardwareProfile p = in_step_profile(0, 0, 0);
  const StepResult r = Simulator(p).run(s, in);
  const double block = 4 * (32.0 / 2) * (512 * 2 + 4);
  // The push kernel: the epoch handshake, then the stores at the peer-store bandwidth, then the flag.
  const double push = phase_s(r, 0, kPhasePush);
  EXPECT_GE(push, models::epoch_handshake_time(p) + block / models::peer_store_bandwidth(p));
  EXPECT_GE(phase_s(r, 0, kPhaseWait), 0.0);
  EXPECT_GT(phase_s(r, 0, kPhaseCombine), 0.0);
  // As its own kernel it pays a launch gap the one-kernel merge does not.
  const StepResult one = Simulator(p).run(s);
  EXPECT_GT(r.step_latency_s, one.step_latency_s);
}

}  // namespace
}  // namespace dcpsim::sim
