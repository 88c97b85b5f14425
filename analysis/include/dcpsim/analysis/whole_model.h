#pragma once
// From one simulated attention layer to a whole decode step as deployed, and the KV budget of one GPU — the
// figures `simulate`, `scan`, `replay` and `plan` print beside the per-layer ones:
//   decode step = layers × (one attention layer: query all-gather, attention, merge, as simulated; with
//                 speculative decoding k + 1 query rows per request)
//                 + the ops around attention (models/step_ops.h: projections, MLP/MoE, router, head, TP
//                   all-reduces, small kernels; each from a measured op table, a dtype ratio or the roofline)
//                 + the draft's step (MTP: k × one MTP module and its attention layer)
//                 + the per-step overhead outside the CUDA graph;
//   with a baseline (the user's own TPOT at some layouts, baseline.h) the non-attention part becomes the
//   baseline's measured remainder plus the modelled change to the predicted layout;
//   with pipeline parallelism (--pp P) each GPU holds ceil(layers / P) layers (weights and KV); a request's
//   token still passes every stage: decode step = the whole model's step for one micro-batch + (P − 1) stage
//   sends of its hidden states, and P micro-batches are in flight (tokens/s = P × micro-batch × a / step);
//   TPOT = decode step / accept length (tokens emitted per request per step);
//   KV budget per GPU = device memory × gpu-memory-utilization − weights − activation peak − runtime reserve
//                       (vLLM's accounting), or device memory − --weight-reserve-gib when that is given.
// Every output says which parts are measured and which modelled (non_attention_basis, kv_budget_basis).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "dcpsim/models/model_preset.h"
#include "dcpsim/models/profile.h"
#include "dcpsim/models/scenario.h"
#include "dcpsim/models/step_ops.h"

namespace dcpsim::analysis {

struct BaselineFit;

struct WholeModelFlags {
  int layers = 0;                                    // 0: the model's (61 without one)
  std::optional<double> non_attention_us;            // per decode step
  std::optional<double> non_attention_us_per_token;  // per row per decode step
  std::optional<double> weight_reserve_gib;          // default: vLLM's accounting below
  double gpu_memory_utilization = 0.9;
  std::string weight_dtype;  // empty: the preset's as released
  bool expert_parallel = false;
  std::string moe_a2a = "none";  // the MoE token exchange with EP (models::MoeComm): none = all-reduce
  bool disable_custom_all_reduce = false;  // vLLM's flag: every TP all-reduce through NCCL
  int pp = 1;                              // pipeline stages (vLLM's --pipeline-parallel-size)
  int spec_tokens = 0;
  std::optional<double> accept_length;
  std::string spec_attention = "heads";  // how attention reads a request's k + 1 verify rows: heads, rows
  std::optional<double> activation_reserve_gib;  // default: estimated from the model (vLLM's profile run)
  double runtime_reserve_gib = 1.0;              // non-torch memory and the CUDA-graph pool
  int max_num_batched_tokens = 8192;
  std::optional<double> step_overhead_us;  // default: the profile-independent estimate below
  std::vector<std::string> baseline;       // --baseline tpot=...,tp=...,batch=...,context=...
};

// --layers, --non-attention-us, --non-attention-us-per-token, --weight-reserve-gib, --gpu-memory-utilization,
// --weight-dtype, --enable-expert-parallel, --moe-a2a-backend, --disable-custom-all-reduce,
// --pipeline-parallel-size, --spec-tokens,
// --accept-length, --spec-attention, --activation-reserve-gib,
// --runtime-reserve-gib, --max-num-batched-tokens, --step-overhead-us, --baseline.
// `pipeline` false leaves --pipeline-parallel-size to the command (plan takes a list).
void add_whole_model_flags(CLI::App& cmd, WholeModelFlags& flags, bool pipeline = true);

// The estimate of the per-step time outside the CUDA graph (vLLM V1: scheduling, input preparation, the
// sampler's host work), used without --step-overhead-us or a baseline.
inline constexpr double kStepOverheadEstimateUs = 300.0;

class WholeModel {
 public:
  // InputError for a bad flag value (NaN, negative, utilization outside (0, 1], accept length outside [1, k +
  // 1], --spec-tokens without --accept-length). `profile` must outlive this.
  WholeModel(std::optional<models::ModelPreset> model, const models::HardwareProfile& profile, int tp,
             const WholeModelFlags& flags);

  int layers() const { return layers_; }
  int tp() const { return tp_; }
  int pp() const { return pp_; }
  // Layers one GPU holds (its KV and weights): ceil(layers / pp).
  int stage_layers() const { return (layers_ + pp_ - 1) / pp_; }
  const std::optional<models::ModelPreset>& model() const { return model_; }
  const models::HardwareProfile& profile() const { return *profile_; }

