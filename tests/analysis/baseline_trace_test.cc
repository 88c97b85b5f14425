// A baseline from the user's own engine trace: decode steps measured in a synthetic Kineto timeline (known
// attention, other kernels and host gaps), the baseline fit that carries the measured non-attention time but
// not the trace's attention error, refusals of traces without decode steps; and pipeline parallelism in the
// step, the KV accounting and the layouts.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "dcpsim/analysis/baseline.h"
#include "dcpsim/analysis/baseline_trace.h"
#include "dcpsim/analysis/layouts.h"
#include "dcpsim/analysis/whole_model.h"
#include "dcpsim/error.h"
#include "dcpsim/traces/import_nsys.h"

namespace dcpsim::analysis {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;

json engine_kernel(const std::string& name, double ts, double dur) {
  return {{"ph", "X"},  {"cat", "kernel"}, {"name", name}, {"ts", ts},
          {"dur", dur}, {"pid", 0},        {"tid", 7},     {"args", {{"device", 0}, {"stream", 7}}}};
}

// `steps` decode steps of `layers` layers, as vLLM's CUDA graph runs them: per layer a GEMM (50 us), the MLA
// attention kernel (20 us) and its split-KV merge (5 us), the TP all-reduce (10 us), the MoE (30 us); then
// the sampler (15 us) and 400 us of host time before the next step. Per step: attention 75 us, other kernels
// 285 us, idle 400 us, 760 us in all.
fs::path engine_trace(const fs::path& dir, int layers, int steps) {
  json events = json::array();
  double t = 1000;
  const auto add = [&](const std::string& name, double dur) {
    events.push_back(engine_kernel(name, t, dur));
    t += dur;
  };
  for (int s = 0; s < steps; ++s) {
    for (int l = 0; l < layers; ++l) {
      add("sm90_xmma_gemm_bf16bf16_bf16f32", 50);
      add("BatchMLAPagedAttentionKernel<...>", 20);
      add("MergeStatesKernel<...>", 5);
      add("cross_device_reduce_1stage<__nv_bfloat16, 8>", 10);
      add("fused_moe_kernel", 30);
    }
    add("sampler_topk_kernel", 15);
    t += 400;
  }
  const fs::path path = dir / "engine.json";
  std::ofstream(path) << json{{"traceEvents", events}}.dump();
  return path;
}

class BaselineTrace : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("dcpsim-baseline-trace-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(BaselineTrace, MeasuresTheStepsSplit) {
  const models::ModelPreset ds = models::load_model("deepseek-v3");
  const models::Scenario s =
      layout_scenario(ds, 1, 8, 4, 4096, models::Strategy::kAgRs, models::DType::kBF16);
  const TraceSteps t = baseline_trace_steps(engine_trace(dir_, 3, 6), s, 3);
  EXPECT_EQ(t.layers, 3);
  EXPECT_EQ(t.occurrences, 18);  // the attention kernel and its merge are one occurrence
  EXPECT_EQ(t.steps, 5);
  EXPECT_NEAR(t.period_s, 760e-6, 1e-12);
  EXPECT_NEAR(t.attention_s, 75e-6, 1e-12);
  EXPECT_NEAR(t.merge_s, 0, 1e-12);
  EXPECT_NEAR(t.other_s, 285e-6, 1e-12);
  EXPECT_NEAR(t.idle_s, 400e-6, 1e-12);
  EXPECT_NEAR(t.period_spread, 0, 1e-12);
  EXPECT_THAT(t.text(), HasSubstr("5 decode steps (3 attention layers each)"));
  // Counted with the wrong number of layers the steps do not line up: 2 layers make windows of 2 attention
  // layers, never 760 us.
  EXPECT_NE(baseline_trace_steps(engine_trace(dir_, 3, 6), s, 2).period_s, 760e-6);
}

TEST_F(BaselineTrace, TracesWithoutDecodeStepsAreRefused) {
  const models::ModelPreset ds = models::load_model("deepseek-v3");
  const models::Scenario s =
      layout_scenario(ds, 1, 8, 4, 4096, models::Strategy::kAgRs, models::DType::kBF16);
  // One step only.
  try {
    baseline_trace_steps(engine_trace(dir_, 3, 1), s, 3);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("needs at least 7"));
  }
  // A real PyTorch profiler trace with no attention kernel at all (tests/data, HolisticTraceAnalysis).
  const fs::path real = fs::path(DCPSIM_SOURCE_DIR) / "tests" / "data" / "kineto_simple_add.json.gz";
  try {
    baseline_trace_steps(real, s, 61);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("0 attention kernels found"));
  }
  // An Nsight Systems export (5 saxpy kernels, pipit's test data) through the nsys importer.
  if (traces::nsys_import_available()) {
    try {
      baseline_trace_steps(fs::path(DCPSIM_SOURCE_DIR) / "tests" / "data" / "nsys_saxpy.reduced.sqlite.gz", s,
                           61);
      ADD_FAILURE() << "no error";
    } catch (const InputError& e) {
      EXPECT_THAT(e.what(), HasSubstr("0 attention kernels found"));
    }
  }
  EXPECT_THROW(baseline_trace_steps(dir_ / "missing.json", s, 3), InputError);
  EXPECT_THROW(parse_baseline("trace=x.json,tpot=10ms,tp=8,batch=1,context=4k"), InputError);
  EXPECT_THROW(parse_baseline("trace=,tp=8,batch=1,context=4k"), InputError);
  EXPECT_EQ(parse_baseline("trace=x.json,tp=8,batch=1,context=4k,pp=2").pp, 2);
}

