// Scenario validation, labels and token-count parsing.
#include "dcpsim/models/scenario.h"

#include <cmath>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "dcpsim/error.h"

namespace dcpsim::models {
namespace {

using ::testing::HasSubstr;

Scenario valid() {
  Scenario s;
  s.dcp = 8;
  s.contexts = uniform_contexts(64, 131072);
  return s;
}

std::string error_of(const Scenario& s) {
  try {
    s.validate();
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Scenario, ScaleDefaultsToInverseSqrtQkDim) {
  Scenario s = valid();
  EXPECT_DOUBLE_EQ(s.scale(), 1.0 / std::sqrt(576.0));
  s.softmax_scale = 0.125;
  EXPECT_EQ(s.scale(), 0.125);
}

TEST(Scenario, DefaultsAreValidAndLabelled) {
  const Scenario s = valid();
  EXPECT_NO_THROW(s.validate());
  EXPECT_EQ(s.label(), "dcp8 h128 d512/576 kv1 b64 ctx131072 ag-rs graph");
}

TEST(Scenario, LabelShowsContextRangeAndInterleave) {
  Scenario s = valid();
  s.contexts = {100, 4096, 7};
  s.interleave = 16;
  s.strategy = Strategy::kA2a;
  s.launch = LaunchMode::kEager;
  EXPECT_EQ(s.label(), "dcp8 h128 d512/576 kv1 b3 ctx7-4096 i16 a2a eager");
}

TEST(Scenario, ValidateNamesTheBadField) {
  Scenario s = valid();
  s.dcp = 0;
  EXPECT_THAT(error_of(s), HasSubstr("dcp = 0"));
  s = valid();
  s.kv_heads = 3;
  EXPECT_THAT(error_of(s), HasSubstr("kv_heads = 3 does not divide heads = 128"));
  s = valid();
  s.qk_dim = 256;
  EXPECT_THAT(error_of(s), HasSubstr("qk_dim = 256"));
  s = valid();
  s.contexts = {5, -1};
  EXPECT_THAT(error_of(s), HasSubstr("row 1 = -1"));
  s = valid();
  s.contexts.clear();
  EXPECT_THAT(error_of(s), HasSubstr("no rows"));
  s = valid();
  s.interleave = -2;
  EXPECT_THAT(error_of(s), HasSubstr("interleave = -2"));
  s = valid();
  s.softmax_scale = std::nan("");
  EXPECT_THAT(error_of(s), HasSubstr("softmax_scale"));
}

TEST(Scenario, HeadScatteringStrategiesNeedDivisibleHeads) {
  Scenario s = valid();
  s.dcp = 6;
  for (Strategy st : all_strategies()) {
    s.strategy = st;
    if (scatters_heads(st)) {
      EXPECT_THAT(error_of(s), HasSubstr("heads = 128 is not divisible by dcp = 6")) << to_string(st);
    } else {
      EXPECT_EQ(error_of(s), "no error");
    }
  }
}

// CUDA-graph padding rows: no context, but every merge kernel and collective moves them; the label says so.
TEST(Scenario, PaddingRowsJoinTheMergeButNotTheBatch) {
  Scenario s = valid();
  s.padded_rows = 4;
  EXPECT_NO_THROW(s.validate());
  EXPECT_EQ(s.rows(), 64);
  EXPECT_EQ(s.merge_rows(), 68);
  EXPECT_THAT(s.label(), HasSubstr(" b64+4 "));
  s.padded_rows = -1;
  EXPECT_THAT(error_of(s), HasSubstr("padded_rows = -1"));
}

TEST(Scenario, UniformContexts) {
  EXPECT_EQ(uniform_contexts(3, 7), (std::vector<int64_t>{7, 7, 7}));
  EXPECT_TRUE(uniform_contexts(0, 7).empty());
  EXPECT_THROW(uniform_contexts(-1, 7), InputError);
  EXPECT_THROW(uniform_contexts(2, -7), InputError);
}

TEST(Scenario, ParseTokenCount) {
  EXPECT_EQ(parse_token_count("4096"), 4096);
  EXPECT_EQ(parse_token_count("0"), 0);
  EXPECT_EQ(parse_token_count("32k"), 32 * 1024);
  EXPECT_EQ(parse_token_count("128K"), 128 * 1024);
  EXPECT_EQ(parse_token_count("1m"), 1024 * 1024);
  EXPECT_EQ(parse_token_count("1M"), 1024 * 1024);
  for (const char* bad :
       {"", "k", "-5", "1.5k", "12g", "4 096", "99999999999999999999", "9007199254740993m"}) {
    try {
      parse_token_count(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const InputError& e) {
      EXPECT_THAT(e.what(), HasSubstr("'" + std::string(bad) + "'"));
    }
  }
}

}  // namespace
}  // namespace dcpsim::models
