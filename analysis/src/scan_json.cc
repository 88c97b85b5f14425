// `scan --json`: the scan's answer in the one summary shape (summary_json.h), from the CSV it wrote.
#include <algorithm>
#include <map>
#include <sstream>

#include "dcpsim/analysis/scan.h"
#include "dcpsim/analysis/summary_json.h"
#include "dcpsim/error.h"

namespace dcpsim::analysis {
namespace {

std::vector<std::string> fields(const std::string& line) {
  std::vector<std::string> out;
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, ',')) out.push_back(field);
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

nlohmann::json scan_units() {
  return {{"*_us", "microseconds"},
          {"decode_step_us", "one decode step: every layer's attention + the non-attention time"},
          {"step_latency_us, merge_latency_us", "one attention layer: query all-gather, attention, merge"},
          {"kv_capacity_tokens_*", "tokens of KV over every layer"},
          {"points", "one per scenario of the scan that ran this strategy"}};
}

}  // namespace

std::string scan_summary_json(const std::string& csv, const ScanSummaryOptions& o, const LayoutChoice& tp,
                              const std::string& profile, const std::string& model) {
  std::istringstream in(csv);
  std::string line;
  if (!std::getline(in, line)) throw InputError("scan summary: the CSV is empty");
  const std::vector<std::string> header = fields(line);
  std::map<std::string, std::size_t> col;
  for (std::size_t i = 0; i < header.size(); ++i) col[header[i]] = i;
  const auto at = [&](const char* name) {
    const auto it = col.find(name);
    if (it == col.end()) throw InputError(std::string("scan summary: the CSV has no column ") + name);
    return it->second;
  };
  const std::size_t strategy = at("strategy"), decode = at("decode_step_us"), weights = at("weights_fit"),
                    fits = at("kv_fits");
  const char* integers[] = {"tp", "dcp", "heads", "kv_heads", "head_dim", "batch"};
  const char* numbers[] = {"decode_step_us", "step_latency_us", "merge_latency_us",
                           "kv_capacity_tokens_per_gpu", "kv_capacity_tokens_group"};
  std::map<models::Strategy, nlohmann::json> points;
  // The best point per group (batch, context, geometry given by flags), among what a pick may choose.
  std::map<std::string, std::pair<double, nlohmann::json>> best;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const std::vector<std::string> f = fields(line);
    if (f.size() != header.size()) throw InputError("scan summary: a row has the wrong number of fields");
    nlohmann::json p;
    try {
      for (const char* c : integers) p[c] = std::stoll(f[at(c)]);
      for (const char* c : numbers) p[c] = std::stod(f[at(c)]);
    } catch (const std::exception&) {
      throw InputError("scan summary: a row holds a malformed number");
    }
    p["context"] = f[at("context")];
    p["weights_fit"] = f[weights] == "true";
    p["kv_fits"] = f[fits] == "true";
    const models::Strategy s = models::parse_strategy(f[strategy]);
    points[s].push_back(p);
    if (!(p["weights_fit"].get<bool>() && p["kv_fits"].get<bool>() && may_pick(s, o.include_research)))
      continue;
    std::string key =
        f[at("batch")] + "|" + f[at("context")] + "|" + f[at("head_dim")] + "|" + f[at("launch")];
    if (o.by_heads) key += "|" + f[at("heads")];
    if (o.by_tp) key += "|" + f[at("tp")];
    const double d = std::stod(f[decode]);
    if (!best.contains(key) || d < best[key].first) {
      nlohmann::json b = p;
      b["strategy"] = f[strategy];
      best[key] = {d, b};
    }
  }
  nlohmann::json doc = summary_document("scan", profile, model);
  doc["layout"] = {{"tp", tp.tp}, {"rule", tp.rule}};
  doc["strategies"] = nlohmann::json::array();
  for (const models::Strategy s : models::all_strategies()) {
    if (!points.contains(s)) continue;
    Layout l;
    l.tp = tp.tp.empty() ? 0 : tp.tp.front();
    nlohmann::json e = strategy_entry(s, l, scan_units());
    e["layout"] = {{"tp", tp.tp}, {"dcp", "per point"}};
    e["points"] = std::move(points[s]);
    doc["strategies"].push_back(std::move(e));
  }
  doc["best"] = nlohmann::json::array();
  for (auto& [key, b] : best) doc["best"].push_back(b.second);
  doc["best_among"] = o.include_research ? "every strategy (--include-research)" : "production";
  return doc.dump(1) + "\n";
}

}  // namespace dcpsim::analysis
