// The scan's answer table (scan.h): the best strategy per DCP size and the best size per group, from the CSV.
#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <sstream>

#include "dcpsim/analysis/layouts.h"
#include "dcpsim/analysis/scan.h"
#include "dcpsim/error.h"

namespace dcpsim::analysis {
namespace {

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> out;
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, ',')) out.push_back(field);
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

struct Row {
  std::vector<std::string> f;
  double decode_us = 0, step_us = 0, merge_us = 0, comm_share = 0;
  int dcp = 0;
  bool fits = false;        // the batch's KV fits (kv_fits)
  bool weights_fit = true;  // the layout holds the weights (weights_fit)
  bool production = true;   // a strategy serving engines ship (layouts.h)
};

std::string thousands(const std::string& digits) {
  std::string out;
  const std::size_t n = digits.size();
  for (std::size_t i = 0; i < n; ++i) {
    out += digits[i];
    if (digits[0] != '-' && (n - i - 1) % 3 == 0 && i + 1 < n) out += ',';
  }
  return out;
}

}  // namespace

namespace {

// The best row at one DCP size: the pick among the strategies a pick may choose, and the fastest research
// strategy when it beats that pick.
struct AtSize {
  std::optional<Row> pick;
  std::optional<Row> research;
};

std::string row_line(const Row& r, bool best, const std::string& tp, const std::string& heads,
                     const std::string& strategy, const std::string& per_gpu, const std::string& group,
                     const char* research_mark) {
  char buf[512];
  std::snprintf(buf, sizeof buf, "  %1s %5d %5s %6s  %-15s %12.3f %11.2f %10.2f %5.0f%% %15s %17s  %s%s\n",
                best ? "*" : "", r.dcp, tp.c_str(), heads.c_str(), strategy.c_str(), r.decode_us / 1e3,
                r.step_us, r.merge_us, 100 * r.comm_share, thousands(per_gpu).c_str(),
                thousands(group).c_str(),
                !r.weights_fit ? "does not fit (weights)"
                : r.fits       ? "yes"
                               : "no (KV)",
                research_mark);
  return buf;
}

}  // namespace

