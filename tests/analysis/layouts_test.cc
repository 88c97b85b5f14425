// The one rule for layouts, the default TP, strategy tiers and skip reasons (analysis/layouts.h): the figures
// come from the presets' config.json parameter counts and the built-in profiles' HBM.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "dcpsim/analysis/layouts.h"
#include "dcpsim/error.h"

namespace dcpsim::analysis {
namespace {

using models::Strategy;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

LayoutQuery query(const char* model, const char* profile = "h200-sxm") {
  return LayoutQuery::of(models::load_model(model), models::load_profile(profile));
}

TEST(Layouts, DefaultTpIsTheSmallestMultipleOfTheLargestDcpWhoseWeightsFit) {
  // DeepSeek-V3 (671 B parameters at fp8) on 141 GB x 0.9: TP 8 holds 84 GB, TP 4 would hold 168 GB.
  const LayoutQuery ds = query("deepseek-v3");
  EXPECT_THAT(default_tp(ds, {1, 8}).tp, ElementsAre(8));
  EXPECT_THAT(default_tp(ds, {1}).tp, ElementsAre(8));  // TP 3, 5, 6, 7 do not split 128 heads
  EXPECT_THAT(default_tp(ds, {3}).tp, ElementsAre(6));  // TP 3 would hold 224 GB
  EXPECT_THAT(default_tp(ds, {16}).tp, ElementsAre(16));
  const LayoutChoice c = default_tp(ds, {1, 2, 4, 8});
  EXPECT_TRUE(c.defaulted);
  EXPECT_THAT(c.rule, HasSubstr("TP 8 (default: the smallest multiple of DCP 8"));
  EXPECT_THAT(c.rule, HasSubstr("fp8"));
  EXPECT_THAT(c.rule, HasSubstr("TP % DCP == 0"));
  // Llama 3.1 70B at bf16 (141 GB) needs two GPUs; with DCP 4 the multiple of 4 fits at once.
  const LayoutQuery llama = query("llama-3.1-70b");
  EXPECT_THAT(default_tp(llama, {1}).tp, ElementsAre(2));
  EXPECT_THAT(default_tp(llama, {1, 4}).tp, ElementsAre(4));
  // A weight dtype override (issue 33's --weight-dtype) moves the answer: DeepSeek-V3 at bf16 needs TP 16.
  LayoutQuery bf16 = ds;
  bf16.bytes_per_parameter = 2.0;
  EXPECT_THAT(default_tp(bf16, {8}).tp, ElementsAre(16));
  EXPECT_THAT(bf16.weight_dtype_name(), HasSubstr("bf16"));
  // No model: no weights to place, TP = the largest DCP size.
  const LayoutQuery none = LayoutQuery::of(std::nullopt, models::load_profile("h200-sxm"));
  EXPECT_THAT(default_tp(none, {2, 4}).tp, ElementsAre(4));
}

TEST(Layouts, NothingFitsIsAnInputError) {
  LayoutQuery tiny = query("deepseek-v3");
  tiny.hbm_bytes = 1e6;
  EXPECT_THROW(default_tp(tiny, {8}), InputError);
}

TEST(Layouts, EvaluateFollowsVllmsRuleAndTheWeights) {
  const LayoutQuery ds = query("deepseek-v3");
  const Layout ok = evaluate_layout(ds, 8, 8);
  EXPECT_TRUE(ok.usable());
  ASSERT_TRUE(ok.geometry.has_value());
  EXPECT_EQ(ok.geometry->heads, 128);
  EXPECT_NEAR(ok.weight_bytes_per_gpu / 1e9, 84.0, 1.5);
  EXPECT_THAT(ok.fit_text(), HasSubstr("fit in"));
  const Layout small = evaluate_layout(ds, 1, 1);
  EXPECT_TRUE(small.valid);
  EXPECT_FALSE(small.weights_fit);
  EXPECT_THAT(small.fit_text(), HasSubstr("does not fit"));
  for (auto [tp, dcp] : {std::pair{4, 8}, std::pair{12, 8}}) {
    const Layout bad = evaluate_layout(ds, tp, dcp);
    EXPECT_FALSE(bad.valid) << tp << "x" << dcp;
    EXPECT_THAT(bad.invalid_reason, HasSubstr("TP % DCP == 0"));
  }
  EXPECT_FALSE(evaluate_layout(ds, 3, 1).valid);  // 128 heads over TP 3
  EXPECT_THROW(evaluate_layout(ds, 0, 1), InputError);
}

TEST(Layouts, ResolveTpWritesTheDefaultIntoTheFlags) {
  ScenarioFlags f;
  f.dcp = "1,2,4,8";
  f.strategy = "all";
  const models::HardwareProfile h200 = models::load_profile("h200-sxm");
  const LayoutChoice c = resolve_tp(f, LayoutQuery::of(model_of(f), h200));
  EXPECT_THAT(c.tp, ElementsAre(8));
  EXPECT_EQ(f.default_tp, 8);
  EXPECT_EQ(tp_of(f, 1), 8);
  const ScanGrid grid = expand_scan(f);
  ASSERT_EQ(grid.scenarios.size(), 4u * models::all_strategies().size());  // 16 N heads: N | H everywhere
  for (std::size_t i = 0; i < grid.scenarios.size(); ++i) {
    EXPECT_EQ(grid.tp[i], 8);
    EXPECT_EQ(grid.scenarios[i].heads, 16 * grid.scenarios[i].dcp);  // 128 heads x N / TP 8
  }
  f.tp = "16";
  const LayoutChoice given = resolve_tp(f, LayoutQuery::of(model_of(f), h200));
  EXPECT_FALSE(given.defaulted);
  EXPECT_EQ(f.default_tp, 0);
  EXPECT_THAT(given.rule, HasSubstr("TP 16 (--tp)"));
}

TEST(Strategies, TiersEnginesAndPicks) {
  EXPECT_TRUE(is_production(Strategy::kAgRs));
  EXPECT_TRUE(is_production(Strategy::kFlashInferA2a));
  EXPECT_FALSE(is_production(Strategy::kRowStream));
  for (const Strategy s : models::all_strategies()) EXPECT_EQ(strategy_info(s).strategy, s);
  EXPECT_THAT(engine_text(Strategy::kAgRs), HasSubstr("vLLM --dcp-comm-backend ag_rs"));
  EXPECT_THAT(engine_text(Strategy::kFlashInferA2a), HasSubstr("fi_a2a"));
  EXPECT_THAT(engine_text(Strategy::kRowStream), HasSubstr("no serving engine"));
  EXPECT_THAT(engine_text(Strategy::kA2aTwoCall), HasSubstr("vLLM --dcp-comm-backend a2a"));
  EXPECT_THAT(engine_text(Strategy::kA2a), HasSubstr("SGLang --dcp-comm-backend a2a"));
  EXPECT_THAT(engine_text(Strategy::kDirect), HasSubstr("no released engine flag yet"));
  const std::vector<Strategy> s = {Strategy::kAgRs, Strategy::kRowStream, Strategy::kA2a};
  EXPECT_EQ(pick_fastest(s, {3.0, 1.0, 2.0}, false), 2u);  // row-stream is faster but research
  EXPECT_EQ(pick_fastest(s, {3.0, 1.0, 2.0}, true), 1u);
  EXPECT_FALSE(pick_fastest({Strategy::kRowStream}, {1.0}, false).has_value());
}

TEST(Strategies, SkippedWithTheRuleNotAnAbort) {
  models::Scenario base;
  base.dcp = 3;
  base.heads = 64;
  base.contexts = {4096};
  const StrategyChoice c = runnable_strategies(base, models::all_strategies());
  ASSERT_EQ(c.run.size(), 1u);
  EXPECT_EQ(c.run[0].strategy, Strategy::kAgAr);
  EXPECT_EQ(c.skipped.size(), models::all_strategies().size() - 1);
  for (const SkippedStrategy& k : c.skipped) {
    EXPECT_THAT(k.reason, HasSubstr("divisible by the DCP size (3)"));
  }
  EXPECT_THROW(runnable_strategies(base, {Strategy::kAgRs}), InputError);
  base.contexts = {-1};  // wrong for every strategy: the caller's error
  EXPECT_THROW(runnable_strategies(base, {Strategy::kAgAr}), InputError);
}

}  // namespace
}  // namespace dcpsim::analysis
