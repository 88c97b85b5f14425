// The deployed step in the analysis layer: vLLM's KV accounting, speculative decoding in the step and in the
// per-token figures, baseline anchoring fitted on synthetic steps, and the planner's Pareto logic and context
// sampling.
#include <cmath>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "dcpsim/analysis/baseline.h"
#include "dcpsim/analysis/plan.h"
#include "dcpsim/analysis/whole_model.h"
#include "dcpsim/error.h"
#include "dcpsim/models/cost_kernels.h"

namespace dcpsim::analysis {
namespace {

using ::testing::HasSubstr;

constexpr double kGiB = 1073741824.0;

TEST(WholeModelDeployed, KvBudgetAsVllmAccountsIt) {
  const models::HardwareProfile h200 = models::load_profile("h200-sxm");
  const models::ModelPreset ds = models::load_model("deepseek-v3");
  WholeModelFlags f;
  f.gpu_memory_utilization = 0.85;
  f.activation_reserve_gib = 3.0;
  f.runtime_reserve_gib = 1.5;
  const WholeModel w(ds, h200, 8, f);
  EXPECT_DOUBLE_EQ(w.kv_budget_bytes(),
                   h200.gpu.hbm_capacity.si() * 0.85 - models::weight_bytes_per_gpu(ds, 8) - 4.5 * kGiB);
  EXPECT_THAT(w.kv_budget_basis(), HasSubstr("activations"));
  models::Scenario g = layout_scenario(ds, 8, 8, 1, 1, models::Strategy::kAgRs, models::DType::kFP8E4M3);
  const std::int64_t fp8 = w.kv_capacity_tokens(g);
  EXPECT_EQ(fp8, static_cast<std::int64_t>(w.kv_budget_bytes() / (576.0 * 61)));
  g.kv_dtype = models::DType::kBF16;
  EXPECT_NEAR(double(fp8) / double(w.kv_capacity_tokens(g)), 2.0, 1e-5);  // fp8 doubles the tokens
  // The default activation estimate grows with the profile run's tokens.
  EXPECT_GT(activation_peak_bytes(ds, 8, 16384), activation_peak_bytes(ds, 8, 8192));
  WholeModelFlags none;
  none.weight_dtype = "nvfp4";
  EXPECT_GT(WholeModel(ds, h200, 8, none).kv_budget_bytes(),
            WholeModel(ds, h200, 8, {}).kv_budget_bytes() + 30e9);
}

TEST(WholeModelDeployed, SpeculativeDecodingInTheStepAndPerToken) {
  const models::HardwareProfile h200 = models::load_profile("h200-sxm");
  const models::ModelPreset ds = models::load_model("deepseek-v3");
  WholeModelFlags f;
  f.spec_tokens = 2;
  EXPECT_THROW(WholeModel(ds, h200, 8, f), InputError);  // no accept length
  f.accept_length = 3.5;
  EXPECT_THROW(WholeModel(ds, h200, 8, f), InputError);  // more than k + 1
  f.accept_length = 2.5;
  const WholeModel w(ds, h200, 8, f);
  const models::Scenario s =
      layout_scenario(ds, 8, 8, 4, 1000, models::Strategy::kAgRs, models::DType::kBF16);
  EXPECT_EQ(w.attention_scenario(s).heads, 3 * s.heads);  // k + 1 query rows per request
  const WholeModel plain(ds, h200, 8, {});
  // The verify step runs 3 tokens per request through the ops; the draft runs the MTP module twice.
  const double ops = w.ops(4).seconds;
  EXPECT_DOUBLE_EQ(ops, models::non_attention_ops(ds, h200, {8, models::MoeSplit::kTp, 12, 4}).seconds);
  EXPECT_NEAR(w.modelled_non_attention_s(4),
              ops + 2 * models::mtp_draft_ops(ds, h200, {8, models::MoeSplit::kTp, 4, 4}).seconds, 1e-12);
  // 61 layers and the draft's two attention layers.
  EXPECT_NEAR(w.decode_step_s(1e-4, 4), 63 * 1e-4 + w.non_attention_s(4), 1e-12);
  EXPECT_DOUBLE_EQ(w.tpot_s(0.05), 0.02);
  EXPECT_DOUBLE_EQ(w.tokens_per_s(0.05, 4), 200.0);
  EXPECT_GT(w.weight_bytes_per_gpu(), plain.weight_bytes_per_gpu());  // the MTP module's weights
}

// --spec-attention rows: each verify token a decode row of its own (vLLM's TRITON_MLA): the same requests,
// the same query rows and heads, but every row reads its request's KV again.
TEST(WholeModelDeployed, SpecVerifyRowsReadTheKvOncePerRow) {
  const models::HardwareProfile h200 = models::load_profile("h200-sxm");
  const models::ModelPreset ds = models::load_model("deepseek-v3");
  WholeModelFlags f;
  f.spec_tokens = 3;
  f.accept_length = 2.5;
  const WholeModel heads(ds, h200, 8, f);
  f.spec_attention = "rows";
  const WholeModel rows(ds, h200, 8, f);
  models::Scenario s = layout_scenario(ds, 8, 8, 2, 1, models::Strategy::kAgRs, models::DType::kBF16);
  s.contexts = {5000, 9000};
  s.padded_rows = 1;
  const models::Scenario h = heads.attention_scenario(s);
  const models::Scenario r = rows.attention_scenario(s);
  EXPECT_EQ(h.heads, 4 * s.heads);
  EXPECT_EQ(h.contexts, s.contexts);
  EXPECT_EQ(r.heads, s.heads);
  EXPECT_THAT(r.contexts, ::testing::ElementsAre(5000, 5000, 5000, 5000, 9000, 9000, 9000, 9000));
  EXPECT_EQ(r.padded_rows, 4);
  EXPECT_EQ(h.merge_rows() * h.heads, r.merge_rows() * r.heads);  // the merge's rows x heads alike
  EXPECT_EQ(heads.requests(h), 2);
  EXPECT_EQ(rows.requests(r), 2);
  EXPECT_EQ(rows.stored_of_read(4 * 14000), 14000);
  EXPECT_EQ(heads.stored_of_read(14000), 14000);
  // The KV bytes the attention reads: (k + 1) x with rows, the same with heads.
  const auto io = [](const models::Scenario& x) {
    return models::attention_io_bytes(models::attention_shape(x), x.contexts);
  };
  const double kv = 576.0 * 2 * 14000;  // bf16 latent + rope per token
  EXPECT_GT(io(r) - io(s), 2.9 * kv);
  EXPECT_LT(io(h) - io(s), 0.25 * kv);  // only the queries and outputs grow
  EXPECT_THAT(rows.non_attention_basis(), HasSubstr("each a decode row"));
  // Rows without speculative decoding, or a bad value, is an input error.
  WholeModelFlags plain;
  plain.spec_attention = "rows";
  EXPECT_THROW(WholeModel(ds, h200, 8, plain), InputError);
  plain.spec_attention = "columns";
  EXPECT_THROW(WholeModel(ds, h200, 8, plain), InputError);
}

TEST(Baseline, ParsesPointsAndRefusesBadOnes) {
  const BaselinePoint p = parse_baseline("tpot=12ms,tp=8,batch=4,context=64k,dcp=2,strategy=a2a");
  EXPECT_DOUBLE_EQ(p.tpot_s, 0.012);
  EXPECT_EQ(p.tp, 8);
  EXPECT_EQ(p.dcp, 2);
  EXPECT_EQ(p.batch, 4);
  EXPECT_EQ(p.context, 65536);
  EXPECT_EQ(p.strategy, models::Strategy::kA2a);
  EXPECT_DOUBLE_EQ(parse_baseline("tpot=1500us,tp=1,batch=1,context=1k").tpot_s, 1.5e-3);
  EXPECT_DOUBLE_EQ(parse_baseline("tpot=20,tp=1,batch=1,context=1k").tpot_s, 0.02);  // ms by default
  for (const char* bad : {"tpot=12ms,tp=8,batch=1", "tpot=x,tp=8,batch=1,context=1k",
                          "tpot=12ms,tp=8,batch=1,context=1k,color=red", "tpot=-1,tp=8,batch=1,context=1k",
                          "tpot=12ms,tp=2,dcp=4,batch=1,context=1k", "tp=8"}) {
    EXPECT_THROW(parse_baseline(bad), InputError) << bad;
  }
}

// A synthetic engine: its step is 61 attention layers (the fake layer time below) + the op model + a hidden
// remainder of 2 ms + 15 us per request. Two baseline points must recover the remainder exactly and predict a
// third batch size; one point recovers the constant part.
TEST(Baseline, FitRecoversTheRemainderOfASyntheticStep) {
  const models::HardwareProfile h200 = models::load_profile("h200-sxm");
  const models::ModelPreset ds = models::load_model("deepseek-v3");
  const LayerTime layer = [](const models::Scenario& s) {
    double tokens = 0;
    for (const auto c : s.contexts) tokens += double(c);
    return 20e-6 + 1e-10 * tokens / s.dcp;
  };
  const WholeModel truth(ds, h200, 8, {});
  const auto engine_tpot = [&](int batch) {
    const models::Scenario s =
        layout_scenario(ds, 1, 8, batch, 65536, models::Strategy::kAgRs, models::DType::kBF16);
    return 61 * layer(s) + truth.modelled_non_attention_s(batch) + 2e-3 + 15e-6 * batch;
  };
  WholeModelFlags f;
  for (const int b : {1, 32}) {
    f.baseline.push_back("tpot=" + std::to_string(engine_tpot(b) * 1e3) +
                         "ms,tp=8,batch=" + std::to_string(b) + ",context=64k");
  }
  WholeModel w(ds, h200, 8, f);
  const BaselineFit fit = anchor(w, f, models::DType::kBF16, layer);
  EXPECT_NEAR(fit.fixed_s, 2e-3, 1e-8);
  EXPECT_NEAR(fit.per_row_s, 15e-6, 1e-10);
  EXPECT_TRUE(w.anchored());
  EXPECT_NEAR(w.non_attention_s(8), truth.modelled_non_attention_s(8) + 2e-3 + 8 * 15e-6, 1e-8);
  EXPECT_THAT(w.non_attention_basis(), HasSubstr("measured"));
  // One point: the constant part only.
  WholeModelFlags one;
  one.baseline = {f.baseline.front()};
  WholeModel w1(ds, h200, 8, one);
  const BaselineFit fit1 = anchor(w1, one, models::DType::kBF16, layer);
  EXPECT_NEAR(fit1.fixed_s, 2e-3 + 15e-6, 1e-8);
  EXPECT_EQ(fit1.per_row_s, 0.0);
  // A baseline faster than the attention alone is refused.
  WholeModelFlags fast;
  fast.baseline = {"tpot=0.1ms,tp=8,batch=1,context=64k"};
  WholeModel wf(ds, h200, 8, fast);
  EXPECT_THROW(anchor(wf, fast, models::DType::kBF16, layer), InputError);
}

TEST(Plan, ParetoFrontKeepsTheNonDominatedOfEachKind) {
  std::vector<PlanPoint> pts(6);
  const double xy[6][2] = {{10, 100}, {20, 80}, {15, 70}, {30, 30}, {5, 90}, {12, 200}};
  for (int i = 0; i < 6; ++i) pts[i].user_tps = xy[i][0], pts[i].gpu_tps = xy[i][1];
  pts[5].research = true;  // the best point is research: never on the shipped front
  const std::vector<int> front = mark_pareto(pts, false);
  EXPECT_EQ(front, (std::vector<int>{0, 1, 3}));  // ordered by tokens/s per user
  EXPECT_FALSE(pts[2].pareto);                    // dominated by (20, 80)
  EXPECT_FALSE(pts[4].pareto);                    // dominated by (10, 100)
  EXPECT_EQ(mark_pareto(pts, true), (std::vector<int>{5}));
  EXPECT_TRUE(is_research(models::Strategy::kRowStream));
  EXPECT_FALSE(is_research(models::Strategy::kFlashInferA2a));
}

TEST(Plan, BatchContextsFollowTheDistribution) {
  const std::vector<std::int64_t> sorted = {100, 200, 300, 400};
  EXPECT_EQ(batch_contexts(sorted, 1), (std::vector<std::int64_t>{300}));  // the median's neighbour
  EXPECT_EQ(batch_contexts(sorted, 4), sorted);
  EXPECT_EQ(batch_contexts(sorted, 2), (std::vector<std::int64_t>{200, 400}));
  PlanOptions o;
  o.context = "32k";
  EXPECT_EQ(plan_contexts(o), (std::vector<std::int64_t>{32768}));
  o.context = "zero";
  EXPECT_THROW(plan_contexts(o), InputError);
}

}  // namespace
}  // namespace dcpsim::analysis
