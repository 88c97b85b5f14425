// The scan's answer table (scan.h): the best strategy per DCP size and the best size per group, from the CSV.
#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

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
  bool fits = false;
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
  std::vector<std::string> order;
  std::map<std::string, std::map<int, Row>> groups;  // group -> dcp -> its best strategy
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
    auto& by_dcp = groups[key];
    const auto it = by_dcp.find(r.dcp);
    if (it == by_dcp.end() || r.decode_us < it->second.decode_us) by_dcp[r.dcp] = std::move(r);
  }
  std::string out;
  char buf[512];
  for (const std::string& key : order) {
    const auto& by_dcp = groups[key];
    const Row* best = nullptr;
    for (const auto& [n, r] : by_dcp) {
      if (r.fits && (best == nullptr || r.decode_us < best->decode_us)) best = &r;
    }
    const bool none_fits = best == nullptr;
    if (none_fits) {
      for (const auto& [n, r] : by_dcp) {
        if (best == nullptr || r.decode_us < best->decode_us) best = &r;
      }
    }
    if (o.best_only) {
      std::snprintf(
          buf, sizeof buf,
          "%s: best N=%d %s: decode step %.3f ms (attention layer %.2f us, merge %.2f us, comm %.0f %%), "
          "KV %s tokens per GPU, %s in the group%s\n",
          titles[key].c_str(), best->dcp, best->f[strategy].c_str(), best->decode_us / 1e3, best->step_us,
          best->merge_us, 100 * best->comm_share, thousands(best->f[per_gpu]).c_str(),
          thousands(best->f[group_tokens]).c_str(), none_fits ? " (the batch fits at no size scanned)" : "");
      out += buf;
      continue;
    }
    out += titles[key] + (none_fits ? " (the batch's KV fits at no size scanned)" : "") + "\n";
    std::snprintf(buf, sizeof buf, "  %1s %5s %5s %6s  %-11s %12s %11s %10s %6s %15s %17s  %s\n", "", "N",
                  "TP", "heads", "strategy", "decode ms", "layer us", "merge us", "comm", "KV tokens/GPU",
                  "KV tokens/group", "fits");
    out += buf;
    for (const auto& [n, r] : by_dcp) {
      std::snprintf(buf, sizeof buf, "  %1s %5d %5s %6s  %-11s %12.3f %11.2f %10.2f %5.0f%% %15s %17s  %s\n",
                    &r == best ? "*" : "", n, r.f[tp].c_str(), r.f[heads].c_str(), r.f[strategy].c_str(),
                    r.decode_us / 1e3, r.step_us, r.merge_us, 100 * r.comm_share,
                    thousands(r.f[per_gpu]).c_str(), thousands(r.f[group_tokens]).c_str(),
                    r.fits ? "yes" : "no");
      out += buf;
    }
  }
  return out;
}

}  // namespace dcpsim::analysis
