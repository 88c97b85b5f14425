#pragma once
// Model presets: the figures of a real model that DCP decode depends on — attention geometry, layers, weights
// — read from its Hugging Face config.json (each preset file in models/presets/ cites the URL), and what
// dcpsim derives from them for a deployment with DCP size N and tensor parallel size TP:
//   - the attention geometry on one rank: H = heads × N / TP query heads after the query all-gather (the DCP
//     group is part of the TP group, as in vLLM), H_kv = max(1, kv_heads × N / TP); MLA models attend over
//     the latent (D = kv_lora_rank, D_qk = kv_lora_rank + qk_rope_head_dim, one KV head);
//   - the weight bytes on one GPU at the weights' dtype (weight_bytes_per_gpu below); the ops of a decode
//     step besides attention are in step_ops.h.
// Presets are data: the JSON files are embedded at build time like the hardware profiles; a user's own file
// in the same format works wherever a preset name does.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dcpsim/models/profile.h"
#include "dcpsim/models/types.h"

namespace dcpsim::models {

// The config.json fields used, spelled as Hugging Face spells them (0 where a model has no such part).
struct ModelConfig {
  std::int64_t hidden_size = 0;
  std::int64_t num_hidden_layers = 0;
  std::int64_t num_attention_heads = 0;
  std::int64_t num_key_value_heads = 0;  // GQA; MLA models attend over one shared latent
  std::int64_t head_dim = 0;             // GQA (0: hidden_size / num_attention_heads)
  std::int64_t q_lora_rank = 0;          // MLA (0: a full-rank query projection)
  std::int64_t kv_lora_rank = 0;         // MLA: > 0 makes the model an MLA model
  std::int64_t qk_nope_head_dim = 0;
  std::int64_t qk_rope_head_dim = 0;
  std::int64_t v_head_dim = 0;
  std::int64_t intermediate_size = 0;      // the dense MLP
  std::int64_t moe_intermediate_size = 0;  // one expert
  std::int64_t n_routed_experts = 0;       // Qwen's config.json calls it num_experts
  std::int64_t n_shared_experts = 0;
  std::int64_t num_experts_per_tok = 0;
  std::int64_t first_k_dense_replace = 0;  // the first layers with a dense MLP instead of MoE
  std::int64_t vocab_size = 0;
  bool tie_word_embeddings = false;
  std::int64_t num_nextn_predict_layers = 0;  // MTP modules shipped with the model (DeepSeek-V3/R1: 1)
};

// The element type of the transformer blocks' linear weights (attention projections, MLP, experts), with the
// bytes per parameter its scales add: bf16 2; fp8 1 + 4 / (128 x 128) (e4m3, an fp32 scale per 128 x 128
// block, as DeepSeek and Kimi release theirs); nvfp4 0.5 + 1/16 (e2m1, an e4m3 scale per 16); mxfp4 0.5 +
// 1/32 (e2m1, an e8m0 scale per 32); int4 0.5 + 2/32 (W4A16, a bf16 scale per group of 32, as Kimi K2
// Thinking is released). The embedding, the output head and the MoE router stay bf16.
enum class WeightDType { kBF16, kFP8, kNVFP4, kMXFP4, kINT4 };
std::string_view to_string(WeightDType d);           // "bf16" | "fp8" | "nvfp4" | "mxfp4" | "int4"
WeightDType parse_weight_dtype(std::string_view s);  // InputError listing the spellings
double weight_dtype_bytes(WeightDType d);            // per parameter, scales included

struct ModelPreset {
  std::string name;
  std::string description;
  std::string config_source;  // URL of the config.json the figures come from
  ModelConfig config;
  // The blocks' linear weights as released (a file's `weight_dtype`); weight_bytes_per_parameter follows it
  // (or is a file's own `weight_bytes_per_parameter`, then weight_dtype is the nearest type).
  WeightDType weight_dtype = WeightDType::kBF16;
  double weight_bytes_per_parameter = 2.0;
  std::string weight_source;
  // A release that quantizes the routed experts only (Kimi K2 Thinking: INT4 experts, BF16 elsewhere): the
  // type of the other linear weights (attention projections, dense MLPs, shared experts). A file's
  // `weight_dtype.dense`; --weight-dtype clears it (every block weight at the new type).
  std::optional<WeightDType> dense_weight_dtype;
  // The type of the non-expert linear weights: dense_weight_dtype, else weight_dtype.
  WeightDType dense_dtype() const { return dense_weight_dtype.value_or(weight_dtype); }
  // The KV-cache type a deployment of the model uses unless told otherwise (vLLM's --kv-cache-dtype auto:
  // the activations' bf16).
  DType kv_cache_dtype = DType::kBF16;
  std::string kv_cache_source;
  double card_total_parameters = 0.0;  // the model card's figures, to check the derived counts against
  double card_active_parameters = 0.0;
  std::string card_source;

