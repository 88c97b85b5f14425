// Model presets (model_preset.h): the dcpsim-model/1 reader, parameter counts from config.json figures, the
// per-rank geometry of a DCP deployment and the non-attention estimate.
#include "dcpsim/models/model_preset.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "dcpsim/checked.h"
#include "dcpsim/error.h"
#include "dcpsim/json_limits.h"
#include "profile_embedded.h"

namespace dcpsim::models {
namespace detail {
std::span<const EmbeddedProfile> embedded_models();  // generated from models/presets/*.json
}  // namespace detail

namespace {

using PresetJson = nlohmann::json;
constexpr std::string_view kModelFormat = "dcpsim-model/1";

// Reads one object, refusing keys it does not know and naming the file and field in every error.
class Fields {
 public:
  Fields(const PresetJson& object, std::string where) : object_(object), where_(std::move(where)) {
    if (!object_.is_object()) throw InputError(where_ + ": expected a JSON object, got " + object_.dump());
  }

  const PresetJson* find(const std::string& key) {
    seen_.insert(key);
    const auto it = object_.find(key);
    return it == object_.end() ? nullptr : &*it;
  }
  std::string text(const std::string& key, bool required = true) {
    const PresetJson* v = find(key);
    if (v == nullptr && !required) return {};
    if (v == nullptr || !v->is_string() || v->get<std::string>().empty())
      throw InputError(where_ + ": " + key + ": expected a non-empty string");
    return v->get<std::string>();
  }
  std::int64_t count(const std::string& key, std::int64_t max_value) {
    const PresetJson* v = find(key);
    if (v == nullptr) return 0;
    if (!v->is_number_integer() || v->get<std::int64_t>() < 0 || v->get<std::int64_t>() > max_value) {
      throw InputError(where_ + ": " + key + ": expected an integer in [0, " + std::to_string(max_value) +
                       "], got " + v->dump());
    }
    return v->get<std::int64_t>();
  }
  double number(const std::string& key, double lo, double hi) {
    const PresetJson* v = find(key);
    if (v == nullptr || !v->is_number() || !(v->get<double>() >= lo) || !(v->get<double>() <= hi)) {
      throw InputError(where_ + ": " + key + ": expected a number in [" + std::to_string(lo) + ", " +
                       std::to_string(hi) + "]" + (v ? ", got " + v->dump() : ""));
    }
    return v->get<double>();
  }
  bool flag(const std::string& key) {
    const PresetJson* v = find(key);
    if (v == nullptr) return false;
    if (!v->is_boolean()) throw InputError(where_ + ": " + key + ": expected true or false");
    return v->get<bool>();
  }
  const std::string& where() const { return where_; }
  void finish() const {
    for (auto it = object_.begin(); it != object_.end(); ++it) {
      if (!seen_.contains(it.key())) throw InputError(where_ + ": " + it.key() + ": unknown field");
    }
  }

