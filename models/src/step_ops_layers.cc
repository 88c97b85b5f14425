// The ops of one decode step of a model preset on one GPU of a TP group (step_ops.h): per layer kind (MLA or
// GQA attention projections, a dense MLP or a MoE block), the output head and the sampler, the TP
// all-reduces and the small kernels between the GEMMs, as vLLM runs them in a CUDA graph.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "dcpsim/error.h"
#include "dcpsim/models/cost_collectives.h"
#include "dcpsim/models/step_ops.h"
#include "step_ops_detail.h"

namespace dcpsim::models {
namespace {

constexpr double kActivationBytes = 2.0;
constexpr const char* kVllmCustom = "vllm-custom";
constexpr const char* kDeepEpLowLatency = "deepep-ll";
// Elementwise kernels a layer runs besides its GEMMs (vLLM, decode, CUDA graph): MLA: input and
// post-attention RMSNorm, q_a and kv_a norms, rotary embedding, the KV-cache write; GQA: the two norms,
// rotary, the cache write (Qwen3 adds q/k norms); MLP: the activation; MoE: top-k routing and the shared
// expert's activation.
constexpr int kSmallMla = 6, kSmallGqa = 4, kSmallQkNorm = 1, kSmallMlp = 1, kSmallMoe = 2;
// Per step: the embedding lookup, the final norm and the sampler's kernels (temperature, softmax,
// top-k/top-p, argmax, the token copy).
constexpr int kSmallPerStep = 7;

class StepBuilder {
 public:
  StepBuilder(const ModelPreset& m, const HardwareProfile& p, const StepShape& s)
      : m_(m), p_(p), s_(s), c_(m.config), t_(double(s.tp)), tokens_(double(s.tokens)) {}

  void add(OpPrice o, const std::string& name, double count) {
    o.name = name;
    o.count = count;
    out_.seconds += o.total_s();
    out_.seconds_by_source[static_cast<int>(o.source)] += o.total_s();
    out_.ops.push_back(std::move(o));
  }
  void gemm(const std::string& name, double count, double n, double k, WeightDType d) {
    add(gemm_price(p_, d, tokens_, n, k), name, count);
    out_.weight_bytes += count * n * k * weight_dtype_bytes(d);
  }
  // The non-expert linear layers: the model's dense dtype.
  void gemm(const std::string& name, double count, double n, double k) {
    gemm(name, count, n, k, m_.dense_dtype());
  }

  void small(const std::string& name, double count, double bytes) {
    OpPrice o;
    o.seconds = memory_kernel_time(p_, bytes) + p_.launch.dependent_gap.si();
    o.source = OpSource::kAnalytic;
    o.basis = "elementwise: kernel floor + bytes at HBM bandwidth + graph gap";
    add(std::move(o), name, count);
  }
  void collective(const std::string& name, double count, Collective c, int ranks, double bytes,
                  const std::string& implementation = "") {
    if (ranks < 2 || count == 0 || !(bytes > 0)) return;
    add(collective_price(p_, c, ranks, bytes, implementation), name, count);
  }
  // The TP all-reduce of the hidden states: vLLM's custom all-reduce inside one NVLink domain of at most 8
  // GPUs up to its size limit (priced from a "vllm-custom" communication table where the profile has one),
  // NCCL's otherwise.
  void all_reduce(const std::string& name, double count, double bytes) {
    const bool custom = s_.custom_all_reduce && s_.tp <= kCustomAllReduceMaxGpus &&
                        group_layout(p_, s_.tp).domains == 1 && bytes <= kCustomAllReduceMaxBytes;
    collective(name, count, Collective::kAllReduce, s_.tp, bytes, custom ? kVllmCustom : "");
  }

  void mla_projections(double layers) {
    const double heads = double(c_.num_attention_heads) / t_;
    const double qk = double(c_.qk_nope_head_dim + c_.qk_rope_head_dim);
    const double kv_down = double(c_.kv_lora_rank + c_.qk_rope_head_dim);
    if (c_.q_lora_rank > 0) {
      gemm("fused_qkv_a_proj", layers, double(c_.q_lora_rank) + kv_down, double(c_.hidden_size));
      gemm("q_b_proj", layers, heads * qk, double(c_.q_lora_rank));
    } else {
      gemm("q_proj", layers, heads * qk, double(c_.hidden_size));
      gemm("kv_a_proj", layers, kv_down, double(c_.hidden_size));
    }
    // The absorbed up-projections (per head, batched): the bytes and FLOPs of one GEMM over all local heads.
    gemm("w_uk (absorbed)", layers, heads * double(c_.kv_lora_rank), double(c_.qk_nope_head_dim));
    gemm("w_uv (absorbed)", layers, heads * double(c_.v_head_dim), double(c_.kv_lora_rank));
    gemm("o_proj", layers, double(c_.hidden_size), heads * double(c_.v_head_dim));
    small("norms, rotary, KV-cache write", layers * kSmallMla, tokens_ * double(c_.hidden_size) * 4.0);
  }