  // Speculative decoding: k draft tokens per step, a tokens emitted per request per step (1 without).
  int spec_tokens() const { return spec_tokens_; }
  double accept_length() const { return accept_length_; }
  // The attention layer a step of this deployment simulates: every request's k + 1 query rows attend over
  // the same KV. With --spec-attention heads (the default) they are priced as H × (k + 1) query heads over
  // one read of the KV (the same KV bytes, (k + 1)× the FLOPs, the merge and the query all-gather (k + 1)×
  // the rows' bytes — how FlashMLA and FlashInfer's MLA fold the query length into the heads); with rows,
  // as k + 1 decode rows of their own, each reading the request's whole KV (padding rows × (k + 1)): how
  // vLLM's TRITON_MLA runs a verify block with PR #40750's verify-as-decode (stock vLLM up to 0.19 takes
  // MLA's prefill path, which neither prices).
  models::Scenario attention_scenario(models::Scenario s) const;
  // The requests of a step whose attention layer is `attention` (an attention_scenario): its rows, or its
  // rows / (k + 1) with --spec-attention rows.
  int requests(const models::Scenario& attention) const {
    return spec_rows_ ? attention.rows() / (spec_tokens_ + 1) : attention.rows();
  }
  // What a rank stores (KV tokens or bytes) when its attention layer reads `read` of them: read / (k + 1)
  // with rows, else read.
  std::int64_t stored_of_read(std::int64_t read) const {
    return spec_rows_ ? read / (spec_tokens_ + 1) : read;
  }
  bool spec_rows() const { return spec_rows_; }

  // Per decode step, all layers, for a step of `rows` requests (the draft's attention layers not included).
  double non_attention_s(int rows) const;
  // layers × layer_step_s + non_attention_s(rows) + the draft's attention layers (k × layer_step_s with MTP)
  // + (pp − 1) pipeline stage sends; `rows` are one micro-batch's requests.
  double decode_step_s(double layer_step_s, int rows) const;
  // The pipeline stage sends of a step of `rows` requests (0 without pipeline parallelism).
  double stage_sends_s(int rows) const;
  // Time per output token of one request, and tokens per second of the whole replica: `rows` requests per
  // micro-batch, pp micro-batches in flight.
  double tpot_s(double decode_step_s) const { return decode_step_s / accept_length_; }
  double tokens_per_s(double decode_step_s, int rows) const {
    return decode_step_s > 0 ? rows * pp_ * accept_length_ / decode_step_s : 0.0;
  }
  // The requests of one micro-batch when a replica decodes `concurrency` at once: ceil(concurrency / pp).
  int micro_batch(int concurrency) const { return (concurrency + pp_ - 1) / pp_; }
  // The op breakdown behind non_attention_s (empty with --non-attention-us or without a model).
  models::OpStep ops(int rows) const;
  // One line per source: what is measured (a baseline, op tables), what modelled (ratios, roofline, the
  // simulated attention layer).
  std::string non_attention_basis() const;

  // Anchors the non-attention part on a baseline fit (baseline.h): from now on non_attention_s(rows) is the
  // ops' model plus the fit's remainder at `rows` (and the modelled change from the baseline's TP).
  void set_baseline(const BaselineFit& fit);
  bool anchored() const { return anchored_; }

  double hbm_bytes() const { return hbm_bytes_; }
  double weight_bytes_per_gpu() const { return weight_bytes_; }  // 0 without a model
  double activation_bytes() const { return activation_bytes_; }
  double runtime_reserve_bytes() const { return runtime_bytes_; }
  double kv_budget_bytes() const { return kv_budget_bytes_; }  // may be <= 0: the weights do not fit
  const std::string& kv_budget_basis() const { return kv_budget_basis_; }
  // Tokens of KV (every layer) one GPU holds for `geometry`: floor(budget / (KV bytes per token per layer ×
  // the layers it holds)); 0 when nothing fits. In a DCP group of N ranks, N times that.
  std::int64_t kv_capacity_tokens(const models::Scenario& geometry) const;

  // The non-attention model without any baseline: the op model at `rows` and this TP (per step).
  double modelled_non_attention_s(int rows) const;

 private:
  void set_memory(const WholeModelFlags& f);

  std::optional<models::ModelPreset> model_;
  const models::HardwareProfile* profile_;
  int tp_ = 1;
  int pp_ = 1;
  int layers_ = 61;
  models::MoeSplit moe_ = models::MoeSplit::kTp;
  models::MoeComm moe_comm_ = models::MoeComm::kAllReduce;
  bool custom_all_reduce_ = true;
  int spec_tokens_ = 0;
  double accept_length_ = 1.0;
  bool spec_rows_ = false;  // --spec-attention rows
  double fixed_s_ = 0.0, per_token_s_ = 0.0, overhead_s_ = 0.0;
  bool ops_model_ = false, anchored_ = false;
  double anchor_fixed_s_ = 0.0, anchor_per_row_s_ = 0.0;
  std::string non_attention_basis_, overhead_basis_, spec_basis_;
  double hbm_bytes_ = 0.0, weight_bytes_ = 0.0, activation_bytes_ = 0.0, runtime_bytes_ = 0.0;
  double kv_budget_bytes_ = 0.0;
  std::string kv_budget_basis_;
};

// vLLM's profile run: the activation peak of a forward pass over `tokens` tokens on one GPU at TP `tp` (the
// fused-MoE caches or the MLP's intermediates, the hidden states, the attention's prefill workspace, the
// sampler's logits for 1024 sequences), an estimate.
double activation_peak_bytes(const models::ModelPreset& model, int tp, int tokens);

// "1.23 GB"-style text for byte counts (1e9 B).
std::string gigabytes(double bytes);

}  // namespace dcpsim::analysis
