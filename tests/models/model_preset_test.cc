// Model presets: every built-in loads, its parameter counts derived from config.json figures match its model
// card, the per-rank geometry of a DCP deployment, weights per GPU, the non-attention estimate's limits, and
// the reader's errors.
#include <cmath>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "dcpsim/error.h"
#include "dcpsim/models/model_preset.h"
#include "dcpsim/models/profile.h"

namespace dcpsim::models {
namespace {

using ::testing::HasSubstr;

TEST(ModelPreset, BuiltinsCiteTheirConfigAndMatchTheirModelCards) {
  const auto& names = builtin_model_names();
  for (const char* expected : {"deepseek-v3", "deepseek-r1", "kimi-k2", "llama-3.1-70b", "qwen3-235b-a22b"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
  }
  for (const std::string& name : names) {
    const ModelPreset m = load_model(name);
    EXPECT_EQ(m.name, name);
    EXPECT_THAT(m.config_source, HasSubstr("https://huggingface.co/")) << name;
    EXPECT_THAT(m.config_source, HasSubstr("config.json")) << name;
    const ParameterCounts p = parameter_counts(m);
    EXPECT_NEAR(p.total() / m.card_total_parameters, 1.0, 0.03) << name << ": " << p.total();
    EXPECT_NEAR(p.active_per_token() / m.card_active_parameters, 1.0, 0.06)
        << name << ": " << p.active_per_token();
  }
}

TEST(ModelPreset, DeepSeekV3Figures) {
  const ModelPreset m = load_model("deepseek-v3");
  EXPECT_TRUE(m.mla());
  EXPECT_TRUE(m.moe());
  EXPECT_EQ(m.layers(), 61);
  const ParameterCounts p = parameter_counts(m);
  EXPECT_EQ(p.dense_layers, 3);
  EXPECT_EQ(p.moe_layers, 58);
  EXPECT_DOUBLE_EQ(p.expert, 3.0 * 7168 * 2048);
  // 671B parameters at one byte (FP8, 128 x 128 block scales) over TP 8, but the bf16 embedding, head and
  // router and the replicated MLA down-projections (q_a 7168 x 1536, kv_a 7168 x 576 on every rank).
  EXPECT_EQ(m.weight_dtype, WeightDType::kFP8);
  const double replicated = 61.0 * 7168 * (1536 + 576);
  EXPECT_DOUBLE_EQ(p.attention_replicated, 7168.0 * (1536 + 576));
  const double linear = p.total() - p.embedding - p.lm_head - p.router * p.moe_layers;
  const double expected = (linear - replicated) / 8 * (1 + 4.0 / 16384) + replicated * (1 + 4.0 / 16384) +
                          (p.embedding + p.lm_head) / 8 * 2 + p.router * p.moe_layers * 2;
  EXPECT_NEAR(weight_bytes_per_gpu(m, 8), expected, 1.0);
  EXPECT_NEAR(weight_bytes_per_gpu(m, 8) / 1e9, 85.1, 0.1);
  // NVFP4 blocks: 4.5 bits per weight; the MTP module adds one MoE block and a 2h x h projection.
  EXPECT_LT(weight_bytes_per_gpu(m.with_weight_dtype(WeightDType::kNVFP4), 8),
            0.6 * weight_bytes_per_gpu(m, 8));
  EXPECT_NEAR(weight_bytes_per_gpu(m, 8, 1) - weight_bytes_per_gpu(m, 8),
              (p.attention_replicated + (p.attention_projections - p.attention_replicated) / 8 +
               p.expert * 257 / 8 + 2.0 * 7168 * 7168 / 8) *
                      (1 + 4.0 / 16384) +
                  p.router * 2,
              1.0);
}

TEST(ModelPreset, RankGeometryGathersHeadsOverTheDcpGroup) {
  const ModelPreset ds = load_model("deepseek-v3");
  const RankGeometry g = rank_geometry(ds, 8, 8);
  EXPECT_EQ(g.heads, 128);
  EXPECT_EQ(g.kv_heads, 1);
  EXPECT_EQ(g.head_dim, 512);
  EXPECT_EQ(g.qk_dim, 576);
  EXPECT_EQ(rank_geometry(ds, 2, 8).heads, 32);        // 16 heads per TP rank, gathered over 2
  EXPECT_EQ(rank_geometry(ds, 72, 72).heads, 128);     // DCP = TP: every head on every rank
  EXPECT_THROW(rank_geometry(ds, 16, 8), InputError);  // the DCP group is part of the TP group
  EXPECT_THROW(rank_geometry(ds, 1, 3), InputError);   // 3 does not divide 128
  const ModelPreset llama = load_model("llama-3.1-70b");
  const RankGeometry l = rank_geometry(llama, 4, 8);
  EXPECT_EQ(l.heads, 32);
  EXPECT_EQ(l.kv_heads, 4);
  EXPECT_EQ(l.head_dim, 128);
  EXPECT_EQ(l.qk_dim, 128);
  EXPECT_EQ(rank_geometry(llama, 1, 16).kv_heads, 1);  // 8 KV heads over TP 16: one (replicated) per rank
  const RankGeometry q = rank_geometry(load_model("qwen3-235b-a22b"), 8, 8);
  EXPECT_EQ(q.heads, 64);
  EXPECT_EQ(q.kv_heads, 4);
}

TEST(ModelPreset, ReaderRefusesUnknownNamesFieldsAndBadNumbers) {
  try {
    load_model("gpt-5");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("deepseek-v3"));
    EXPECT_THAT(e.what(), HasSubstr("kimi-k2"));
  }
  const std::string good =
      R"({"format": "dcpsim-model/1", "name": "x", "description": "d", "config_source": "u",
    "config": {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
               "intermediate_size": 128, "vocab_size": 100},
    "weight_bytes_per_parameter": {"value": 2, "source": "s"},
    "model_card": {"total_parameters": 1e5, "active_parameters": 1e5, "source": "s"}})";
  const ModelPreset m = parse_model(good, "x.json");
  EXPECT_EQ(rank_geometry(m, 2, 2).heads, 4);
  EXPECT_EQ(rank_geometry(m, 2, 2).head_dim, 16);  // hidden / heads
  const auto edited = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  EXPECT_THROW(parse_model(edited("\"vocab_size\"", "\"vocab_sise\""), "x.json"), InputError);
  EXPECT_THROW(parse_model(edited("\"num_key_value_heads\": 2", "\"num_key_value_heads\": 3"), "x.json"),
               InputError);
  EXPECT_THROW(parse_model(edited("\"value\": 2", "\"value\": -2"), "x.json"), InputError);
  EXPECT_THROW(parse_model(edited("dcpsim-model/1", "dcpsim-model/9"), "x.json"), InputError);
  EXPECT_THROW(parse_model(edited("\"hidden_size\": 64", "\"hidden_size\": 1.5"), "x.json"), InputError);
  EXPECT_THROW(parse_model("[", "x.json"), InputError);
  EXPECT_THROW(load_model("/no/such/model.json"), InputError);
}

}  // namespace
}  // namespace dcpsim::models