TEST_F(BaselineTrace, AnchorsOnTheMeasuredNonAttentionTimeNotOnTheTracesAttention) {
  const models::HardwareProfile h200 = models::load_profile("h200-sxm");
  const models::ModelPreset ds = models::load_model("deepseek-v3");
  WholeModelFlags f;
  f.layers = 3;
  const fs::path trace = engine_trace(dir_, 3, 6);
  f.baseline = {"trace=" + trace.string() + ",tp=8,batch=4,context=4096"};
  const double layer_s = 10e-6;  // dcpsim's attention layer, whatever the layout: 30 us per step
  const LayerTime layer = [&](const models::Scenario&) { return layer_s; };
  WholeModel w(ds, h200, 8, f);
  const BaselineFit fit = anchor(w, f, models::DType::kBF16, layer);
  ASSERT_EQ(fit.traces.size(), 1u);
  ASSERT_TRUE(fit.traces[0]);
  EXPECT_NEAR(fit.measured_step_s[0], 760e-6, 1e-12);
  // The remainder: the measured other kernels and idle time beyond the op model.
  EXPECT_NEAR(fit.remainder_s[0], 285e-6 + 400e-6 - w.modelled_non_attention_s(4), 1e-12);
  // At the baseline's own layout: dcpsim's attention (30 us) + the measured rest (685 us), not the
  // trace's 760 us: the trace's attention (75 us) is shown, not carried.
  EXPECT_NEAR(w.decode_step_s(layer_s, 4), 3 * layer_s + 685e-6, 1e-12);
  EXPECT_THAT(w.non_attention_basis(), HasSubstr("trace (measured)"));
  EXPECT_THAT(w.non_attention_basis(), HasSubstr("not carried"));
}

TEST(PipelineParallel, StepSendsKvPerStageAndThroughput) {
  const models::HardwareProfile h200 = models::load_profile("h200-sxm");
  const models::ModelPreset k2 = models::load_model("kimi-k2");
  WholeModelFlags one, two;
  two.pp = 2;
  const WholeModel w1(k2, h200, 8, one), w2(k2, h200, 8, two);
  EXPECT_EQ(w2.stage_layers(), 31);  // 61 layers over 2 stages: the fuller holds 31
  // TP 8 x PP 2 on 8-GPU nodes: the stage boundary crosses nodes.
  EXPECT_DOUBLE_EQ(w2.stage_sends_s(8), models::stage_send_price(h200, k2, 8, false).seconds);
  EXPECT_DOUBLE_EQ(w2.decode_step_s(20e-6, 8), w1.decode_step_s(20e-6, 8) + w2.stage_sends_s(8));
  // Two micro-batches in flight: twice the tokens per second of one step.
  EXPECT_DOUBLE_EQ(w2.tokens_per_s(0.05, 8), 2 * w1.tokens_per_s(0.05, 8));
  EXPECT_EQ(w2.micro_batch(16), 8);
  EXPECT_EQ(w2.micro_batch(17), 9);
  // Each GPU holds half the layers' weights (and KV per token): more KV per GPU, per token of the model.
  EXPECT_LT(w2.weight_bytes_per_gpu(), 0.6 * w1.weight_bytes_per_gpu());
  const models::Scenario g =
      layout_scenario(k2, 8, 8, 1, 1, models::Strategy::kAgRs, models::DType::kFP8E4M3);
  EXPECT_GT(w2.kv_capacity_tokens(g), 2 * w1.kv_capacity_tokens(g));
  EXPECT_THAT(w2.non_attention_basis(), HasSubstr("pipeline: 2 stages of 31 layers"));
  // Layouts: Kimi K2 (fp8) does not fit TP 4 alone on H200, but TP 4 x PP 2 does.
  LayoutQuery q = LayoutQuery::of(k2, h200, 0.9);
  EXPECT_FALSE(evaluate_layout(q, 4, 1).weights_fit);
  q.pp = 2;
  const Layout l = evaluate_layout(q, 4, 1);
  EXPECT_TRUE(l.weights_fit);
  EXPECT_EQ(l.pp, 2);
  EXPECT_THAT(l.fit_text(), HasSubstr("pipeline stages"));
  WholeModelFlags bad;
  bad.pp = 0;
  EXPECT_THROW(WholeModel(k2, h200, 8, bad), InputError);
}

}  // namespace
}  // namespace dcpsim::analysis