 private:
  const PresetJson& object_;
  std::string where_;
  std::set<std::string> seen_;
};

ModelConfig read_config(Fields f) {
  constexpr std::int64_t kBig = std::int64_t{1} << 24;
  ModelConfig c;
  c.hidden_size = f.count("hidden_size", kBig);
  c.num_hidden_layers = f.count("num_hidden_layers", 100000);
  c.num_attention_heads = f.count("num_attention_heads", kMaxHeads);
  c.num_key_value_heads = f.count("num_key_value_heads", kMaxHeads);
  c.head_dim = f.count("head_dim", kMaxHeadDim);
  c.q_lora_rank = f.count("q_lora_rank", kBig);
  c.kv_lora_rank = f.count("kv_lora_rank", kMaxHeadDim);
  c.qk_nope_head_dim = f.count("qk_nope_head_dim", kMaxHeadDim);
  c.qk_rope_head_dim = f.count("qk_rope_head_dim", kMaxHeadDim);
  c.v_head_dim = f.count("v_head_dim", kMaxHeadDim);
  c.intermediate_size = f.count("intermediate_size", kBig);
  c.moe_intermediate_size = f.count("moe_intermediate_size", kBig);
  c.n_routed_experts = std::max(f.count("n_routed_experts", 1 << 20), f.count("num_experts", 1 << 20));
  c.n_shared_experts = f.count("n_shared_experts", 1 << 20);
  c.num_experts_per_tok = f.count("num_experts_per_tok", 1 << 20);
  c.first_k_dense_replace = f.count("first_k_dense_replace", 100000);
  c.vocab_size = f.count("vocab_size", std::int64_t{1} << 32);
  c.tie_word_embeddings = f.flag("tie_word_embeddings");
  c.num_nextn_predict_layers = f.count("num_nextn_predict_layers", 16);
  f.finish();
  const std::string& w = f.where();
  if (c.hidden_size < 1 || c.num_hidden_layers < 1 || c.num_attention_heads < 1 || c.vocab_size < 1)
    throw InputError(w + ": hidden_size, num_hidden_layers, num_attention_heads and vocab_size are required");
  if (c.kv_lora_rank > 0 && (c.qk_rope_head_dim < 1 || c.qk_nope_head_dim < 1 || c.v_head_dim < 1))
    throw InputError(
        w + ": an MLA model (kv_lora_rank > 0) needs qk_rope_head_dim, qk_nope_head_dim and v_head_dim");
  if (c.kv_lora_rank == 0 && c.num_key_value_heads < 1)
    throw InputError(w + ": num_key_value_heads is required (or kv_lora_rank for an MLA model)");
  if (c.kv_lora_rank == 0 && c.num_attention_heads % c.num_key_value_heads != 0)
    throw InputError(w + ": num_key_value_heads must divide num_attention_heads");
  if (c.n_routed_experts > 0 && (c.moe_intermediate_size < 1 || c.num_experts_per_tok < 1 ||
                                 c.num_experts_per_tok > c.n_routed_experts))
    throw InputError(w + ": a MoE model needs moe_intermediate_size and 1 <= num_experts_per_tok <= experts");
  if (c.first_k_dense_replace > c.num_hidden_layers)
    throw InputError(w + ": first_k_dense_replace exceeds num_hidden_layers");
  if (c.n_routed_experts == 0 && c.intermediate_size < 1)
    throw InputError(w + ": a dense model needs intermediate_size");
  return c;
}

std::string read_model_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw InputError(path.string() + ": cannot open model file (not a regular file)");
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in && !in.eof()) throw InputError(path.string() + ": cannot read model file");
  return text.str();
}

std::string preset_list() {
  std::string out;
  for (const std::string& n : builtin_model_names()) out += (out.empty() ? "" : ", ") + n;
  return out;
}

constexpr std::array<std::pair<WeightDType, std::string_view>, 5> kWeightDTypes{
    {{WeightDType::kBF16, "bf16"},
     {WeightDType::kFP8, "fp8"},
     {WeightDType::kNVFP4, "nvfp4"},
     {WeightDType::kMXFP4, "mxfp4"},
     {WeightDType::kINT4, "int4"}}};
constexpr double kBf16Bytes = 2.0;  // embedding, output head and router

WeightDType nearest_weight_dtype(double bytes) {
  WeightDType best = WeightDType::kBF16;
  for (const auto& [d, name] : kWeightDTypes) {
    if (std::fabs(weight_dtype_bytes(d) - bytes) < std::fabs(weight_dtype_bytes(best) - bytes)) best = d;
  }
  return best;
}

}  // namespace

std::string_view to_string(WeightDType d) {
  for (const auto& [value, name] : kWeightDTypes) {
    if (value == d) return name;
  }
  return "?";
}

