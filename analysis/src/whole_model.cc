#include "dcpsim/analysis/whole_model.h"

#include <cmath>
#include <cstdio>

#include "dcpsim/error.h"
#include "dcpsim/models/cost_kernels.h"

namespace dcpsim::analysis {
namespace {

constexpr double kGiB = 1073741824.0;
constexpr int kDefaultLayers = 61;               // DeepSeek-V3 / Kimi K2
constexpr double kDefaultWeightReserveGib = 60;  // without a model: weights, activations and workspace

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

void add_whole_model_flags(CLI::App& cmd, WholeModelFlags& f) {
  cmd.add_option("--layers", f.layers,
                 "attention layers per decode step and per KV token (default: the model's, 61 without one)")
      ->check(CLI::Range(0, 100000));
  cmd.add_option(
      "--non-attention-us", f.non_attention_us,
      "time per decode step outside attention (projections, MLP/MoE, head) in us, from your own "
      "profile; replaces the model's roofline estimate (with --non-attention-us-per-token: fixed part)");
  cmd.add_option("--non-attention-us-per-token", f.non_attention_us_per_token,
                 "non-attention time per decode step per row (token) in us; replaces the model's estimate");
  cmd.add_option("--weight-reserve-gib", f.weight_reserve_gib,
                 "HBM per GPU kept from the KV cache (weights, activations, workspace) in GiB; default: the "
                 "model's weights per GPU plus (1 - --gpu-memory-utilization) of HBM; 60 without a model");
  cmd.add_option("--gpu-memory-utilization", f.gpu_memory_utilization,
                 "fraction of HBM for weights and KV with a model (vLLM's --gpu-memory-utilization)")
      ->capture_default_str();
}

WholeModel::WholeModel(std::optional<models::ModelPreset> model, const models::HardwareProfile& profile,
                       int tp, const WholeModelFlags& f)
    : model_(std::move(model)), profile_(&profile), tp_(tp) {
  if (tp < 1) throw InputError("--tp " + std::to_string(tp) + " must be >= 1");
  if (f.non_attention_us) check_value(*f.non_attention_us, "--non-attention-us", 0, 1e9);
  if (f.non_attention_us_per_token)
    check_value(*f.non_attention_us_per_token, "--non-attention-us-per-token", 0, 1e9);
  if (f.weight_reserve_gib) check_value(*f.weight_reserve_gib, "--weight-reserve-gib", 0, 1e6);
  check_value(f.gpu_memory_utilization, "--gpu-memory-utilization", 1e-3, 1.0);
  if (f.layers < 0) throw InputError("--layers must be >= 0 (0: the model's)");
  layers_ = f.layers > 0 ? f.layers : model_ ? model_->layers() : kDefaultLayers;

  if (f.non_attention_us || f.non_attention_us_per_token) {
    fixed_s_ = f.non_attention_us.value_or(0.0) * 1e-6;
    per_token_s_ = f.non_attention_us_per_token.value_or(0.0) * 1e-6;
    non_attention_basis_ =
        "given: " + us_text(fixed_s_) + " + " + us_text(per_token_s_) + " per row per step";
  } else if (model_) {
    estimate_ = true;
    non_attention_basis_ = "estimate (a lower bound): roofline of " + model_->name +
                           "'s weights (config.json) at " + profile_->name +
                           "'s measured HBM bandwidth and tensor rate, TP/EP " + std::to_string(tp_) +
                           ", uniform expert routing; no MoE/TP communication";
  } else {
    non_attention_basis_ = "none: attention layers only (give --model, or --non-attention-us from a profile)";
  }

  hbm_bytes_ = profile_->gpu.hbm_capacity.si();
  if (model_) weight_bytes_ = models::weight_bytes_per_gpu(*model_, tp_);
  if (f.weight_reserve_gib) {
    kv_budget_bytes_ = hbm_bytes_ - *f.weight_reserve_gib * kGiB;
    char b[160];
    std::snprintf(b, sizeof b, "HBM %s - %.1f GiB reserved (--weight-reserve-gib)",
                  gigabytes(hbm_bytes_).c_str(), *f.weight_reserve_gib);
    kv_budget_basis_ = b;
  } else if (model_) {
    kv_budget_bytes_ = hbm_bytes_ * f.gpu_memory_utilization - weight_bytes_;
    char b[200];
    std::snprintf(b, sizeof b, "HBM %s x %.2f - weights %s (%s / TP %d)", gigabytes(hbm_bytes_).c_str(),
                  f.gpu_memory_utilization, gigabytes(weight_bytes_).c_str(), model_->name.c_str(), tp_);
    kv_budget_basis_ = b;
  } else {
    kv_budget_bytes_ = hbm_bytes_ - kDefaultWeightReserveGib * kGiB;
    kv_budget_basis_ = "HBM " + gigabytes(hbm_bytes_) + " - 60 GiB reserved (no model)";
  }
}

double WholeModel::non_attention_s(int rows) const {
  if (estimate_) return models::non_attention_time(*model_, *profile_, tp_, rows).seconds;
  return fixed_s_ + per_token_s_ * rows;
}

double WholeModel::decode_step_s(double layer_step_s, int rows) const {
  return layers_ * layer_step_s + non_attention_s(rows);
}

std::int64_t WholeModel::kv_capacity_tokens(const models::Scenario& geometry) const {
  const double per_token = models::kv_bytes_per_token(models::attention_shape(geometry)) * layers_;
  if (!(kv_budget_bytes_ > 0)) return 0;
  return static_cast<std::int64_t>(std::floor(kv_budget_bytes_ / per_token));
}

}  // namespace dcpsim::analysis