  void gqa_projections(double layers) {
    const double d = double(c_.head_dim > 0 ? c_.head_dim : c_.hidden_size / c_.num_attention_heads);
    const double heads = double(c_.num_attention_heads) / t_;
    const double kv = std::max(1.0, double(c_.num_key_value_heads) / t_);
    gemm("qkv_proj", layers, (heads + 2.0 * kv) * d, double(c_.hidden_size));
    gemm("o_proj", layers, double(c_.hidden_size), heads * d);
    const int qk_norm = c_.head_dim > 0 && c_.head_dim * c_.num_attention_heads != c_.hidden_size;
    small("norms, rotary, KV-cache write", layers * (kSmallGqa + qk_norm * kSmallQkNorm),
          tokens_ * double(c_.hidden_size) * 4.0);
  }

  void attention_block(double layers) {
    if (m_.mla()) {
      mla_projections(layers);
    } else {
      gqa_projections(layers);
    }
    all_reduce("all-reduce (attention out)", layers, tokens_ * double(c_.hidden_size) * kActivationBytes);
  }

  void dense_mlp(double layers) {
    const double inter = double(c_.intermediate_size) / t_;
    gemm("gate_up_proj", layers, 2.0 * inter, double(c_.hidden_size));
    gemm("down_proj", layers, double(c_.hidden_size), inter);
    small("activation", layers * kSmallMlp, tokens_ * inter * 6.0);
    all_reduce("all-reduce (MLP out)", layers, tokens_ * double(c_.hidden_size) * kActivationBytes);
  }

  void moe(double layers) {
    const double h = double(c_.hidden_size), inter = double(c_.moe_intermediate_size);
    gemm("router", layers, double(c_.n_routed_experts), h, WeightDType::kBF16);
    add(moe_price(), "moe experts", layers);
    if (c_.n_shared_experts > 0) {
      const double shared = inter * double(c_.n_shared_experts) / t_;
      gemm("shared expert gate_up", layers, 2.0 * shared, h);
      gemm("shared expert down", layers, h, shared);
    }
    small("top-k routing, activation", layers * kSmallMoe, tokens_ * h * 4.0);
    if (s_.moe_comm == MoeComm::kAllReduce || s_.tp < 2) {
      all_reduce("all-reduce (MoE out)", layers, tokens_ * h * kActivationBytes);
      return;
    }
    // The EP token exchange: this GPU's 1/TP of the tokens to the GPUs of their top-k experts and back, then
    // the hidden states all-gathered for the TP attention (the all-reduce it replaces).
    const double local = std::ceil(tokens_ / t_), k = double(c_.num_experts_per_tok);
    const bool deepep = s_.moe_comm == MoeComm::kDeepEpLowLatency;
    const std::string impl = deepep ? kDeepEpLowLatency : "";
    const double dispatch_bytes = deepep ? 1.0 + 4.0 / 128.0 : kActivationBytes;  // fp8 + a scale per 128
    collective("moe dispatch (all-to-all)", layers, Collective::kAllToAll, s_.tp,
               local * k * h * dispatch_bytes, impl);
    collective("moe combine (all-to-all)", layers, Collective::kAllToAll, s_.tp,
               local * k * h * kActivationBytes, impl);
    collective("all-gather (MoE out)", layers, Collective::kAllGather, s_.tp, local * h * kActivationBytes);
  }

  void head() {
    const double h = double(c_.hidden_size), vocab = double(c_.vocab_size) / t_;
    gemm("lm_head", 1, vocab, h, WeightDType::kBF16);
    collective("logits gather", 1, Collective::kAllGather, s_.tp, tokens_ * vocab * kActivationBytes);
    small("embedding, final norm, sampler", kSmallPerStep,
          tokens_ * double(c_.vocab_size) * 4.0 / kSmallPerStep);
  }

  OpStep finish() { return std::move(out_); }

 private:
  OpPrice moe_price() const;

