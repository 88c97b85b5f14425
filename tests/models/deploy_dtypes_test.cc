// The deployed step's element types: the fp8 (e4m3) KV cache — rounding, bytes, the query staying 16-bit, the
// KV bytes per token attention reads — and the weight dtypes' bytes per parameter with their scales.
#include <cmath>
#include <limits>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "dcpsim/error.h"
#include "dcpsim/models/cost_kernels.h"
#include "dcpsim/models/dtype.h"
#include "dcpsim/models/model_preset.h"
#include "dcpsim/models/scenario.h"

namespace dcpsim::models {
namespace {

TEST(Fp8KvCache, RoundsToE4m3Saturating) {
  EXPECT_EQ(round_to(DType::kFP8E4M3, 1.0), 1.0);
  EXPECT_EQ(round_to(DType::kFP8E4M3, 1.0 + 1.0 / 16), 1.0);   // a tie: to even (mantissa 000)
  EXPECT_EQ(round_to(DType::kFP8E4M3, 1.0 + 3.0 / 16), 1.25);  // a tie: to even (mantissa 010)
  EXPECT_EQ(round_to(DType::kFP8E4M3, 1.0 + 1.0 / 8), 1.125);  // 3 mantissa bits
  EXPECT_EQ(round_to(DType::kFP8E4M3, 448.0), 448.0);          // the largest finite
  EXPECT_EQ(round_to(DType::kFP8E4M3, 470.0), 448.0);          // saturates (480 is NaN in e4m3fn)
  EXPECT_EQ(round_to(DType::kFP8E4M3, -1e9), -448.0);
  EXPECT_EQ(round_to(DType::kFP8E4M3, std::numeric_limits<double>::infinity()), 448.0);
  EXPECT_TRUE(std::isnan(round_to(DType::kFP8E4M3, std::nan(""))));
  EXPECT_EQ(round_to(DType::kFP8E4M3, std::ldexp(1.0, -9)), std::ldexp(1.0, -9));   // the smallest subnormal
  EXPECT_EQ(round_to(DType::kFP8E4M3, std::ldexp(3.0, -11)), std::ldexp(1.0, -9));  // 0.75 quanta -> 1
  EXPECT_EQ(round_to(DType::kFP8E4M3, std::ldexp(1.0, -11)), 0.0);                  // 0.25 quanta -> 0
  EXPECT_EQ(unit_roundoff(DType::kFP8E4M3), 1.0 / 16);
}

TEST(Fp8KvCache, SpellingsBytesAndTheQuery) {
  EXPECT_EQ(parse_dtype("fp8"), DType::kFP8E4M3);
  EXPECT_EQ(parse_dtype("fp8_e4m3"), DType::kFP8E4M3);  // vLLM's spelling
  EXPECT_EQ(to_string(DType::kFP8E4M3), "fp8");
  EXPECT_EQ(dtype_bytes(DType::kFP8E4M3), 1u);
  EXPECT_EQ(query_dtype(DType::kFP8E4M3), DType::kBF16);
  EXPECT_EQ(query_dtype(DType::kF16), DType::kF16);
  Scenario s;
  s.contexts = {4096};
  s.kv_dtype = DType::kFP8E4M3;
  EXPECT_NO_THROW(s.validate());
  // MLA: 576 latent + rope bytes per token at fp8, half of bf16's; GQA: K and V per KV head.
  EXPECT_EQ(kv_bytes_per_token(attention_shape(s)), 576.0);
  s.kv_dtype = DType::kBF16;
  EXPECT_EQ(kv_bytes_per_token(attention_shape(s)), 1152.0);
  Scenario g = s;
  g.heads = 8, g.kv_heads = 1, g.head_dim = g.qk_dim = 128, g.kv_dtype = DType::kFP8E4M3;
  EXPECT_EQ(kv_bytes_per_token(attention_shape(g)), 256.0);
  s.out_dtype = DType::kFP8E4M3;
  EXPECT_THROW(s.validate(), InputError);  // a KV-cache type only
}

TEST(WeightDTypes, BytesPerParameterIncludeTheirScales) {
  EXPECT_EQ(weight_dtype_bytes(WeightDType::kBF16), 2.0);
  EXPECT_DOUBLE_EQ(weight_dtype_bytes(WeightDType::kFP8), 1.0 + 4.0 / (128 * 128));  // fp32 per 128x128 block
  EXPECT_DOUBLE_EQ(weight_dtype_bytes(WeightDType::kNVFP4), 0.5 + 1.0 / 16);         // e4m3 per 16
  EXPECT_DOUBLE_EQ(weight_dtype_bytes(WeightDType::kMXFP4), 0.5 + 1.0 / 32);         // e8m0 per 32
  EXPECT_DOUBLE_EQ(weight_dtype_bytes(WeightDType::kINT4), 0.5 + 2.0 / 32);          // bf16 per group of 32
  for (const char* s : {"bf16", "fp8", "nvfp4", "mxfp4", "int4"})
    EXPECT_EQ(to_string(parse_weight_dtype(s)), s);
  EXPECT_THROW(parse_weight_dtype("fp6"), InputError);
}

TEST(WeightDTypes, PresetsDefaultToTheirReleaseAndOverride) {
  EXPECT_EQ(load_model("deepseek-r1").weight_dtype, WeightDType::kFP8);
  EXPECT_EQ(load_model("kimi-k2").weight_dtype, WeightDType::kFP8);
  EXPECT_EQ(load_model("llama-3.1-70b").weight_dtype, WeightDType::kBF16);
  EXPECT_EQ(load_model("qwen3-235b-a22b").kv_cache_dtype, DType::kBF16);
  EXPECT_EQ(load_model("deepseek-v3").config.num_nextn_predict_layers, 1);
  const ModelPreset llama = load_model("llama-3.1-70b");
  const ModelPreset fp8 = llama.with_weight_dtype(WeightDType::kFP8);
  EXPECT_EQ(fp8.weight_dtype, WeightDType::kFP8);
  EXPECT_THAT(fp8.weight_source, ::testing::HasSubstr("--weight-dtype fp8"));
  // Dense GQA, nothing replicated: the blocks halve, the bf16 embedding and head stay.
  const ParameterCounts p = parameter_counts(llama);
  const double bf16_part = (p.embedding + p.lm_head) / 4 * 2;
  EXPECT_NEAR(weight_bytes_per_gpu(fp8, 4) - bf16_part,
              (weight_bytes_per_gpu(llama, 4) - bf16_part) / 2 * (1 + 4.0 / 16384), 1.0);
}

}  // namespace
}  // namespace dcpsim::models
