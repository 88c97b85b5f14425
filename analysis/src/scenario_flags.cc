#include "dcpsim/analysis/scenario_flags.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>
#include <map>
#include <sstream>

#include "dcpsim/analysis/layouts.h"
#include "dcpsim/checked.h"
#include "dcpsim/error.h"

namespace dcpsim::analysis {
namespace {

constexpr std::size_t kMaxListValues = 100000;
constexpr const char* kDefaultModel = "deepseek-v3";

int parse_int(const std::string& s, const std::string& flag, int min_value, int max_value) {
  int v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < min_value || v > max_value) {
    throw InputError("--" + flag + " '" + s + "' is not an integer in [" + std::to_string(min_value) + ", " +
                     std::to_string(max_value) + "]");
  }
  return v;
}

std::string single(const std::string& value, const std::string& flag) {
  auto items = split_list(value, flag);
  if (items.size() != 1) throw InputError("--" + flag + " takes one value here, got '" + value + "'");
  return items.front();
}

std::vector<int64_t> read_contexts_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError("--contexts-file '" + path + "' cannot be opened");
  std::vector<int64_t> contexts;
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    for (char& c : line) {
      if (c == ',') c = ' ';
    }
    std::istringstream words(line);
    std::string w;
    while (words >> w) {
      if (w.front() == '#') break;
      try {
        if (contexts.size() >= static_cast<std::size_t>(kMaxRows)) {
          throw InputError("more than " + std::to_string(kMaxRows) + " rows");
        }
        contexts.push_back(models::parse_token_count(w));
      } catch (const InputError& e) {
        throw InputError(path + ":" + std::to_string(line_no) + ": " + e.what());
      }
    }
  }
  if (contexts.empty()) throw InputError("--contexts-file '" + path + "' holds no context lengths");
  return contexts;
}

int default_qk_dim(int head_dim, int kv_heads) {
  return (head_dim == 512 && kv_heads == 1) ? 576 : head_dim;
}

bool geometry_given(const ScenarioFlags& f) {
  return !f.heads.empty() || !f.head_dim.empty() || !f.qk_dim.empty() || !f.kv_heads.empty();
}

// The values of one scenario's list flags, before parsing.
struct Pick {
  std::string dcp, tp, heads, head_dim, kv_heads, batch, context, strategy, launch;
};

// `geometry`: the model's for this dcp and tp (nullptr without a model).
models::Scenario make(const ScenarioFlags& f, const models::RankGeometry* geometry, const Pick& p,
                      models::DType default_kv = models::DType::kBF16) {
  models::Scenario s;
  s.dcp = parse_int(p.dcp, "dcp", 1, kMaxDcp);
  const bool model = geometry != nullptr;
  const models::RankGeometry g = model ? *geometry : models::RankGeometry{128, 1, 512, 0};
  s.heads = p.heads.empty() ? g.heads : parse_int(p.heads, "heads", 1, kMaxHeads);
  s.head_dim = p.head_dim.empty() ? g.head_dim : parse_int(p.head_dim, "head-dim", 1, kMaxHeadDim);
  s.kv_heads = p.kv_heads.empty() ? g.kv_heads : parse_int(p.kv_heads, "kv-heads", 1, kMaxHeads);
  if (!f.qk_dim.empty()) {
    s.qk_dim = parse_int(single(f.qk_dim, "qk-dim"), "qk-dim", 1, kMaxHeadDim);
  } else if (model && p.head_dim.empty() && p.kv_heads.empty()) {
    s.qk_dim = g.qk_dim;
  } else {
    s.qk_dim = default_qk_dim(s.head_dim, s.kv_heads);
  }
  s.interleave = parse_int(single(f.interleave, "interleave"), "interleave", 1, 1 << 30);
  s.lse_base = models::parse_lse_base(single(f.lse_base, "lse-base"));
  s.kv_dtype = f.kv_dtype.empty() ? default_kv : models::parse_dtype(single(f.kv_dtype, "kv-dtype"));
  if (s.kv_dtype == models::DType::kF64) throw InputError("--kv-dtype fp64 is for the reference only");
  s.out_dtype = models::parse_dtype(single(f.out_dtype, "out-dtype"));
  s.strategy = models::parse_strategy(p.strategy);
  s.launch = models::parse_launch_mode(p.launch);
  if (!f.contexts_file.empty()) {
    s.contexts = read_contexts_file(f.contexts_file);
  } else {
    s.contexts = models::uniform_contexts(parse_int(p.batch, "batch", 1, kMaxRows),
                                          models::parse_token_count(p.context));
  }
  return s;
}

