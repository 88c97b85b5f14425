// Scenario -> dcpsim.trace.v1.Scenario -> Scenario is the identity, and the message spells every enum
// explicitly.
#include "dcpsim/models/scenario_proto.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dcpsim/error.h"

namespace dcpsim::models {
namespace {

namespace v1 = traces::v1;

void expect_same(const Scenario& a, const Scenario& b) {
  EXPECT_EQ(a.dcp, b.dcp);
  EXPECT_EQ(a.heads, b.heads);
  EXPECT_EQ(a.kv_heads, b.kv_heads);
  EXPECT_EQ(a.head_dim, b.head_dim);
  EXPECT_EQ(a.qk_dim, b.qk_dim);
  EXPECT_EQ(a.interleave, b.interleave);
  EXPECT_EQ(a.kv_dtype, b.kv_dtype);
  EXPECT_EQ(a.out_dtype, b.out_dtype);
  EXPECT_EQ(a.lse_base, b.lse_base);
  EXPECT_EQ(a.softmax_scale, b.softmax_scale);  // exact: a double travels bit for bit
  EXPECT_EQ(a.contexts, b.contexts);
  EXPECT_EQ(a.strategy, b.strategy);
  EXPECT_EQ(a.launch, b.launch);
  EXPECT_EQ(a.padded_rows, b.padded_rows);
  EXPECT_EQ(a.rows_per_kv, b.rows_per_kv);
}

// Scenarios that together use every value of every enum, odd sizes and an empty-shard-heavy batch.
std::vector<Scenario> varied_scenarios() {
  const DType dtypes[] = {DType::kF32, DType::kBF16, DType::kF16, DType::kF64};
  const LseBase bases[] = {LseBase::kE, LseBase::k2};
  const LaunchMode launches[] = {LaunchMode::kEager, LaunchMode::kGraph, LaunchMode::kPdl};
  std::vector<Scenario> out;
  int i = 0;
  for (Strategy strategy : all_strategies()) {
    for (DType dtype : dtypes) {
      Scenario s;
      s.dcp = 1 + (i % 7) * 3;  // 1, 4, 7, ... 19: not only powers of two
      s.heads = 16 * (1 + i % 8);
      s.kv_heads = (i % 2 == 0) ? 1 : 8;
      s.head_dim = (i % 3 == 0) ? 512 : 128;
      s.qk_dim = (i % 3 == 0) ? 576 : 128;
      s.interleave = (i % 4 == 0) ? 16 : 1;
      s.kv_dtype = dtype;
      s.out_dtype = dtypes[(i + 1) % 4];
      s.lse_base = bases[i % 2];
      s.softmax_scale = (i % 5 == 0) ? 0.0 : 0.0416666666666666713 + i * 1e-17;
      s.contexts = {1, 0, 131072, 5 + i, int64_t{1} << 40};
      s.strategy = strategy;
      s.launch = launches[i % 3];
      s.padded_rows = i % 3;
      s.rows_per_kv = (i % 2 == 0) ? 1 : 5;  // the 5 rows one verify block
      out.push_back(s);
      ++i;
    }
  }
  return out;
}

TEST(ScenarioProto, AScenarioWrittenBeforeRowsPerKvReadsAsOneRowPerRequest) {
  v1::Scenario m = to_proto(Scenario{});
  m.clear_rows_per_kv();
  EXPECT_EQ(from_proto(m).rows_per_kv, 1);
}

TEST(ScenarioProto, RoundTripIsIdentity) {
  const auto scenarios = varied_scenarios();
  ASSERT_EQ(scenarios.size(), all_strategies().size() * 4);
  for (const Scenario& s : scenarios) {
    SCOPED_TRACE(s.label());
    expect_same(from_proto(to_proto(s)), s);
  }
}

TEST(ScenarioProto, RoundTripSurvivesSerialisation) {
  for (const Scenario& s : varied_scenarios()) {
    v1::Scenario parsed;
    ASSERT_TRUE(parsed.ParseFromString(to_proto(s).SerializeAsString()));
    expect_same(from_proto(parsed), s);
  }
}

TEST(ScenarioProto, MessageSpellsEveryFieldExplicitly) {
  Scenario s;
  s.dcp = 8;
  s.lse_base = LseBase::k2;
  s.kv_dtype = DType::kF16;
  s.out_dtype = DType::kF32;
  s.strategy = Strategy::kRowStream;
  s.launch = LaunchMode::kPdl;
  s.contexts = {10, 20};
  const v1::Scenario m = to_proto(s);
  EXPECT_EQ(m.dcp(), 8);
  EXPECT_EQ(m.lse_base(), v1::LSE_BASE_2);
  EXPECT_EQ(m.kv_dtype(), v1::DTYPE_F16);
  EXPECT_EQ(m.out_dtype(), v1::DTYPE_F32);
  EXPECT_EQ(m.strategy(), v1::STRATEGY_ROW_STREAM);
  EXPECT_EQ(m.launch_mode(), v1::LAUNCH_MODE_PDL);
  ASSERT_EQ(m.contexts_size(), 2);
  EXPECT_EQ(m.contexts(1), 20);
}

TEST(ScenarioProto, EveryEnumValueMapsBothWays) {
  for (DType v : {DType::kF32, DType::kBF16, DType::kF16, DType::kF64}) EXPECT_EQ(from_proto(to_proto(v)), v);
  for (LseBase v : {LseBase::kE, LseBase::k2}) EXPECT_EQ(from_proto(to_proto(v)), v);
  for (Strategy v : all_strategies()) EXPECT_EQ(from_proto(to_proto(v)), v);
  for (LaunchMode v : {LaunchMode::kEager, LaunchMode::kGraph, LaunchMode::kPdl}) {
    EXPECT_EQ(from_proto(to_proto(v)), v);
  }
  // The trace spelling and the flag spelling agree, so a trace reads the way its command line was typed.
  for (Strategy v : all_strategies()) EXPECT_EQ(traces::to_string(to_proto(v)), to_string(v));
  for (DType v : {DType::kF32, DType::kBF16, DType::kF16, DType::kF64}) {
    EXPECT_EQ(traces::to_string(to_proto(v)), to_string(v));
  }
}

TEST(ScenarioProto, UnspecifiedLseBaseIsRejectedNotImplied) {
  v1::Scenario m = to_proto(Scenario{});
  m.clear_lse_base();
  try {
    from_proto(m);
    FAIL() << "an unspecified LSE base was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("lse_base"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("unspecified"), std::string::npos) << e.what();
  }
}

TEST(ScenarioProto, UnknownOrMissingEnumsNameTheField) {
  v1::Scenario m = to_proto(Scenario{});
  m.set_strategy(static_cast<v1::Strategy>(42));
  try {
    from_proto(m);
    FAIL() << "an unknown strategy was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("strategy"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("42"), std::string::npos) << e.what();
  }
  m = to_proto(Scenario{});
  m.clear_out_dtype();
  EXPECT_THROW(from_proto(m), InputError);
  m = to_proto(Scenario{});
  m.clear_launch_mode();
  EXPECT_THROW(from_proto(m), InputError);
}

}  // namespace
}  // namespace dcpsim::models
