#pragma once
// From one simulated attention layer to a whole decode step, and the KV budget of one GPU — the figures
// `simulate`, `scan` and `replay` print beside the per-layer ones:
//   decode step = layers × (one attention layer: query all-gather, attention, merge, as simulated)
//                 + non-attention time (projections, MLP/MoE, output head) for the step's rows;
//   KV budget per GPU = HBM × gpu-memory-utilization − the model's weights per GPU (vLLM's accounting), or
//                       HBM − --weight-reserve-gib when that is given (and without a model: 60 GiB).
// The non-attention time is the user's (--non-attention-us, --non-attention-us-per-token) or, with a model,
// the roofline estimate of models::non_attention_time — every output says which, and that it is an estimate.
#include <cstdint>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "dcpsim/models/model_preset.h"
#include "dcpsim/models/profile.h"
#include "dcpsim/models/scenario.h"

namespace dcpsim::analysis {

struct WholeModelFlags {
  int layers = 0;                                    // 0: the model's (61 without one)
  std::optional<double> non_attention_us;            // per decode step
  std::optional<double> non_attention_us_per_token;  // per row per decode step
  std::optional<double> weight_reserve_gib;          // default: from the model (60 GiB without one)
  double gpu_memory_utilization = 0.9;
};

// --layers, --non-attention-us, --non-attention-us-per-token, --weight-reserve-gib, --gpu-memory-utilization.
void add_whole_model_flags(CLI::App& cmd, WholeModelFlags& flags);

class WholeModel {
 public:
  // InputError for a bad flag value (NaN, negative, utilization outside (0, 1]). `profile` must outlive this.
  WholeModel(std::optional<models::ModelPreset> model, const models::HardwareProfile& profile, int tp,
             const WholeModelFlags& flags);

  int layers() const { return layers_; }
  int tp() const { return tp_; }
  const std::optional<models::ModelPreset>& model() const { return model_; }
  // Per decode step, all layers, for a step of `rows` rows.
  double non_attention_s(int rows) const;
  // layers × layer_step_s + non_attention_s(rows).
  double decode_step_s(double layer_step_s, int rows) const;
  // "estimate: ..." / "given: ..." / "none: ...", one line.
  const std::string& non_attention_basis() const { return non_attention_basis_; }

  double hbm_bytes() const { return hbm_bytes_; }
  double weight_bytes_per_gpu() const { return weight_bytes_; }  // 0 without a model
  double kv_budget_bytes() const { return kv_budget_bytes_; }    // may be <= 0: the weights do not fit
  const std::string& kv_budget_basis() const { return kv_budget_basis_; }
  // Tokens of KV (every layer) one GPU holds for `geometry`: floor(budget / (KV bytes per token per layer ×
  // layers)); 0 when nothing fits.
  std::int64_t kv_capacity_tokens(const models::Scenario& geometry) const;

 private:
  std::optional<models::ModelPreset> model_;
  const models::HardwareProfile* profile_;
  int tp_ = 1;
  int layers_ = 61;
  double fixed_s_ = 0.0, per_token_s_ = 0.0;
  bool estimate_ = false;
  std::string non_attention_basis_;
  double hbm_bytes_ = 0.0, weight_bytes_ = 0.0, kv_budget_bytes_ = 0.0;
  std::string kv_budget_basis_;
};

// "1.23 GB"-style text for byte counts (1e9 B).
std::string gigabytes(double bytes);

}  // namespace dcpsim::analysis
