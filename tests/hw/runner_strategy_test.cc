// `hw run` with the strategies that store into their peers' memory: the one-kernel direct merge (emulated on
// one GPU: one launch for every rank; one thread per GPU: NCCL windows) and FlashInfer's fused merge, which
// needs NCCL windows on two or more GPUs. The multi-GPU cases skip on a machine with one GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

#include "dcpsim/hw/runner.h"
#include "gpu_test_util.h"

namespace dcpsim::hw {
namespace {

RunConfig mla(int dcp, models::Strategy strategy, ProcessMode mode) {
  RunConfig c;
  c.scenario.dcp = dcp;
  c.scenario.heads = 16 * dcp;
  c.scenario.kv_heads = 1;
  c.scenario.head_dim = 512;
  c.scenario.qk_dim = 576;
  c.scenario.strategy = strategy;
  c.scenario.contexts = {2, 0, 900, 64, 1};
  c.scenario.launch = models::LaunchMode::kGraph;
  c.mode = mode;
  c.warmup = 1;
  c.reps = 3;
  c.timing = Timing::kEvents;
  c.padded_rows = 2;
  c.row_stamps = true;
  for (int d = 0; d < dcp && mode == ProcessMode::kThreads; ++d) c.devices.push_back(d);
  return c;
}

TEST(RunnerStrategy, FlashInferNeedsNcclWindowsAcrossGpus) {
  EXPECT_EQ(strategy_unavailable(models::Strategy::kDirect, ProcessMode::kEmulate, 4), "");
  EXPECT_EQ(strategy_unavailable(models::Strategy::kFlashInferA2a, ProcessMode::kEmulate, 1), "");
  EXPECT_NE(strategy_unavailable(models::Strategy::kFlashInferA2a, ProcessMode::kEmulate, 2), "");
  DCPSIM_REQUIRE_GPU(run_step(mla(2, models::Strategy::kDirect, ProcessMode::kEmulate), nullptr));
  try {
    run_step(mla(2, models::Strategy::kFlashInferA2a, ProcessMode::kEmulate), nullptr);
    FAIL() << "flashinfer-a2a ran under --emulate";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("flashinfer-a2a"), std::string::npos) << e.what();
  }
}

// Emulation merges every rank in one launch of the direct kernel, charged to rank 0.
TEST(RunnerStrategy, EmulatedDirectIsOneKernelForEveryRank) {
  DCPSIM_REQUIRE_GPU(run_step(mla(2, models::Strategy::kDirect, ProcessMode::kEmulate), nullptr));
  for (int dcp : {3, 6}) {
    RunConfig c = mla(dcp, models::Strategy::kDirect, ProcessMode::kEmulate);
    c.scenario.lse_base = dcp == 3 ? models::LseBase::k2 : models::LseBase::kE;
    const RunResult r = run_step(c, nullptr);
    EXPECT_TRUE(r.check.passed) << r.check.summary;
    int merges = 0;
    for (const PhaseStats& ph : r.phases) {
      if (ph.phase != "direct_merge") continue;
      ++merges;
      if (ph.rank == 0) {
        EXPECT_GT(ph.median_ns, 0) << dcp;
      }
    }
    EXPECT_EQ(merges, dcp);
  }
}

// The all-to-all in two calls (vLLM's a2a): emulated, its phases are the split pack, the two all-to-alls (the
// second moving only the fp32 LSEs) and the combine; exact with fp16 outputs, padding rows and both LSE
// bases.
TEST(RunnerStrategy, TwoCallAllToAllIsExactAndRunsItsFourPhases) {
  DCPSIM_REQUIRE_GPU(run_step(mla(2, models::Strategy::kA2aTwoCall, ProcessMode::kEmulate), nullptr));
  for (int dcp : {3, 4}) {
    RunConfig c = mla(dcp, models::Strategy::kA2aTwoCall, ProcessMode::kEmulate);
    c.scenario.lse_base = dcp == 3 ? models::LseBase::k2 : models::LseBase::kE;
    if (dcp == 4) c.scenario.out_dtype = c.scenario.kv_dtype = models::DType::kF16;
    SCOPED_TRACE(c.scenario.label());
    const RunResult r = run_step(c, nullptr);
    EXPECT_TRUE(r.check.passed) << r.check.summary;
    EXPECT_EQ(r.check.mismatched_nonfinite, 0);
    std::map<std::string, int> seen;
    for (const PhaseStats& ph : r.phases) ++seen[ph.phase];
    for (const char* phase : {"a2a_pack", "all_to_all", "all_to_all_lse", "a2a_combine"})
      EXPECT_EQ(seen[phase], dcp) << phase;
  }
}

// NCCL on several GPUs (one thread per GPU) for the collective strategies, the two-call all-to-all first.
TEST(RunnerStrategy, CollectiveStrategiesAcrossGpus) {
  DCPSIM_REQUIRE_GPU(run_step(mla(2, models::Strategy::kA2aTwoCall, ProcessMode::kEmulate), nullptr));
  const int gpus = std::min(device_count(), 8);
  if (gpus < 2) GTEST_SKIP() << "needs two or more GPUs (one here)";
  for (auto strategy : {models::Strategy::kA2aTwoCall, models::Strategy::kA2a, models::Strategy::kAgRs}) {
    RunConfig c = mla(gpus, strategy, ProcessMode::kThreads);
    SCOPED_TRACE(std::string(models::to_string(strategy)));
    const RunResult r = run_step(c, nullptr);
    EXPECT_TRUE(r.check.passed) << r.check.summary;
  }
}

// One thread per GPU over NCCL windows; every visible GPU up to 8 is a rank.
TEST(RunnerStrategy, PeerStrategiesAcrossGpus) {
  DCPSIM_REQUIRE_GPU(run_step(mla(2, models::Strategy::kDirect, ProcessMode::kEmulate), nullptr));
  const int gpus = std::min(device_count(), 8);
  if (gpus < 2) GTEST_SKIP() << "needs two or more GPUs (one here)";
  for (auto strategy : {models::Strategy::kDirect, models::Strategy::kFlashInferA2a}) {
    if (!strategy_unavailable(strategy, ProcessMode::kThreads, gpus).empty()) continue;
    RunConfig c = mla(gpus, strategy, ProcessMode::kThreads);
    c.row_stamps = false;
    SCOPED_TRACE(std::string(models::to_string(strategy)));
    const RunResult r = run_step(c, nullptr);
    EXPECT_TRUE(r.check.passed) << r.check.summary;
  }
}

}  // namespace
}  // namespace dcpsim::hw