WeightDType parse_weight_dtype(std::string_view s) {
  for (const auto& [value, name] : kWeightDTypes) {
    if (name == s) return value;
  }
  if (s == "fp8_e4m3" || s == "fp8-e4m3") return WeightDType::kFP8;
  if (s == "w4a16") return WeightDType::kINT4;
  throw InputError("unknown weight dtype '" + std::string(s) + "' (allowed: bf16, fp8, nvfp4, mxfp4, int4)");
}

double weight_dtype_bytes(WeightDType d) {
  switch (d) {
    case WeightDType::kBF16:
      return 2.0;
    case WeightDType::kFP8:
      return 1.0 + 4.0 / (128.0 * 128.0);
    case WeightDType::kNVFP4:
      return 0.5 + 1.0 / 16.0;
    case WeightDType::kMXFP4:
      return 0.5 + 1.0 / 32.0;
    case WeightDType::kINT4:
      return 0.5 + 2.0 / 32.0;
  }
  return 2.0;
}

ModelPreset ModelPreset::with_weight_dtype(WeightDType d) const {
  ModelPreset m = *this;
  if (d != weight_dtype || dense_weight_dtype ||
      std::fabs(weight_bytes_per_parameter - weight_dtype_bytes(d)) > 1e-12) {
    m.weight_dtype = d;
    m.dense_weight_dtype.reset();
    m.weight_bytes_per_parameter = weight_dtype_bytes(d);
    m.weight_source = "--weight-dtype " + std::string(to_string(d)) + " (released as " +
                      std::string(to_string(weight_dtype)) + ")";
  }
  return m;
}

double ParameterCounts::total() const {
  return attention_projections * (dense_layers + moe_layers) + dense_mlp * dense_layers +
         (expert * double(routed_experts + shared_experts) + router) * moe_layers + embedding + lm_head;
}

double ParameterCounts::active_per_token() const {
  return attention_projections * (dense_layers + moe_layers) + dense_mlp * dense_layers +
         (expert * double(experts_per_token + shared_experts) + router) * moe_layers +
         (lm_head > 0 ? lm_head : embedding);  // the input embedding is a lookup, not read whole
}

const std::vector<std::string>& builtin_model_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const detail::EmbeddedProfile& e : detail::embedded_models()) out.emplace_back(e.name);
    std::sort(out.begin(), out.end());
    return out;
  }();
  return names;
}

ModelPreset parse_model(std::string_view json_text, std::string_view origin) {
  const std::string where(origin);
  const PresetJson root = parse_json_checked<PresetJson>(json_text, where);
  Fields top(root, where);
  if (top.text("format") != kModelFormat)
    throw InputError(where + ": format: expected \"" + std::string(kModelFormat) + "\"");
  ModelPreset m;
  m.name = top.text("name");
  m.description = top.text("description");
  m.config_source = top.text("config_source");
  const PresetJson* config = top.find("config");
  if (config == nullptr) throw InputError(where + ": config: missing");
  m.config = read_config(Fields(*config, where + ": config"));
  // The weights' type (`weight_dtype`), or an explicit byte count per parameter (older files).
  const PresetJson* dtype = top.find("weight_dtype");
  const PresetJson* weights = top.find("weight_bytes_per_parameter");
  if ((dtype == nullptr) == (weights == nullptr))
    throw InputError(where + ": give one of weight_dtype and weight_bytes_per_parameter");
  if (dtype != nullptr) {
    Fields w(*dtype, where + ": weight_dtype");
    try {
      m.weight_dtype = parse_weight_dtype(w.text("value"));
    } catch (const InputError& e) {
      throw InputError(where + ": weight_dtype.value: " + e.what());
    }
    m.weight_bytes_per_parameter = weight_dtype_bytes(m.weight_dtype);
    m.weight_source = w.text("source");
    const std::string dense = w.text("dense", false);
    if (!dense.empty()) {
      try {
        m.dense_weight_dtype = parse_weight_dtype(dense);
      } catch (const InputError& e) {
        throw InputError(where + ": weight_dtype.dense: " + e.what());
      }
    }
    w.finish();
  } else {
    Fields w(*weights, where + ": weight_bytes_per_parameter");
    m.weight_bytes_per_parameter = w.number("value", 0.125, 8.0);
    m.weight_dtype = nearest_weight_dtype(m.weight_bytes_per_parameter);
    m.weight_source = w.text("source");
    w.finish();
  }
  if (const PresetJson* kv = top.find("kv_cache_dtype")) {
    Fields k(*kv, where + ": kv_cache_dtype");
    try {
      m.kv_cache_dtype = parse_dtype(k.text("value"));
    } catch (const InputError& e) {
      throw InputError(where + ": kv_cache_dtype.value: " + e.what());
    }
    if (m.kv_cache_dtype == DType::kF64 || m.kv_cache_dtype == DType::kF32)
      throw InputError(where + ": kv_cache_dtype.value: expected bf16, fp16 or fp8");
    m.kv_cache_source = k.text("source");
    k.finish();
  } else {
    m.kv_cache_source = "vLLM's default --kv-cache-dtype auto: bf16";
  }
  const PresetJson* card = top.find("model_card");
  if (card == nullptr) throw InputError(where + ": model_card: missing");
  Fields c(*card, where + ": model_card");
  m.card_total_parameters = c.number("total_parameters", 1.0, 1e15);
  m.card_active_parameters = c.number("active_parameters", 1.0, 1e15);
  m.card_source = c.text("source");
  c.finish();
  top.finish();
  return m;
}