std::int64_t parse_value(const std::string& text, const std::string& flag, bool tokens) {
  if (tokens) return models::parse_token_count(text);
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size())
    throw InputError("--" + flag + " '" + text + "' is not an integer");
  return v;
}

// "A..B", "A..B:S", "A..B:xF" -> the values; InputError naming the flag for a bad or huge range.
void expand_range(const std::string& item, const std::string& flag, bool tokens,
                  std::vector<std::string>& out) {
  const auto dots = item.find("..");
  const auto colon = item.find(':', dots);
  const std::string lo_text = item.substr(0, dots);
  const std::string hi_text =
      item.substr(dots + 2, colon == std::string::npos ? std::string::npos : colon - dots - 2);
  const auto bad = [&](const std::string& why) {
    return InputError("--" + flag + " '" + item + "': " + why +
                      " (ranges: A..B every integer, A..B:S in steps of S, A..B:xF multiplying by F)");
  };
  if (lo_text.empty() || hi_text.empty()) throw bad("a range needs both ends");
  const std::int64_t lo = parse_value(lo_text, flag, tokens);
  const std::int64_t hi = parse_value(hi_text, flag, tokens);
  if (lo < 0 || hi < lo) throw bad("the range must run upwards from a non-negative start");
  bool times = false;
  std::int64_t step = 1;
  if (colon != std::string::npos) {
    std::string s = item.substr(colon + 1);
    times = !s.empty() && (s[0] == 'x' || s[0] == '*');
    if (times) s.erase(0, 1);
    step = parse_value(s, flag, tokens && !times);
    if (step < (times ? 2 : 1)) throw bad(times ? "the factor must be >= 2" : "the step must be >= 1");
    if (times && lo == 0) throw bad("a multiplying range must start above 0");
  }
  for (std::int64_t v = lo; v <= hi;) {
    if (out.size() >= kMaxListValues) throw bad("more than 100000 values");
    out.push_back(std::to_string(v));
    if (times ? v > hi / step : v > hi - step) break;
    v = times ? v * step : v + step;
  }
}

}  // namespace

std::vector<std::string> split_list(const std::string& value, const std::string& flag) {
  std::vector<std::string> items;
  std::string item;
  std::istringstream in(value);
  while (std::getline(in, item, ',')) {
    const auto b = item.find_first_not_of(" \t");
    const auto e = item.find_last_not_of(" \t");
    if (b == std::string::npos) throw InputError("--" + flag + " '" + value + "' has an empty item");
    items.push_back(item.substr(b, e - b + 1));
  }
  if (items.empty() || value.back() == ',')
    throw InputError("--" + flag + " '" + value + "' has an empty item");
  return items;
}

std::vector<std::string> expand_list(const std::string& value, const std::string& flag, bool tokens) {
  std::vector<std::string> out;
  for (const std::string& item : split_list(value, flag)) {
    if (item.find("..") != std::string::npos) {
      expand_range(item, flag, tokens, out);
    } else {
      out.push_back(item);
    }
    if (out.size() > kMaxListValues)
      throw InputError("--" + flag + " '" + value + "': more than 100000 values");
  }
  return out;
}

std::vector<models::Strategy> parse_strategy_list(const std::string& value, const std::string& flag,
                                                  const std::vector<models::Strategy>& all) {
  const auto items = split_list(value, flag);
  if (items.size() == 1 && items[0] == "all") return all;
  std::vector<models::Strategy> out;
  for (const auto& s : items) {
    const models::Strategy strategy = models::parse_strategy(s);
    if (std::find(out.begin(), out.end(), strategy) == out.end()) out.push_back(strategy);
  }
  return out;
}