std::string scan_summary(const std::string& csv, const ScanSummaryOptions& o) {
  std::istringstream in(csv);
  std::string line;
  if (!std::getline(in, line)) throw InputError("scan summary: the CSV is empty");
  const std::vector<std::string> header = split_csv_line(line);
  std::map<std::string, std::size_t> col;
  for (std::size_t i = 0; i < header.size(); ++i) col[header[i]] = i;
  const auto at = [&](const char* name) {
    const auto it = col.find(name);
    if (it == col.end()) throw InputError(std::string("scan summary: the CSV has no column ") + name);
    return it->second;
  };
  const std::size_t profile = at("profile"), model = at("model"), tp = at("tp"), dcp = at("dcp"),
                    heads = at("heads"), kv_heads = at("kv_heads"), head_dim = at("head_dim"),
                    qk = at("qk_dim"), batch = at("batch"), context = at("context"),
                    strategy = at("strategy"), launch = at("launch"), kv_dtype = at("kv_dtype"),
                    out_dtype = at("out_dtype"), interleave = at("interleave"), decode = at("decode_step_us"),
                    step = at("step_latency_us"), merge = at("merge_latency_us"), comm = at("comm_share"),
                    per_gpu = at("kv_capacity_tokens_per_gpu"), group_tokens = at("kv_capacity_tokens_group"),
                    fits = at("kv_fits");
  const auto weights_col = col.find("weights_fit");  // older CSVs: every layout fits
  std::vector<std::string> order;
  std::map<std::string, std::map<int, AtSize>> groups;  // group -> dcp -> its picks
  std::map<std::string, std::string> titles;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    Row r;
    r.f = split_csv_line(line);
    if (r.f.size() != header.size())
      throw InputError("scan summary: a row has " + std::to_string(r.f.size()) + " fields, the header " +
                       std::to_string(header.size()));
    try {
      r.decode_us = std::stod(r.f[decode]);
      r.step_us = std::stod(r.f[step]);
      r.merge_us = std::stod(r.f[merge]);
      r.comm_share = std::stod(r.f[comm]);
      r.dcp = std::stoi(r.f[dcp]);
    } catch (const std::exception&) {
      throw InputError("scan summary: a row holds a malformed number");
    }
    r.fits = r.f[fits] == "true";
    r.weights_fit = weights_col == col.end() || r.f[weights_col->second] == "true";
    r.production = is_production(models::parse_strategy(r.f[strategy]));
    std::string key = r.f[profile] + "|" + r.f[model] + "|" + r.f[head_dim] + "|" + r.f[qk] + "|" +
                      r.f[batch] + "|" + r.f[context] + "|" + r.f[launch] + "|" + r.f[kv_dtype] + "|" +
                      r.f[out_dtype] + "|" + r.f[interleave];
    std::string title = r.f[model] + " on " + r.f[profile] + ", batch " + r.f[batch] + ", context " +
                        r.f[context] + ", " + r.f[launch];
    if (o.by_heads) {
      key += "|" + r.f[heads] + "|" + r.f[kv_heads];
      title += ", " + r.f[heads] + " heads / " + r.f[kv_heads] + " KV heads";
    }
    if (o.by_tp) {
      key += "|" + r.f[tp];
      title += ", TP " + r.f[tp];
    }
    if (!groups.contains(key)) {
      order.push_back(key);
      titles[key] = title;
    }
    AtSize& a = groups[key][r.dcp];
    if (r.production || o.include_research) {
      if (!a.pick || r.decode_us < a.pick->decode_us) a.pick = r;
    } else if (!a.research || r.decode_us < a.research->decode_us) {
      a.research = std::move(r);
    }
  }
  std::string out;
  char buf[768];
  for (const std::string& key : order) {
    auto& by_dcp = groups[key];
    // The best size: the shortest decode step among the sizes whose weights and batch fit.
    const Row* best = nullptr;
    for (auto& [n, a] : by_dcp) {
      if (a.research && a.pick && a.research->decode_us >= a.pick->decode_us) a.research.reset();
      if (a.pick && a.pick->fits && a.pick->weights_fit &&
          (best == nullptr || a.pick->decode_us < best->decode_us))
        best = &*a.pick;
    }
    if (o.best_only) {
      if (best == nullptr) {
        out += titles[key] + ": none ranked: at no size scanned do the weights and the batch's KV fit" +
               (o.include_research ? "" : " (production strategies)") + "\n";
        continue;
      }
      std::snprintf(buf, sizeof buf,
                    "%s: best N=%d (TP %s) %s: decode step %.3f ms (attention layer %.2f us, merge %.2f us, "
                    "comm %.0f %%), "
                    "KV %s tokens per GPU, %s in the group",
                    titles[key].c_str(), best->dcp, best->f[tp].c_str(), best->f[strategy].c_str(),
                    best->decode_us / 1e3, best->step_us, best->merge_us, 100 * best->comm_share,
                    thousands(best->f[per_gpu]).c_str(), thousands(best->f[group_tokens]).c_str());
      out += buf;
      const AtSize& a = by_dcp[best->dcp];
      if (a.research) {
        std::snprintf(buf, sizeof buf, "; research: %s %.3f ms (--include-research ranks it)",
                      a.research->f[strategy].c_str(), a.research->decode_us / 1e3);
        out += buf;
      }
      out += "\n";
      continue;
    }
    out += titles[key] +
           (best == nullptr ? " (none ranked: the weights or the batch's KV fit at no size scanned)" : "") +
           "\n";
    std::snprintf(buf, sizeof buf, "  %1s %5s %5s %6s  %-15s %12s %11s %10s %6s %15s %17s  %s\n", "", "N",
                  "TP", "heads", "strategy", "decode ms", "layer us", "merge us", "comm", "KV tokens/GPU",
                  "KV tokens/group", "fits");
    out += buf;
    for (const auto& [n, a] : by_dcp) {
      for (const Row* r : {a.pick ? &*a.pick : nullptr, a.research ? &*a.research : nullptr}) {
        if (r == nullptr) continue;
        const bool research = !r->production;
        out += row_line(*r, r == best, r->f[tp], r->f[heads], r->f[strategy] + (research ? " (r)" : ""),
                        r->f[per_gpu], r->f[group_tokens], "");
      }
    }
  }
  bool any_research = false;
  for (const auto& [key, by_dcp] : groups)
    for (const auto& [n, a] : by_dcp)
      any_research = any_research || (a.research.has_value() && !o.best_only) ||
                     (a.pick && !a.pick->production && !o.best_only);
  if (any_research)
    out += "(r): a research strategy no serving engine ships, shown where it beats the pick; " +
           std::string(o.include_research ? "ranked (--include-research)"
                                          : "never ranked without --include-research") +
           "\n";
  return out;
}

}  // namespace dcpsim::analysis