ModelPreset load_model(std::string_view name_or_path) {
  for (const detail::EmbeddedProfile& e : detail::embedded_models()) {
    if (e.name == name_or_path) return parse_model(e.json, std::string(e.name) + ".json (built-in model)");
  }
  const std::filesystem::path path{std::string(name_or_path)};
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) return parse_model(read_model_file(path), path.string());
  if (name_or_path.find('/') != std::string_view::npos || name_or_path.ends_with(".json"))
    throw InputError(path.string() + ": model file not found");
  throw InputError("unknown model \"" + std::string(name_or_path) + "\" (presets: " + preset_list() +
                   "; none for the attention flags alone; or a path to a dcpsim-model/1 JSON file)");
}

ParameterCounts parameter_counts(const ModelPreset& model) {
  const ModelConfig& c = model.config;
  const double h = double(c.hidden_size);
  const double heads = double(c.num_attention_heads);
  ParameterCounts p;
  if (model.mla()) {
    const double qk = double(c.qk_nope_head_dim + c.qk_rope_head_dim);
    const double q =
        c.q_lora_rank > 0 ? h * double(c.q_lora_rank) + double(c.q_lora_rank) * heads * qk : h * heads * qk;
    const double kv_down = h * double(c.kv_lora_rank + c.qk_rope_head_dim);
    const double kv_up = double(c.kv_lora_rank) * heads * double(c.qk_nope_head_dim + c.v_head_dim);
    p.attention_projections = q + kv_down + kv_up + heads * double(c.v_head_dim) * h;
    p.attention_replicated = (c.q_lora_rank > 0 ? h * double(c.q_lora_rank) : 0.0) + kv_down;
  } else {
    const double d = c.head_dim > 0 ? double(c.head_dim) : h / heads;
    p.attention_projections = 2.0 * h * heads * d + 2.0 * h * double(c.num_key_value_heads) * d;
  }
  p.routed_experts = c.n_routed_experts;
  p.shared_experts = c.n_shared_experts;
  p.experts_per_token = c.num_experts_per_tok;
  if (model.moe()) {
    p.dense_layers = static_cast<int>(c.first_k_dense_replace);
    p.moe_layers = static_cast<int>(c.num_hidden_layers - c.first_k_dense_replace);
    p.expert = 3.0 * h * double(c.moe_intermediate_size);
    p.router = h * double(c.n_routed_experts);
  } else {
    p.dense_layers = static_cast<int>(c.num_hidden_layers);
  }
  p.dense_mlp = 3.0 * h * double(c.intermediate_size);
  p.embedding = double(c.vocab_size) * h;
  p.lm_head = c.tie_word_embeddings ? 0.0 : double(c.vocab_size) * h;
  return p;
}