std::string strategy_help(bool many) {
  std::string names;
  for (const models::Strategy s : models::all_strategies()) {
    names += (names.empty() ? "" : ", ") + std::string(models::to_string(s));
    if (!is_production(s)) names += std::string(" (research; ") + kRowStreamWhere + ")";
  }
  return std::string(many ? "merge strategy, a comma list or all: " : "merge strategy: ") + names +
         "; the engines' names work too: ag_rs, fi_a2a, vllm-a2a (vLLM's --dcp-comm-backend a2a = "
         "a2a-2call), "
         "sglang-a2a (SGLang's a2a = a2a), every name with _";
}

void add_scenario_flags(CLI::App& cmd, ScenarioFlags& f, bool lists) {
  const std::string many = lists ? " (list or range: 1,2,4 or 1..72 or 1..256:x2)" : "";
  cmd.add_option("--dcp", f.dcp, "DCP group size N" + many)->capture_default_str();
  cmd.add_option("--model", f.model,
                 "model preset (deepseek-v3, deepseek-r1, kimi-k2, kimi-k2-thinking, llama-3.1-70b, "
                 "qwen3-235b-a22b), a "
                 "dcpsim-model/1 JSON file, or none; default deepseek-v3 unless a geometry flag is given")
      ->type_name("NAME|FILE");
  cmd.add_option("--tp", f.tp,
                 "tensor parallel size T the model is served with (default: the smallest multiple of the "
                 "largest --dcp whose weights fit a GPU; vLLM needs T >= N and T % N == 0); with --model, "
                 "heads per rank H = heads x N / T and weights per GPU = weights / T" +
                     many);
  cmd.add_option("--heads", f.heads,
                 "query heads per rank after the query all-gather (H); default from --model/--tp" + many);
  cmd.add_option("--head-dim", f.head_dim,
                 "value head dim D (512 = MLA latent, 128 = GQA); default from --model" + many);
  cmd.add_option(
      "--qk-dim", f.qk_dim,
      "query/key dim D_qk; default from --model (without: 576 for D=512 with one KV head, else D)");
  cmd.add_option("--kv-heads", f.kv_heads,
                 "KV heads H_kv on a rank, dividing H (1 = MQA/MLA); default from --model" + many);
  cmd.add_option("--batch", f.batch, "decode rows (requests) in the step" + many)->capture_default_str();
  cmd.add_option("--context", f.context,
                 "context length of every row: 4096, 32k, 1m (k=1024)" +
                     (lists ? std::string(" (list or range: 32k..1m:x2)") : std::string()))
      ->capture_default_str();
  cmd.add_option("--contexts-file", f.contexts_file,
                 "one context length per row (file); overrides --batch/--context");
  cmd.add_option("--strategy", f.strategy, strategy_help())->capture_default_str();
  cmd.add_option("--launch", f.launch,
                 "kernel launch mode: eager, graph, pdl" + std::string(lists ? " (a comma list)" : ""))
      ->capture_default_str();
  cmd.add_option("--interleave", f.interleave, "KV interleave size I (tokens per rank per turn)")
      ->capture_default_str();
  cmd.add_option("--lse-base", f.lse_base, "LSE base: e or 2")->capture_default_str();
  // Each list says exactly what the flag accepts (tests/analysis/help_docs_test.cc runs every type): the KV
  // cache takes no fp64 (reference only), the output no fp8.
  std::string dtypes, outs;
  for (const models::DType t : models::all_dtypes()) {
    if (t != models::DType::kF64) dtypes += (dtypes.empty() ? "" : ", ") + std::string(models::to_string(t));
    if (t != models::DType::kFP8E4M3) outs += (outs.empty() ? "" : ", ") + std::string(models::to_string(t));
  }
  cmd.add_option(
      "--kv-dtype", f.kv_dtype,
      "KV-cache element type: " + dtypes +
          " (fp8: e4m3 with a per-tensor scale, vLLM's --kv-cache-dtype fp8; the query stays bf16); "
          "default: the model's (bf16)");
  cmd.add_option("--out-dtype", f.out_dtype, "output element type: " + outs)->capture_default_str();
}

