// The scenario flags: list ranges, the model rule (a preset unless geometry flags are given), strategy lists,
// and the one-line summary of skipped scan combinations.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "dcpsim/analysis/scenario_flags.h"
#include "dcpsim/error.h"

namespace dcpsim::analysis {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ScenarioFlags, ListsAndRangesExpand) {
  EXPECT_THAT(expand_list("1..4", "dcp"), ElementsAre("1", "2", "3", "4"));
  EXPECT_THAT(expand_list("1..72:x2", "dcp"), ElementsAre("1", "2", "4", "8", "16", "32", "64"));
  EXPECT_THAT(expand_list("8..32:8", "dcp"), ElementsAre("8", "16", "24", "32"));
  EXPECT_THAT(expand_list("2, 4,8", "dcp"), ElementsAre("2", "4", "8"));
  EXPECT_THAT(expand_list("1,3..4,72", "dcp"), ElementsAre("1", "3", "4", "72"));
  EXPECT_THAT(expand_list("32k..128k:x2", "context", true), ElementsAre("32768", "65536", "131072"));
  EXPECT_THAT(expand_list("4k", "context", true), ElementsAre("4k"));
  for (const char* bad :
       {"4..1", "1..", "..4", "1..8:x1", "1..8:0", "0..8:x2", "1..200000", "a..b", "1..4,"}) {
    EXPECT_THROW(expand_list(bad, "dcp"), InputError) << bad;
  }
  try {
    expand_list("4..1", "dcp");
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("--dcp '4..1'"));
  }
}

TEST(ScenarioFlags, ModelDefaultsToDeepSeekUnlessGeometryIsGiven) {
  ScenarioFlags f;
  EXPECT_EQ(model_of(f)->name, "deepseek-v3");
  EXPECT_EQ(model_label(f), "deepseek-v3 (default)");
  const models::Scenario s = to_scenario(f);
  EXPECT_EQ(s.heads, 128);
  EXPECT_EQ(s.qk_dim, 576);
  f.heads = "64";
  EXPECT_FALSE(model_of(f).has_value());
  EXPECT_EQ(to_scenario(f).heads, 64);
  EXPECT_EQ(to_scenario(f).head_dim, 512);  // the old defaults without a model
  f.model = "llama-3.1-70b";
  f.tp = "8";
  f.dcp = "4";
  EXPECT_EQ(model_label(f), "llama-3.1-70b (--heads overridden)");
  const models::Scenario l = to_scenario(f);
  EXPECT_EQ(l.heads, 64);  // the flag wins
  EXPECT_EQ(l.kv_heads, 4);
  EXPECT_EQ(l.head_dim, 128);
  EXPECT_EQ(l.qk_dim, 128);
  f.heads.clear();
  EXPECT_EQ(to_scenario(f).heads, 32);  // 64 heads x DCP 4 / TP 8
  f.model = "none";
  EXPECT_FALSE(model_of(f).has_value());
  f.model = "no-such-model";
  EXPECT_THROW(model_of(f), InputError);
}

TEST(ScenarioFlags, StrategyListsAndAll) {
  EXPECT_EQ(parse_strategy_list("all", "strategy").size(), 7u);
  EXPECT_THAT(
      parse_strategy_list("ag_rs,fi_a2a,vllm-a2a", "strategy"),
      ElementsAre(models::Strategy::kAgRs, models::Strategy::kFlashInferA2a, models::Strategy::kA2aTwoCall));
  EXPECT_THAT(parse_strategy_list("a2a,direct,a2a", "strategy"),
              ElementsAre(models::Strategy::kA2a, models::Strategy::kDirect));
  EXPECT_THROW(parse_strategy_list("a2a,bogus", "strategy"), InputError);
  ScenarioFlags f;
  f.strategy = "all";
  EXPECT_EQ(to_scenarios(f).size(), 7u);
  EXPECT_THROW(to_scenario(f), InputError);  // one value wanted
  const std::vector<models::Strategy> hw = {models::Strategy::kAgRs, models::Strategy::kA2a};
  EXPECT_EQ(to_scenarios(f, hw).size(), 2u);
}

TEST(ScenarioFlags, ScanGridSkipsWhatTheModelCannotRunInOneLine) {
  ScenarioFlags f;
  f.tp = "8";
  f.dcp = "1..12";
  f.batch = "1";
  f.context = "1k";
  f.strategy = "ag-rs,a2a";
  const ScanGrid grid = expand_scan(f);
  EXPECT_EQ(grid.scenarios.size(), 16u);  // dcp 1..8 at TP 8
  EXPECT_EQ(grid.skipped.size(), 8u);     // dcp 9..12, both strategies
  for (std::size_t i = 0; i < grid.scenarios.size(); ++i) {
    EXPECT_EQ(grid.tp[i], 8);
    EXPECT_EQ(grid.scenarios[i].heads, 16 * grid.scenarios[i].dcp);
  }
  const std::string line = skipped_line(grid.skipped, 24);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_THAT(line, HasSubstr("skipped 8 of 24 combinations: 8 like"));
  EXPECT_THAT(line, HasSubstr("tp 8"));
  f.model = "none";
  f.heads = "128";
  f.tp.clear();
  f.dcp = "3";
  const ScanGrid no_model = expand_scan(f);
  ASSERT_EQ(no_model.skipped.size(), 2u);  // ag-rs and a2a scatter heads: they need dcp | heads
  EXPECT_THAT(skipped_line(no_model.skipped, 2), HasSubstr("2 like \"dcp3"));
  EXPECT_EQ(skipped_line({}, 3), "");
}

}  // namespace
}  // namespace dcpsim::analysis