  bool mla() const { return config.kv_lora_rank > 0; }
  bool moe() const { return config.n_routed_experts > 0; }
  int layers() const { return static_cast<int>(config.num_hidden_layers); }
  // The same model with its block weights stored as `d` (`--weight-dtype`).
  ModelPreset with_weight_dtype(WeightDType d) const;
};

// "deepseek-v3", ... sorted.
const std::vector<std::string>& builtin_model_names();
// A built-in name or a path to a JSON file in the same format; InputError naming the file and field, or, for
// an unknown name, listing the presets.
ModelPreset load_model(std::string_view name_or_path);
ModelPreset parse_model(std::string_view json_text, std::string_view origin);

// Parameter counts derived from the config (norms and biases left out: < 0.01% of these models).
struct ParameterCounts {
  double attention_projections = 0.0;  // per layer: query, KV and output projections (not the attention core)
  double attention_replicated = 0.0;   // the part of it every TP rank holds whole (MLA's down-projections)
  double dense_mlp = 0.0;              // per dense layer
  double expert = 0.0;                 // one routed or shared expert (gate, up and down)
  double router = 0.0;                 // per MoE layer
  double embedding = 0.0;              // the input embedding
  double lm_head = 0.0;                // the output head (0 when tied to the embedding)
  int dense_layers = 0;
  int moe_layers = 0;
  std::int64_t routed_experts = 0;
  std::int64_t shared_experts = 0;
  std::int64_t experts_per_token = 0;

  double total() const;
  double active_per_token() const;
};
ParameterCounts parameter_counts(const ModelPreset& model);

// The attention geometry one rank of a DCP group of `dcp` ranks runs when the model is served with tensor
// parallel size `tp`. InputError when TP does not divide heads × N or when N > TP.
struct RankGeometry {
  int heads = 0;     // H: query heads after the query all-gather
  int kv_heads = 0;  // H_kv
  int head_dim = 0;  // D
  int qk_dim = 0;    // D_qk
};
RankGeometry rank_geometry(const ModelPreset& model, int dcp, int tp);

// Weight bytes one GPU holds at tensor/expert parallel size `tp`: the blocks' linear weights at the weight
// dtype, sharded over TP except MLA's down-projections (replicated, as vLLM holds them); the embedding and
// the output head in bf16, sharded over TP; the router in bf16 on every rank. With `mtp_modules` > 0 also
// that many MTP modules (DeepSeek's: one MoE block and a 2h x h projection; it shares the embedding and
// head). With pipeline parallelism over `pp` stages, the stage that holds the most: ceil(layers / pp) of the
// layers (at the model's mean weight per layer) and the larger of the embedding (first stage) and the head
// (last stage, with the MTP modules).
double weight_bytes_per_gpu(const ModelPreset& model, int tp, int mtp_modules = 0, int pp = 1);

// What a decode step does besides the attention core (projections, MLP/MoE, head, TP all-reduces) is priced
// op by op in step_ops.h.

}  // namespace dcpsim::models