std::optional<models::ModelPreset> model_of(const ScenarioFlags& f) {
  if (f.model == "none") return std::nullopt;
  if (!f.model.empty()) return models::load_model(f.model);
  if (geometry_given(f)) return std::nullopt;
  return models::load_model(kDefaultModel);
}

std::string model_label(const ScenarioFlags& f) {
  if (f.model == "none" || (f.model.empty() && geometry_given(f))) return "none (attention flags only)";
  if (f.model.empty()) return std::string(kDefaultModel) + " (default)";
  const models::ModelPreset m = models::load_model(f.model);
  std::string overridden;
  for (const auto& [flag, value] : {std::pair{"--heads", &f.heads}, std::pair{"--head-dim", &f.head_dim},
                                    std::pair{"--qk-dim", &f.qk_dim}, std::pair{"--kv-heads", &f.kv_heads}}) {
    if (!value->empty()) overridden += (overridden.empty() ? "" : ", ") + std::string(flag);
  }
  return m.name + (overridden.empty() ? "" : " (" + overridden + " overridden)");
}

int tp_of(const ScenarioFlags& f, int dcp) {
  if (f.tp.empty()) return f.default_tp > 0 ? f.default_tp : dcp;
  return parse_int(single(f.tp, "tp"), "tp", 1, kMaxDcp);
}

std::vector<models::Scenario> to_scenarios(const ScenarioFlags& f, const std::vector<models::Strategy>& all) {
  const std::optional<models::ModelPreset> model = model_of(f);
  std::vector<models::Scenario> out;
  for (const models::Strategy strategy : parse_strategy_list(f.strategy, "strategy", all)) {
    const Pick p{single(f.dcp, "dcp"),
                 f.tp.empty() ? std::string() : single(f.tp, "tp"),
                 f.heads.empty() ? std::string() : single(f.heads, "heads"),
                 f.head_dim.empty() ? std::string() : single(f.head_dim, "head-dim"),
                 f.kv_heads.empty() ? std::string() : single(f.kv_heads, "kv-heads"),
                 single(f.batch, "batch"),
                 single(f.context, "context"),
                 std::string(models::to_string(strategy)),
                 single(f.launch, "launch")};
    const int dcp = parse_int(p.dcp, "dcp", 1, kMaxDcp);
    const int tp = tp_of(f, dcp);
    std::optional<models::RankGeometry> g;
    if (model) g = models::rank_geometry(*model, dcp, tp);
    models::Scenario s = make(f, g ? &*g : nullptr, p, model ? model->kv_cache_dtype : models::DType::kBF16);
    s.validate();
    out.push_back(std::move(s));
  }
  return out;
}

models::Scenario to_scenario(const ScenarioFlags& f) {
  ScenarioFlags one = f;
  one.strategy = single(f.strategy, "strategy");
  if (one.strategy == "all") throw InputError("--strategy takes one strategy here, not all");
  return to_scenarios(one).front();
}

