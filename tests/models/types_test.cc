// Spellings of the vocabulary types round-trip, and bad spellings name the value and the allowed ones.
#include "dcpsim/models/types.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "dcpsim/error.h"

namespace dcpsim::models {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

template <typename F>
std::string input_error_message(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected InputError";
  return {};
}

TEST(Types, SpellingsRoundTrip) {
  for (LseBase b : {LseBase::kE, LseBase::k2}) EXPECT_EQ(parse_lse_base(to_string(b)), b);
  for (DType t : {DType::kF32, DType::kBF16, DType::kF16, DType::kF64})
    EXPECT_EQ(parse_dtype(to_string(t)), t);
  for (Strategy s : all_strategies()) EXPECT_EQ(parse_strategy(to_string(s)), s);
  for (LaunchMode m : {LaunchMode::kEager, LaunchMode::kGraph, LaunchMode::kPdl}) {
    EXPECT_EQ(parse_launch_mode(to_string(m)), m);
  }
}

TEST(Types, ContractSpellings) {
  EXPECT_EQ(to_string(LseBase::kE), "e");
  EXPECT_EQ(to_string(LseBase::k2), "2");
  EXPECT_EQ(to_string(DType::kBF16), "bf16");
  EXPECT_EQ(to_string(Strategy::kAgRs), "ag-rs");
  EXPECT_EQ(to_string(Strategy::kRowStream), "row-stream");
  EXPECT_EQ(to_string(Strategy::kFlashInferA2a), "flashinfer-a2a");
  EXPECT_EQ(to_string(LaunchMode::kPdl), "pdl");
}

TEST(Types, AllStrategiesListsEachOnce) {
  const auto& all = all_strategies();
  EXPECT_THAT(all,
              ::testing::ElementsAre(Strategy::kAgRs, Strategy::kAgAr, Strategy::kA2a, Strategy::kDirect,
                                     Strategy::kRowStream, Strategy::kFlashInferA2a, Strategy::kA2aTwoCall));
}

// The serving engines' names: every hyphenated name with '_' (vLLM's and SGLang's ag_rs), SGLang's fi_a2a,
// and the engine each "a2a" means (vLLM: two calls; SGLang: one packed call).
TEST(Types, EngineAliasesParse) {
  for (Strategy s : all_strategies()) {
    std::string underscored(to_string(s));
    for (char& c : underscored) c = c == '-' ? '_' : c;
    EXPECT_EQ(parse_strategy(underscored), s) << underscored;
  }
  EXPECT_EQ(parse_strategy("ag_rs"), Strategy::kAgRs);
  EXPECT_EQ(parse_strategy("fi_a2a"), Strategy::kFlashInferA2a);
  EXPECT_EQ(parse_strategy("vllm-a2a"), Strategy::kA2aTwoCall);
  EXPECT_EQ(parse_strategy("sglang-a2a"), Strategy::kA2a);
  EXPECT_EQ(parse_strategy("a2a"), Strategy::kA2a);
  for (const StrategyAlias& a : strategy_aliases()) EXPECT_EQ(parse_strategy(a.alias), a.strategy);
  EXPECT_THAT(input_error_message([] { parse_strategy("a2b"); }), HasSubstr("did you mean 'a2a'?"));
  EXPECT_THAT(input_error_message([] { parse_strategy("fi_a2"); }), HasSubstr("did you mean 'fi_a2a'?"));
  EXPECT_THAT(input_error_message([] { parse_strategy("zzzzzzzz"); }),
              ::testing::Not(HasSubstr("did you mean")));
}

TEST(Types, BadSpellingsNameValueAndAllowed) {
  EXPECT_THAT(input_error_message([] { parse_lse_base("10"); }), AllOf(HasSubstr("'10'"), HasSubstr("e, 2")));
  EXPECT_THAT(input_error_message([] { parse_dtype("int8"); }),
              AllOf(HasSubstr("'int8'"), HasSubstr("fp32, bf16")));
  EXPECT_THAT(input_error_message([] { parse_strategy("ring"); }),
              AllOf(HasSubstr("'ring'"),
                    HasSubstr("ag-rs, ag-ar, a2a, direct, row-stream, flashinfer-a2a, a2a-2call")));
  EXPECT_THAT(input_error_message([] { parse_launch_mode(""); }), AllOf(HasSubstr("''"), HasSubstr("eager")));
}

TEST(Types, DtypeBytes) {
  EXPECT_EQ(dtype_bytes(DType::kF32), 4u);
  EXPECT_EQ(dtype_bytes(DType::kBF16), 2u);
  EXPECT_EQ(dtype_bytes(DType::kF16), 2u);
  EXPECT_EQ(dtype_bytes(DType::kF64), 8u);
}

TEST(Types, StrategyProperties) {
  EXPECT_TRUE(scatters_heads(Strategy::kAgRs));
  EXPECT_FALSE(scatters_heads(Strategy::kAgAr));
  EXPECT_TRUE(scatters_heads(Strategy::kA2a));
  EXPECT_TRUE(scatters_heads(Strategy::kDirect));
  EXPECT_TRUE(scatters_heads(Strategy::kRowStream));
  EXPECT_FALSE(accumulates_in_fp32(Strategy::kAgRs));
  EXPECT_FALSE(accumulates_in_fp32(Strategy::kAgAr));
  EXPECT_TRUE(accumulates_in_fp32(Strategy::kA2a));
  EXPECT_TRUE(accumulates_in_fp32(Strategy::kDirect));
  EXPECT_TRUE(accumulates_in_fp32(Strategy::kRowStream));
  EXPECT_TRUE(scatters_heads(Strategy::kFlashInferA2a));
  EXPECT_TRUE(accumulates_in_fp32(Strategy::kFlashInferA2a));
  EXPECT_TRUE(interleaves_heads(Strategy::kFlashInferA2a));
  EXPECT_TRUE(scatters_heads(Strategy::kA2aTwoCall));
  EXPECT_TRUE(accumulates_in_fp32(Strategy::kA2aTwoCall));
  EXPECT_FALSE(interleaves_heads(Strategy::kA2aTwoCall));
  EXPECT_FALSE(interleaves_heads(Strategy::kDirect));
}

}  // namespace
}  // namespace dcpsim::models
