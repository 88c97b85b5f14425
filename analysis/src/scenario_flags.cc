#include "dcpsim/analysis/scenario_flags.h"

#include <charconv>
#include <fstream>
#include <sstream>

#include "dcpsim/checked.h"
#include "dcpsim/error.h"

namespace dcpsim::analysis {
namespace {

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

models::Scenario make(const ScenarioFlags& f, const std::string& dcp, const std::string& heads,
                      const std::string& head_dim, const std::string& kv_heads, const std::string& batch,
                      const std::string& context, const std::string& strategy, const std::string& launch) {
  models::Scenario s;
  s.dcp = parse_int(dcp, "dcp", 1, kMaxDcp);
  s.heads = parse_int(heads, "heads", 1, kMaxHeads);
  s.head_dim = parse_int(head_dim, "head-dim", 1, kMaxHeadDim);
  s.kv_heads = parse_int(kv_heads, "kv-heads", 1, kMaxHeads);
  s.qk_dim = f.qk_dim.empty() ? default_qk_dim(s.head_dim, s.kv_heads)
                              : parse_int(single(f.qk_dim, "qk-dim"), "qk-dim", 1, kMaxHeadDim);
  s.interleave = parse_int(single(f.interleave, "interleave"), "interleave", 1, 1 << 30);
  s.lse_base = models::parse_lse_base(single(f.lse_base, "lse-base"));
  s.kv_dtype = models::parse_dtype(single(f.kv_dtype, "kv-dtype"));
  s.out_dtype = models::parse_dtype(single(f.out_dtype, "out-dtype"));
  s.strategy = models::parse_strategy(strategy);
  s.launch = models::parse_launch_mode(launch);
  if (!f.contexts_file.empty()) {
    s.contexts = read_contexts_file(f.contexts_file);
  } else {
    s.contexts =
        models::uniform_contexts(parse_int(batch, "batch", 1, kMaxRows), models::parse_token_count(context));
  }
  return s;
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

void add_scenario_flags(CLI::App& cmd, ScenarioFlags& f, bool lists) {
  const std::string many = lists ? " (comma list)" : "";
  cmd.add_option("--dcp", f.dcp, "DCP group size N" + many)->capture_default_str();
  cmd.add_option("--heads", f.heads, "query heads per rank after the query all-gather (H)" + many)
      ->capture_default_str();
  cmd.add_option("--head-dim", f.head_dim, "value head dim D (512 = MLA latent, 128 = GQA)" + many)
      ->capture_default_str();
  cmd.add_option("--qk-dim", f.qk_dim,
                 "query/key dim D_qk (default: 576 for D=512 with one KV head, else D)");
  cmd.add_option("--kv-heads", f.kv_heads, "KV heads H_kv, dividing H (1 = MQA/MLA)" + many)
      ->capture_default_str();
  cmd.add_option("--batch", f.batch, "decode rows (requests) in the step" + many)->capture_default_str();
  cmd.add_option("--context", f.context, "context length of every row: 4096, 32k, 1m (k=1024)" + many)
      ->capture_default_str();
  cmd.add_option("--contexts-file", f.contexts_file,
                 "one context length per row (file); overrides --batch/--context");
  cmd.add_option(
         "--strategy", f.strategy,
         "merge strategy: ag-rs, ag-ar, a2a, direct, row-stream, flashinfer-a2a (FlashInfer's fused merge)" +
             (lists ? many + " or all" : std::string()))
      ->capture_default_str();
  cmd.add_option("--launch", f.launch, "kernel launch mode: eager, graph, pdl" + many)->capture_default_str();
  cmd.add_option("--interleave", f.interleave, "KV interleave size I (tokens per rank per turn)")
      ->capture_default_str();
  cmd.add_option("--lse-base", f.lse_base, "LSE base: e or 2")->capture_default_str();
  cmd.add_option("--kv-dtype", f.kv_dtype, "Q/K/V element type: bf16, fp16, fp32")->capture_default_str();
  cmd.add_option("--out-dtype", f.out_dtype, "output element type: bf16, fp16, fp32")->capture_default_str();
}

models::Scenario to_scenario(const ScenarioFlags& f) {
  models::Scenario s =
      make(f, single(f.dcp, "dcp"), single(f.heads, "heads"), single(f.head_dim, "head-dim"),
           single(f.kv_heads, "kv-heads"), single(f.batch, "batch"), single(f.context, "context"),
           single(f.strategy, "strategy"), single(f.launch, "launch"));
  s.validate();
  return s;
}

ScanGrid expand_scan(const ScenarioFlags& f) {
  std::vector<std::string> strategies = split_list(f.strategy, "strategy");
  if (strategies.size() == 1 && strategies[0] == "all") {
    strategies.clear();
    for (auto s : models::all_strategies()) strategies.emplace_back(models::to_string(s));
  }
  ScanGrid grid;
  for (const auto& dcp : split_list(f.dcp, "dcp"))
    for (const auto& heads : split_list(f.heads, "heads"))
      for (const auto& head_dim : split_list(f.head_dim, "head-dim"))
        for (const auto& kv_heads : split_list(f.kv_heads, "kv-heads"))
          for (const auto& batch : split_list(f.batch, "batch"))
            for (const auto& context : split_list(f.context, "context"))
              for (const auto& strategy : strategies)
                for (const auto& launch : split_list(f.launch, "launch")) {
                  models::Scenario s =
                      make(f, dcp, heads, head_dim, kv_heads, batch, context, strategy, launch);
                  try {
                    s.validate();
                    grid.scenarios.push_back(std::move(s));
                  } catch (const InputError& e) {
                    grid.skipped.push_back(s.label() + ": " + e.what());
                  }
                }
  return grid;
}

}  // namespace dcpsim::analysis