ScanGrid expand_scan(const ScenarioFlags& f) {
  const std::optional<models::ModelPreset> model = model_of(f);
  std::vector<std::string> strategies;
  for (const auto s : parse_strategy_list(f.strategy, "strategy"))
    strategies.emplace_back(models::to_string(s));
  const auto optional_list = [](const std::string& v, const std::string& flag) {
    return v.empty() ? std::vector<std::string>{""} : expand_list(v, flag);
  };
  const auto dcps = expand_list(f.dcp, "dcp");
  const auto tps = optional_list(f.tp, "tp");
  const auto heads = optional_list(f.heads, "heads");
  const auto head_dims = optional_list(f.head_dim, "head-dim");
  const auto kv_heads = optional_list(f.kv_heads, "kv-heads");
  const auto batches = expand_list(f.batch, "batch");
  const auto contexts = expand_list(f.context, "context", true);
  const auto launches = split_list(f.launch, "launch");
  const std::size_t total = dcps.size() * tps.size() * heads.size() * head_dims.size() * kv_heads.size() *
                            batches.size() * contexts.size() * strategies.size() * launches.size();
  if (total > 10 * kMaxListValues) {
    throw InputError("the scan has " + std::to_string(total) + " combinations; at most 1000000 are allowed");
  }
  for (const auto& launch : launches) (void)models::parse_launch_mode(launch);
  const std::size_t inner = heads.size() * head_dims.size() * kv_heads.size() * batches.size() *
                            contexts.size() * strategies.size() * launches.size();
  ScanGrid grid;
  for (const auto& dcp : dcps)
    for (const auto& tp : tps) {
      const int dcp_value = parse_int(dcp, "dcp", 1, kMaxDcp);
      const int tp_value = !tp.empty()        ? parse_int(tp, "tp", 1, kMaxDcp)
                           : f.default_tp > 0 ? f.default_tp
                                              : dcp_value;
      std::optional<models::RankGeometry> g;
      if (model) {
        try {
          g = models::rank_geometry(*model, dcp_value, tp_value);
        } catch (const InputError& e) {  // a deployment the model cannot take: every combination skipped
          const std::string why = "dcp" + dcp + " tp" + std::to_string(tp_value) + ": " + e.what();
          grid.skipped.insert(grid.skipped.end(), inner, why);
          continue;
        }
      }
      for (const auto& h : heads)
        for (const auto& d : head_dims)
          for (const auto& kv : kv_heads)
            for (const auto& batch : batches)
              for (const auto& context : contexts)
                for (const auto& strategy : strategies)
                  for (const auto& launch : launches) {
                    const Pick p{dcp, tp, h, d, kv, batch, context, strategy, launch};
                    models::Scenario s =
                        make(f, g ? &*g : nullptr, p, model ? model->kv_cache_dtype : models::DType::kBF16);
                    try {
                      s.validate();
                      grid.scenarios.push_back(std::move(s));
                      grid.tp.push_back(tp_value);
                    } catch (const InputError& e) {
                      grid.skipped.push_back(s.label() + ": " + e.what());
                    }
                  }
    }
  return grid;
}

std::string skipped_line(const std::vector<std::string>& skipped, std::size_t total) {
  if (skipped.empty()) return {};
  // Group by the reason with its numbers and the strategy/launch words removed.
  std::map<std::string, std::pair<std::size_t, std::string>> groups;
  std::vector<std::string> order;
  for (const std::string& s : skipped) {
    const auto colon = s.find(": ");
    std::string why = colon == std::string::npos ? s : s.substr(colon + 2);
    for (const auto strategy : models::all_strategies()) {
      const std::string n(models::to_string(strategy));
      for (auto pos = why.find(n); pos != std::string::npos; pos = why.find(n, pos))
        why.replace(pos, n.size(), "S");
    }
    std::string key;
    for (const char c : why) {
      if (std::isdigit(static_cast<unsigned char>(c))) {
        if (key.empty() || key.back() != '#') key += '#';
      } else {
        key += c;
      }
    }
    auto [it, fresh] = groups.try_emplace(key, 0, s);
    if (fresh) order.push_back(key);
    ++it->second.first;
  }
  std::sort(order.begin(), order.end(),
            [&](const std::string& a, const std::string& b) { return groups[a].first > groups[b].first; });
  std::string line =
      "skipped " + std::to_string(skipped.size()) + " of " + std::to_string(total) + " combinations: ";
  for (std::size_t i = 0; i < order.size() && i < 3; ++i) {
    const auto& [count, example] = groups[order[i]];
    line += (i ? "; " : "") + std::to_string(count) + " like \"" + example + "\"";
  }
  if (order.size() > 3) line += "; " + std::to_string(order.size() - 3) + " other reason(s)";
  return line;
}

}  // namespace dcpsim::analysis