  const ModelPreset& m_;
  const HardwareProfile& p_;
  const StepShape& s_;
  const ModelConfig& c_;
  double t_, tokens_;
  OpStep out_;
};

// One MoE layer's fused experts: the table of the weight dtype for this shape and split; another dtype's
// table times the roofline ratio; else the roofline of the experts the tokens hit (uniform routing).
OpPrice StepBuilder::moe_price() const {
  const double h = double(c_.hidden_size), inter = double(c_.moe_intermediate_size);
  const double experts = double(c_.n_routed_experts), k = double(c_.num_experts_per_tok);
  const bool ep = s_.moe == MoeSplit::kEp;
  char shape[128];
  std::snprintf(shape, sizeof shape, " h%lld i%lld e%lld k%lld tp%d ep%d", static_cast<long long>(h),
                static_cast<long long>(inter), static_cast<long long>(experts), static_cast<long long>(k),
                ep ? 1 : s_.tp, ep ? s_.tp : 1);
  // Per GPU: experts held (whole or sliced), the bytes of one, those the tokens hit, the FLOPs.
  const double held = ep ? experts / t_ : experts;
  const double one = 3.0 * h * inter / (ep ? 1.0 : t_);
  const double hit = held * (1.0 - std::pow(1.0 - k / experts, tokens_));
  const double flops = 2.0 * tokens_ * k * 3.0 * h * inter / t_;
  const auto roof = [&](WeightDType d) {
    return detail::roofline(p_, d, hit * one * weight_dtype_bytes(d), flops);
  };
  OpPrice o;
  for (const bool same : {true, false}) {
    for (const WeightDType d : {m_.weight_dtype, WeightDType::kFP8, WeightDType::kBF16, WeightDType::kNVFP4,
                                WeightDType::kINT4, WeightDType::kMXFP4}) {
      if ((d == m_.weight_dtype) != same) continue;
      const std::string key = std::string(to_string(d)) + shape;
      const auto hull = detail::table_hull(p_, TableKernel::kMoe, key);
      if (!hull) continue;
      const double at = std::clamp(tokens_, (*hull)[0].first, (*hull)[0].second);
      const auto f = detail::find_table(p_, TableKernel::kMoe, key, std::span<const double>(&at, 1));
      if (!f) continue;
      const double beyond = tokens_ > at ? tokens_ / at : 1.0;  // past the table: linear in tokens
      const double ratio = same ? 1.0 : roof(m_.weight_dtype) / roof(d);
      o.seconds = f->seconds * beyond * ratio;
      o.source = same && beyond == 1.0 ? OpSource::kTable : OpSource::kRatio;
      char b[96];
      std::snprintf(b, sizeof b, " at %.0f tokens", tokens_);
      o.basis = "moe " + key + b + ", " + detail::who(*f->provenance);
      if (!same)
        o.basis +=
            ", x roofline ratio " + std::string(to_string(m_.weight_dtype)) + "/" + std::string(to_string(d));
      if (beyond > 1.0) o.basis += ", scaled linearly past the table's last token count";
      return o;
    }
  }
  o.seconds = 3.0 * p_.kernel.floor.si() + roof(m_.weight_dtype);
  o.source = OpSource::kAnalytic;
  o.basis = "roofline of the experts hit (uniform routing)";
  return o;
}

void check_step_shape(const ModelPreset& model, const StepShape& s) {
  if (s.tp < 1 || s.tokens < 1 || s.rows < 1 || s.tokens < s.rows) {
    throw InputError("non-attention ops: tp, rows >= 1 and tokens >= rows needed (tp " +
                     std::to_string(s.tp) + ", rows " + std::to_string(s.rows) + ", tokens " +
                     std::to_string(s.tokens) + ")");
  }
  if (s.moe_comm != MoeComm::kAllReduce && (s.moe != MoeSplit::kEp || !model.moe())) {
    throw InputError("an EP token exchange (" + std::string(to_string(s.moe_comm)) +
                     ") needs a MoE model with expert parallelism (--enable-expert-parallel)");
  }
}

}  // namespace

OpStep non_attention_ops(const ModelPreset& model, const HardwareProfile& profile, const StepShape& shape) {
  check_step_shape(model, shape);
  StepBuilder b(model, profile, shape);
  const ParameterCounts counts = parameter_counts(model);
  b.attention_block(counts.dense_layers + counts.moe_layers);
  if (counts.dense_layers > 0) b.dense_mlp(counts.dense_layers);
  if (counts.moe_layers > 0) b.moe(counts.moe_layers);
  b.head();
  return b.finish();
}

OpStep mtp_draft_ops(const ModelPreset& model, const HardwareProfile& profile, const StepShape& shape) {
  check_step_shape(model, shape);
  if (model.config.num_nextn_predict_layers < 1) return {};
  // The draft runs one token per request per speculative position.
  StepShape one = shape;
  one.tokens = shape.rows;
  StepBuilder b(model, profile, one);
  const double h = double(model.config.hidden_size);
  b.gemm("mtp eh_proj", 1, h, 2.0 * h);
  b.small("mtp norms", 2, double(one.tokens) * h * 4.0);
  b.attention_block(1);
  if (model.moe()) {
    b.moe(1);
  } else {
    b.dense_mlp(1);
  }
  b.head();
  return b.finish();
}

}  // namespace dcpsim::models
