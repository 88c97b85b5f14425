// nccl-tests' JSON output (-J file.json) and CSV tables with nccl-tests' columns.
#include <algorithm>
#include <cctype>
#include <map>

#include <nlohmann/json.hpp>

#include "dcpsim/error.h"
#include "dcpsim/json_limits.h"
#include "nccl_tests_detail.h"

namespace dcpsim::models::detail {
namespace {

using Json = nlohmann::ordered_json;

// nccl-tests writes booleans and NaN as strings ("true", "nan") and numbers as numbers.
std::optional<double> json_number(const Json& j) {
  if (j.is_number()) return j.get<double>();
  if (j.is_string()) return number_of(j.get<std::string>());
  return std::nullopt;
}

bool json_true(const Json& j) {
  if (j.is_boolean()) return j.get<bool>();
  if (j.is_string()) return j.get<std::string>() == "true";
  const std::optional<double> v = json_number(j);
  return v && *v != 0;
}

std::string json_text(const Json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : "";
}

// The time of one placement of a result ({"time"|"cpu_time": µs, ...} or null).
std::optional<double> placement_time(const Json& result, const char* key, const std::string& where,
                                     bool& cputime) {
  auto it = result.find(key);
  if (it == result.end() || it->is_null()) return std::nullopt;
  if (!it->is_object()) throw InputError(where + "." + key + ": expected an object, got " + it->dump());
  auto t = it->find("time");
  if (t == it->end()) {
    t = it->find("cpu_time");
    cputime = t != it->end();
  }
  if (t == it->end()) throw InputError(where + "." + key + ": no time");
  const std::optional<double> v = json_number(*t);
  if (!v || !(*v > 0))
    throw InputError(where + "." + key + ".time: expected a positive number, got " + t->dump());
  return v;
}

std::vector<std::string> split_csv(std::string_view line) {
  std::vector<std::string> out(1);
  for (char c : line) {
    if (c == ',') {
      out.emplace_back();
    } else if (c != '\r') {
      out.back() += c;
    }
  }
  for (std::string& f : out) {
    f.erase(0, f.find_first_not_of(" \t"));
    f.erase(f.find_last_not_of(" \t") + 1);
  }
  return out;
}

}  // namespace

void parse_nccl_tests_json(std::string_view text, const std::string& name, const NcclTestsOptions& options,
                           NcclTestsImport& into) {
  const Json root = parse_json_checked<Json>(text, name);
  if (!root.is_object() || !root.contains("results") || !root["results"].is_array()) {
    throw InputError(name + ": not nccl-tests JSON output (-J): no \"results\" list");
  }
  NcclRun run;
  run.file = name;
  if (root.contains("args") && root["args"].is_array() && !root["args"].empty() &&
      root["args"][0].is_string()) {
    run.op = collective_in_name(root["args"][0].get<std::string>());
  }
  if (auto v = root.find("nccl_version"); v != root.end() && v->is_number_integer())
    run.nccl = nccl_version_text(v->get<long>());
  if (auto c = root.find("config"); c != root.end() && c->is_object()) {
    const auto count = [&](const char* key) {
      const std::optional<double> v = c->contains(key) ? json_number((*c)[key]) : std::nullopt;
      return v && *v >= 0 && *v < 1e6 ? static_cast<int>(*v) : 0;
    };
    run.nthreads = count("nthreads");
    run.ngpus = count("ngpus");
    run.graph = c->contains("graph") && json_true((*c)["graph"]);
  }
  if (auto env = root.find("env"); env != root.end() && env->is_array()) {
    for (const Json& e : *env) {
      const std::string s = e.is_string() ? e.get<std::string>() : "";
      if (s.starts_with("NCCL_ALGO=")) run.algorithm = s.substr(10);
      if (s.starts_with("NCCL_PROTO=")) run.protocol = s.substr(11);
    }
  }
  if (auto devices = root.find("devices");
      devices != root.end() && !devices->is_array() && !devices->is_null())
    throw InputError(name + ": devices: expected a list, got " + devices->dump());
  if (auto devices = root.find("devices"); devices != root.end() && devices->is_array()) {
    for (std::size_t i = 0; i < devices->size(); ++i) {
      const Json& d = (*devices)[i];
      const std::optional<double> rank =
          d.is_object() && d.contains("rank") ? json_number(d["rank"]) : std::nullopt;
      if (!rank || *rank < 0 || *rank > 1e6) {
        throw InputError(name + ": devices[" + std::to_string(i) + "].rank: expected a rank number");
      }
      run.ranks[static_cast<int>(*rank)] = {json_text(d, "hostname"), json_text(d, "device_info")};
    }
  }
  const Json& results = root["results"];
  for (std::size_t i = 0; i < results.size(); ++i) {
    const std::string where = name + ": results[" + std::to_string(i) + "]";
    const Json& r = results[i];
    if (!r.is_object()) throw InputError(where + ": expected an object, got " + r.dump());
    NcclRow row;
    const std::optional<double> size = r.contains("size") ? json_number(r["size"]) : std::nullopt;
    if (!size || *size < 0) throw InputError(where + ".size: expected a size in bytes");
    row.size = *size;
    row.dtype = json_text(r, "type");
    row.redop = json_text(r, "redop");
    row.out_of_place_us = placement_time(r, "out_of_place", where, run.cputime);
    row.in_place_us = placement_time(r, "in_place", where, run.cputime);
    if (!row.out_of_place_us && !row.in_place_us)
      throw InputError(where + ": no out_of_place or in_place time");
    run.rows.push_back(row);
  }
  if (run.rows.empty()) throw InputError(name + ": results: empty (the run stopped before its first size)");
  add_run(run, options, into);
}

void parse_nccl_tests_csv(std::string_view text, const std::string& name, const NcclTestsOptions& options,
                          NcclTestsImport& into) {
  std::vector<std::string> header;
  std::map<std::string, std::size_t> col;
  // Rows grouped into runs by everything that is not the size and time.
  std::map<std::vector<std::string>, NcclRun> runs;
  int line_no = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (line_no == 1 && line.starts_with("# source:")) {
      into.source_comment = std::string(line.substr(2, std::min<std::size_t>(line.size() - 2, 400)));
      while (!into.source_comment.empty() && into.source_comment.back() == '\r')
        into.source_comment.pop_back();
    }
    if (line.empty() || line.starts_with("#") || line == "\r") continue;
    const std::vector<std::string> f = split_csv(line);
    const std::string at = name + ":" + std::to_string(line_no);
    if (header.empty()) {
      header = f;
      for (std::size_t i = 0; i < f.size(); ++i) col[f[i]] = i;
      for (const char* need : {"op", "gpus", "size_bytes", "time_us"}) {
        if (!col.count(need)) throw InputError(at + ": CSV header has no '" + std::string(need) + "' column");
      }
      for (const auto& [column, values] : options.where) {
        if (!col.count(column)) throw InputError(at + ": --where " + column + ": no such column");
      }
      continue;
    }
    if (f.size() != header.size()) {
      throw InputError(at + ": " + std::to_string(f.size()) + " fields where the header has " +
                       std::to_string(header.size()) + " (truncated or malformed row)");
    }
    const auto get = [&](const char* key) { return col.count(key) ? f[col[key]] : std::string(); };
    bool keep = true;
    for (const auto& [column, values] : options.where)
      keep = keep && std::find(values.begin(), values.end(), f[col[column]]) != values.end();
    if (!keep) continue;
    const auto num = [&](const char* key) {
      const std::optional<double> v = number_of(get(key));
      if (!v) throw InputError(at + ": " + key + " '" + get(key) + "' is not a number");
      return *v;
    };
    const double gpus = num("gpus");
    if (gpus < 1 || gpus > 1e6 || gpus != static_cast<int>(gpus))
      throw InputError(at + ": gpus must be a count");
    const double nodes = col.count("nodes") ? num("nodes") : 1;
    if (nodes < 1 || nodes > gpus || nodes != static_cast<int>(nodes))
      throw InputError(at + ": nodes must be in [1, gpus]");
    std::string device = get("device_string");
    if (device.empty() || device == "unrecorded") device = get("gpu");
    std::string nccl = get("nccl");
    if (nccl == "unrecorded") nccl.clear();
    const std::string algo = get("algo") == "auto" ? "" : get("algo");
    const std::string proto = get("proto") == "auto" ? "" : get("proto");
    const std::vector<std::string> key = {get("op"), get("gpus"), get("nodes"), get("dtype"), get("graph"),
                                          device,    nccl,        algo,         proto};
    NcclRun& run = runs[key];
    if (run.file.empty()) {
      run.file = name;
      run.line = line_no;
      run.op = parse_collective(get("op"));
      run.graph = get("graph") == "1" || get("graph") == "true";
      run.nccl = nccl;
      run.algorithm = algo;
      run.protocol = proto;
      for (int r = 0; r < static_cast<int>(gpus); ++r) {
        run.ranks[r] = {"node" + std::to_string(r * static_cast<int>(nodes) / static_cast<int>(gpus)),
                        device};
      }
    }
    NcclRow row;
    row.line = line_no;
    row.size = num("size_bytes");
    row.dtype = get("dtype");
    const bool in_place = get("inplace") == "1" || get("inplace") == "true";
    (in_place ? row.in_place_us : row.out_of_place_us) = num("time_us");
    run.rows.push_back(row);
  }
  if (header.empty()) throw InputError(name + ": empty CSV (no header)");
  for (auto& [key, run] : runs) add_run(run, options, into);
  if (runs.empty()) throw InputError(name + ": no CSV row matches --where");
}

}  // namespace dcpsim::models::detail