RankGeometry rank_geometry(const ModelPreset& model, int dcp, int tp) {
  if (dcp < 1 || tp < 1) throw InputError("dcp and tp must be >= 1");
  if (dcp > tp) {
    throw InputError("dcp " + std::to_string(dcp) + " > tp " + std::to_string(tp) +
                     ": the DCP group is part of the tensor parallel group (give --tp >= --dcp)");
  }
  const ModelConfig& c = model.config;
  const std::int64_t gathered = c.num_attention_heads * dcp;
  if (gathered % tp != 0) {
    throw InputError("tp " + std::to_string(tp) + " does not divide " + model.name + "'s " +
                     std::to_string(c.num_attention_heads) + " heads x dcp " + std::to_string(dcp));
  }
  RankGeometry g;
  g.heads = static_cast<int>(gathered / tp);
  if (model.mla()) {
    g.kv_heads = 1;
    g.head_dim = static_cast<int>(c.kv_lora_rank);
    g.qk_dim = static_cast<int>(c.kv_lora_rank + c.qk_rope_head_dim);
  } else {
    const std::int64_t kv = c.num_key_value_heads * dcp;
    g.kv_heads = static_cast<int>(std::max<std::int64_t>(1, kv / tp));
    if (kv % tp != 0 && kv > tp) {
      throw InputError("tp " + std::to_string(tp) + " does not divide " + model.name + "'s " +
                       std::to_string(c.num_key_value_heads) + " KV heads x dcp " + std::to_string(dcp));
    }
    g.head_dim = g.qk_dim =
        static_cast<int>(c.head_dim > 0 ? c.head_dim : c.hidden_size / c.num_attention_heads);
  }
  return g;
}

double weight_bytes_per_gpu(const ModelPreset& model, int tp, int mtp_modules, int pp) {
  if (tp < 1) throw InputError("tp must be >= 1");
  if (mtp_modules < 0) throw InputError("mtp_modules must be >= 0");
  if (pp < 1) throw InputError("pp must be >= 1");
  const ParameterCounts p = parameter_counts(model);
  const int layers = p.dense_layers + p.moe_layers;
  const double t = tp;
  // Per layer of each kind, the linear weights on one GPU (parameters): the routed experts at the weight
  // dtype, the rest (attention, dense MLPs, shared experts) at the dense dtype; the bf16 router.
  const double attention = p.attention_replicated + (p.attention_projections - p.attention_replicated) / t;
  const double shared = p.expert * double(p.shared_experts) / t,
               routed = p.expert * double(p.routed_experts) / t;
  // The fullest pipeline stage's share of the layers (1 without pipeline parallelism).
  const double stage = pp == 1 ? 1.0 : std::ceil(double(layers) / pp) / double(layers);
  double dense = (attention * layers + p.dense_mlp / t * p.dense_layers + shared * p.moe_layers) * stage;
  double experts = routed * p.moe_layers * stage;
  double bf16 = p.router * p.moe_layers * stage +
                (pp == 1 ? p.embedding + p.lm_head : std::max(p.embedding, p.lm_head)) / t;
  if (mtp_modules > 0) {
    const double h = double(model.config.hidden_size);
    dense += (attention + (model.moe() ? shared : p.dense_mlp / t) + 2.0 * h * h / t) * mtp_modules;
    experts += (model.moe() ? routed : 0.0) * mtp_modules;
    bf16 += (model.moe() ? p.router : 0.0) * mtp_modules;
  }
  const double dense_bytes = model.dense_weight_dtype ? weight_dtype_bytes(*model.dense_weight_dtype)
                                                      : model.weight_bytes_per_parameter;
  return experts * model.weight_bytes_per_parameter + dense * dense_bytes + bf16 * kBf16Bytes;
}

}  // namespace dcpsim::models
