#include "dcpsim/analysis/whole_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "dcpsim/analysis/baseline.h"
#include "dcpsim/error.h"
#include "dcpsim/models/cost_kernels.h"

namespace dcpsim::analysis {
namespace {

constexpr double kGiB = 1073741824.0;
constexpr int kDefaultLayers = 61;               // DeepSeek-V3 / Kimi K2
constexpr double kDefaultWeightReserveGib = 60;  // without a model: weights, activations and workspace
constexpr int kSamplerSequences = 1024;          // vLLM's max_num_seqs on H100-class GPUs (logits buffers)

void check_value(double v, const char* flag, double lo, double hi) {
  if (!std::isfinite(v) || v < lo || v > hi) {
    throw InputError(std::string(flag) + " " + std::to_string(v) + " is not a number in [" +
                     std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
}

std::string us_text(double s) {
  char b[64];
  std::snprintf(b, sizeof b, "%.1f us", s * 1e6);
  return b;
}

}  // namespace

std::string gigabytes(double bytes) {
  char b[64];
  std::snprintf(b, sizeof b, "%.1f GB", bytes / 1e9);
  return b;
}

double activation_peak_bytes(const models::ModelPreset& model, int tp, int tokens) {
  const models::ModelConfig& c = model.config;
  const double t = tokens, h = double(c.hidden_size), b = 2.0;
  double peak = 4.0 * t * h * b;  // residual, normed input, attention output, MLP output
  if (model.moe()) {
    const double local = double(c.moe_intermediate_size) / tp, k = double(c.num_experts_per_tok);
    peak += t * k * (2.0 * local + local + h) * b;  // the fused MoE's three caches
  } else {
    peak += t * 3.0 * double(c.intermediate_size) / tp * b;
  }
  const double heads = double(c.num_attention_heads) / tp;
  const double qk = model.mla() ? double(c.qk_nope_head_dim + c.qk_rope_head_dim)
                                : double(c.head_dim > 0 ? c.head_dim : c.hidden_size / c.num_attention_heads);
  peak += t * heads * 3.0 * qk * b;                              // prefill q, k, v
  peak += 2.0 * kSamplerSequences * double(c.vocab_size) * 4.0;  // fp32 logits and probabilities
  return peak;
}

void add_whole_model_flags(CLI::App& cmd, WholeModelFlags& f, bool pipeline) {
  cmd.add_option("--layers", f.layers,
                 "attention layers per decode step and per KV token (default: the model's, 61 without one)")
      ->check(CLI::Range(0, 100000));
  cmd.add_option("--non-attention-us", f.non_attention_us,
                 "time per decode step outside attention in us, from your own profile; replaces the op model "
                 "(with --non-attention-us-per-token: fixed part)");
  cmd.add_option("--non-attention-us-per-token", f.non_attention_us_per_token,
                 "non-attention time per decode step per row (token) in us; replaces the op model");
  cmd.add_option("--weight-reserve-gib", f.weight_reserve_gib,
                 "HBM per GPU kept from the KV cache in GiB (replaces vLLM's accounting: weights, activation "
                 "peak, runtime reserve); 60 without a model");
  cmd.add_option(
         "--gpu-memory-utilization", f.gpu_memory_utilization,
         "fraction of device memory for weights, activations and KV (vLLM's --gpu-memory-utilization)")
      ->capture_default_str();
  cmd.add_option(
      "--weight-dtype", f.weight_dtype,
      "the transformer blocks' weights: bf16, fp8, nvfp4, mxfp4, int4 (bytes incl. scales; default: "
      "the model as released)");
  cmd.add_flag(
      "--enable-expert-parallel,--ep", f.expert_parallel,
      "MoE experts whole on each GPU of the TP group (E/TP per GPU) instead of sliced (vLLM's flag)");
  cmd.add_option(
         "--moe-a2a-backend,--all2all-backend", f.moe_a2a,
         "with --enable-expert-parallel, how tokens reach their experts: none (every GPU holds every "
         "token, one all-reduce combines: vLLM with DP 1, SGLang's default), all-to-all (NCCL dispatch "
         "and combine per MoE layer), deepep-ll (DeepEP's low-latency kernels)")
      ->capture_default_str();
  cmd.add_flag("--disable-custom-all-reduce", f.disable_custom_all_reduce,
               "every TP all-reduce through NCCL (vLLM's flag; default: vLLM's custom all-reduce within one "
               "peer-to-peer domain of at most 8 GPUs up to 8 MiB, priced from the profile's 'vllm-custom' "
               "table where it has one, else NCCL's; rtx-pro-6000 has none)");
  if (pipeline) {
    cmd.add_option("--pipeline-parallel-size,--pp", f.pp,
                   "pipeline stages: each GPU holds 1/PP of the layers; a token passes every stage; --batch "
                   "is one micro-batch, PP of them in flight (vLLM's -pp)")
        ->capture_default_str()
        ->check(CLI::Range(1, 64));
  }
  cmd.add_option("--spec-tokens", f.spec_tokens,
                 "speculative decoding / MTP: k draft tokens per step (k + 1 query rows per request)")
      ->check(CLI::Range(0, 16));
  cmd.add_option("--accept-length", f.accept_length,
                 "mean tokens emitted per request per step with --spec-tokens k (vLLM's acceptance length, "
                 "1 <= a <= k + 1)");
  cmd.add_option(
         "--spec-attention", f.spec_attention,
         "with --spec-tokens k, how the attention kernel reads a request's k + 1 verify rows: heads "
         "(one read of the KV for all of them, the rows folded into the query heads: FlashMLA, "
         "FlashInfer MLA) or rows (each a decode row of its own that reads the KV again: vLLM's "
         "TRITON_MLA with verify blocks as decode rows, PR #40750, as the rtx6kpro image runs it; on a "
         "profile whose attention is that kernel, attention.triton_mla, the later rows' reads are found in "
         "the L2 and each row's MMA work is its own; stock vLLM up to 0.19 sends them down MLA's prefill "
         "path instead, which neither prices)")
      ->capture_default_str();
  cmd.add_option("--activation-reserve-gib", f.activation_reserve_gib,
                 "activation peak per GPU in GiB (default: estimated as vLLM's profile run would find it)");
  cmd.add_option("--runtime-reserve-gib", f.runtime_reserve_gib,
                 "non-torch memory (NCCL and all-reduce buffers, cuBLAS workspace) and the CUDA-graph pool "
                 "per GPU in GiB")
      ->capture_default_str();
  cmd.add_option("--max-num-batched-tokens", f.max_num_batched_tokens,
                 "tokens of vLLM's profile run (its --max-num-batched-tokens), for the activation estimate")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 22));
  cmd.add_option(
      "--step-overhead-us", f.step_overhead_us,
      "time per decode step outside the CUDA graph (scheduling, input preparation, sampling on the "
      "host) in us; default an estimate (300 us); a --baseline measures it");
  cmd.add_option("--baseline", f.baseline,
                 "your deployment's measured TPOT: tpot=12ms,tp=8,batch=1,context=64k[,dcp=1][,strategy=S]"
                 "[,spec=k,accept=a]; repeat for several batches (fits the batch dependence); the "
                 "non-attention part is then measured, the change to each layout modelled")
      ->type_name("POINT");
}

WholeModel::WholeModel(std::optional<models::ModelPreset> model, const models::HardwareProfile& profile,
                       int tp, const WholeModelFlags& f)
    : model_(std::move(model)), profile_(&profile), tp_(tp) {
  if (tp < 1) throw InputError("--tp " + std::to_string(tp) + " must be >= 1");
  if (f.non_attention_us) check_value(*f.non_attention_us, "--non-attention-us", 0, 1e9);
  if (f.non_attention_us_per_token)
    check_value(*f.non_attention_us_per_token, "--non-attention-us-per-token", 0, 1e9);
  if (f.weight_reserve_gib) check_value(*f.weight_reserve_gib, "--weight-reserve-gib", 0, 1e6);
  if (f.activation_reserve_gib) check_value(*f.activation_reserve_gib, "--activation-reserve-gib", 0, 1e6);
  if (f.step_overhead_us) check_value(*f.step_overhead_us, "--step-overhead-us", 0, 1e9);
  check_value(f.runtime_reserve_gib, "--runtime-reserve-gib", 0, 1e6);
  check_value(f.gpu_memory_utilization, "--gpu-memory-utilization", 1e-3, 1.0);
  if (f.layers < 0) throw InputError("--layers must be >= 0 (0: the model's)");
  for (const std::string& b : f.baseline) (void)parse_baseline(b);  // its syntax, before any work
  if (f.spec_tokens < 0 || f.spec_tokens > 16) throw InputError("--spec-tokens must be in [0, 16]");
  spec_tokens_ = f.spec_tokens;
  if (spec_tokens_ > 0 && !f.accept_length) {
    throw InputError(
        "--spec-tokens " + std::to_string(spec_tokens_) +
        " needs --accept-length (the mean tokens emitted per request per step your engine reports)");
  }
  if (f.accept_length) {
    check_value(*f.accept_length, "--accept-length", 1.0, spec_tokens_ + 1.0);
    accept_length_ = *f.accept_length;
  }
  if (f.spec_attention != "heads" && f.spec_attention != "rows")
    throw InputError("--spec-attention must be heads or rows, not '" + f.spec_attention + "'");
  if (f.spec_attention == "rows" && spec_tokens_ == 0)
    throw InputError("--spec-attention rows needs --spec-tokens (the verify rows it lays out)");
  spec_rows_ = f.spec_attention == "rows";
  if (model_ && !f.weight_dtype.empty())
    model_ = model_->with_weight_dtype(models::parse_weight_dtype(f.weight_dtype));
  if (!model_ && !f.weight_dtype.empty()) throw InputError("--weight-dtype needs --model");
  moe_ = f.expert_parallel ? models::MoeSplit::kEp : models::MoeSplit::kTp;
  moe_comm_ = models::parse_moe_comm(f.moe_a2a);
  custom_all_reduce_ = !f.disable_custom_all_reduce;
  if (f.disable_custom_all_reduce && (!model_ || f.non_attention_us || f.non_attention_us_per_token))
    throw InputError("--disable-custom-all-reduce needs --model (it changes the op model's all-reduces)");
  if (moe_comm_ != models::MoeComm::kAllReduce && !f.expert_parallel)
    throw InputError("--moe-a2a-backend " + f.moe_a2a + " needs --enable-expert-parallel");
  if (f.pp < 1 || f.pp > 64) throw InputError("--pipeline-parallel-size must be in [1, 64]");
  pp_ = f.pp;
  layers_ = f.layers > 0 ? f.layers : model_ ? model_->layers() : kDefaultLayers;
  if (pp_ > layers_)
    throw InputError("--pipeline-parallel-size " + std::to_string(pp_) + " exceeds the " +
                     std::to_string(layers_) + " layers: every stage needs at least one");
  overhead_s_ = f.step_overhead_us.value_or(model_ ? kStepOverheadEstimateUs : 0.0) * 1e-6;

  if (f.non_attention_us || f.non_attention_us_per_token) {
    fixed_s_ = f.non_attention_us.value_or(0.0) * 1e-6;
    per_token_s_ = f.non_attention_us_per_token.value_or(0.0) * 1e-6;
    overhead_s_ = 0.0;
    non_attention_basis_ =
        "given: " + us_text(fixed_s_) + " + " + us_text(per_token_s_) + " per row per step";
  } else if (model_) {
    ops_model_ = true;
    (void)models::non_attention_ops(*model_, *profile_,
                                    {tp_, moe_, 1, 1, moe_comm_, custom_all_reduce_});  // a TP it cannot take
    const models::OpStep one = ops(1);
    non_attention_basis_ =
        "modelled op by op (" + model_->name + " " + std::string(models::to_string(model_->weight_dtype)) +
        ", TP " + std::to_string(tp_) + (pp_ > 1 ? " x PP " + std::to_string(pp_) : "") + ", experts " +
        (moe_ == models::MoeSplit::kEp ? "whole (EP, " + std::string(models::to_string(moe_comm_)) + ")"
                                       : "sliced (TP)") +
        (custom_all_reduce_ ? "" : ", NCCL all-reduce (--disable-custom-all-reduce)") +
        "): " + one.provenance();
    overhead_basis_ = "; per-step overhead " + us_text(overhead_s_) +
                      (f.step_overhead_us ? " (--step-overhead-us)" : " (estimate)");
  } else {
    non_attention_basis_ = "none: attention layers only (give --model, or --non-attention-us from a profile)";
  }
  if (spec_tokens_ > 0) {
    char b[320];
    std::snprintf(b, sizeof b,
                  "; speculative decoding: %d draft tokens, %d query rows per request (%s), %.2f "
                  "tokens per step (given)%s",
                  spec_tokens_, spec_tokens_ + 1,
                  spec_rows_ ? "each a decode row reading its KV" : "folded into the heads, one KV read",
                  accept_length_,
                  model_ && model_->config.num_nextn_predict_layers > 0 ? ", MTP draft modelled"
                                                                        : ", draft cost not modelled");
    spec_basis_ = b;
  }
  if (pp_ > 1) {
    spec_basis_ += "; pipeline: " + std::to_string(pp_) + " stages of " + std::to_string(stage_layers()) +
                   " layers, a token passes every stage (" + std::to_string(pp_ - 1) +
                   " stage sends, modelled), " + std::to_string(pp_) + " micro-batches in flight";
  }
  set_memory(f);
}

void WholeModel::set_memory(const WholeModelFlags& f) {
  hbm_bytes_ = profile_->gpu.hbm_capacity.si();
  const int mtp = spec_tokens_ > 0 && model_ ? int(model_->config.num_nextn_predict_layers) : 0;
  if (model_) weight_bytes_ = models::weight_bytes_per_gpu(*model_, tp_, std::min(mtp, 1), pp_);
  char b[320];
  if (f.weight_reserve_gib) {
    kv_budget_bytes_ = hbm_bytes_ - *f.weight_reserve_gib * kGiB;
    std::snprintf(b, sizeof b, "HBM %s - %.1f GiB reserved (--weight-reserve-gib)",
                  gigabytes(hbm_bytes_).c_str(), *f.weight_reserve_gib);
    kv_budget_basis_ = b;
  } else if (model_) {
    activation_bytes_ = f.activation_reserve_gib
                            ? *f.activation_reserve_gib * kGiB
                            : activation_peak_bytes(*model_, tp_, f.max_num_batched_tokens);
    runtime_bytes_ = f.runtime_reserve_gib * kGiB;
    kv_budget_bytes_ =
        hbm_bytes_ * f.gpu_memory_utilization - weight_bytes_ - activation_bytes_ - runtime_bytes_;
    std::snprintf(b, sizeof b,
                  "vLLM's accounting: HBM %s x %.2f - weights %s (%s %s / TP %d%s%s) - activations %s "
                  "(%s) - runtime %s",
                  gigabytes(hbm_bytes_).c_str(), f.gpu_memory_utilization, gigabytes(weight_bytes_).c_str(),
                  model_->name.c_str(), std::string(models::to_string(model_->weight_dtype)).c_str(), tp_,
                  pp_ > 1 ? (", the fullest of " + std::to_string(pp_) + " stages").c_str() : "",
                  mtp > 0 ? " + MTP" : "", gigabytes(activation_bytes_).c_str(),
                  f.activation_reserve_gib ? "given" : "estimate", gigabytes(runtime_bytes_).c_str());
    kv_budget_basis_ = b;
  } else {
    kv_budget_bytes_ = hbm_bytes_ - kDefaultWeightReserveGib * kGiB;
    kv_budget_basis_ = "HBM " + gigabytes(hbm_bytes_) + " - 60 GiB reserved (no model)";
  }
}

models::Scenario WholeModel::attention_scenario(models::Scenario s) const {
  if (!spec_rows_) {
    s.heads *= spec_tokens_ + 1;
    return s;
  }
  // Verify row j sees c - (k - j) tokens; priced at c (k <= 16 tokens of thousands), which keeps the KV
  // each rank reads exactly (k + 1) x what it stores (stored_of_read).
  std::vector<int64_t> rows;
  rows.reserve(s.contexts.size() * (spec_tokens_ + 1));
  for (const int64_t c : s.contexts) rows.insert(rows.end(), spec_tokens_ + 1, c);
  s.contexts = std::move(rows);
  s.padded_rows *= spec_tokens_ + 1;
  s.rows_per_kv = spec_tokens_ + 1;
  return s;
}

models::OpStep WholeModel::ops(int rows) const {
  if (!ops_model_ || rows < 1) return {};
  return models::non_attention_ops(
      *model_, *profile_, {tp_, moe_, rows * (spec_tokens_ + 1), rows, moe_comm_, custom_all_reduce_});
}

double WholeModel::modelled_non_attention_s(int rows) const {
  if (!ops_model_) return fixed_s_ + per_token_s_ * rows;
  if (rows < 1) return 0.0;
  double s = ops(rows).seconds;
  if (spec_tokens_ > 0 && model_->config.num_nextn_predict_layers > 0) {
    s += spec_tokens_ *
         models::mtp_draft_ops(*model_, *profile_, {tp_, moe_, rows, rows, moe_comm_, custom_all_reduce_})
             .seconds;
  }
  return s;
}

double WholeModel::non_attention_s(int rows) const {
  const double modelled = modelled_non_attention_s(rows);
  if (anchored_) return std::max(0.0, modelled + anchor_fixed_s_ + anchor_per_row_s_ * rows);
  return modelled + overhead_s_;
}

double WholeModel::stage_sends_s(int rows) const {
  if (pp_ < 2 || !model_ || rows < 1) return 0.0;
  // Stages fill NVLink domains in order: a boundary inside a domain is an NVLink send, else the NIC's.
  const int domain = std::max(1, static_cast<int>(profile_->topology.gpus_per_nvlink_domain.si()));
  double s = 0.0;
  for (int b = 1; b < pp_; ++b) {
    const bool same = (b * tp_ - 1) / domain == (b * tp_) / domain;
    s += models::stage_send_price(*profile_, *model_, rows * (spec_tokens_ + 1), same).seconds;
  }
  return s;
}

double WholeModel::decode_step_s(double layer_step_s, int rows) const {
  const bool mtp = spec_tokens_ > 0 && model_ && model_->config.num_nextn_predict_layers > 0;
  return (layers_ + (mtp ? spec_tokens_ : 0)) * layer_step_s + non_attention_s(rows) + stage_sends_s(rows);
}

void WholeModel::set_baseline(const BaselineFit& fit) {
  anchored_ = true;
  anchor_fixed_s_ = fit.fixed_s;
  anchor_per_row_s_ = fit.per_row_s;
  overhead_basis_ = "; measured: " + fit.basis;
}

std::string WholeModel::non_attention_basis() const {
  return non_attention_basis_ + overhead_basis_ + spec_basis_;
}

std::int64_t WholeModel::kv_capacity_tokens(const models::Scenario& geometry) const {
  // The MTP module's layer keeps a KV cache of its own.
  const bool mtp = spec_tokens_ > 0 && model_ && model_->config.num_nextn_predict_layers > 0;
  // With pipeline parallelism a GPU holds its stage's layers (the MTP layer sits on the last stage).
  const double per_token =
      models::kv_bytes_per_token(models::attention_shape(geometry)) * (stage_layers() + mtp);
  if (!(kv_budget_bytes_ > 0)) return 0;
  return static_cast<std::int64_t>(std::floor(kv_budget_bytes_ / per_token));
}

}  // namespace dcpsim::analysis
