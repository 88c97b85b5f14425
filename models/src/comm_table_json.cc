// Communication tables as JSON ("dcpsim-comm-tables/1"): reading with one-line errors naming the file and
// the JSON path, canonical writing (one point per line), and a human-readable listing.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "comm_table_json.h"
#include "dcpsim/error.h"
#include "dcpsim/json_limits.h"
#include "dcpsim/models/comm_table.h"
#include "dcpsim/text_file.h"

namespace dcpsim::models {
namespace {

using Json = nlohmann::ordered_json;

class Reader {
 public:
  explicit Reader(std::string where) : where_(std::move(where)) {}
  [[noreturn]] void fail(const std::string& path, const std::string& what) const {
    throw InputError(where_ + ": " + path + ": " + what);
  }
  void object(const Json& j, const std::string& path) const {
    if (!j.is_object()) fail(path, "expected an object, got " + shown(j));
  }
  void only(const Json& obj, const std::string& path, std::initializer_list<std::string_view> allowed) const {
    for (auto it = obj.begin(); it != obj.end(); ++it) {
      if (std::find(allowed.begin(), allowed.end(), it.key()) != allowed.end()) continue;
      std::string list;
      for (std::string_view a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
      fail(join(path, it.key()), "unknown field (allowed: " + list + ")");
    }
  }
  const Json& member(const Json& obj, const std::string& path, const std::string& key) const {
    auto it = obj.find(key);
    if (it == obj.end()) fail(join(path, key), "missing required field");
    return *it;
  }
  std::string text(const Json& obj, const std::string& path, const std::string& key, bool optional) const {
    if (optional && obj.find(key) == obj.end()) return "";
    const Json& j = member(obj, path, key);
    if (!j.is_string()) fail(join(path, key), "expected a string, got " + shown(j));
    return j.get<std::string>();
  }
  bool flag(const Json& obj, const std::string& path, const std::string& key) const {
    if (obj.find(key) == obj.end()) return false;
    const Json& j = obj.at(key);
    if (!j.is_boolean()) fail(join(path, key), "expected true or false, got " + shown(j));
    return j.get<bool>();
  }
  double positive(const Json& obj, const std::string& path, const std::string& key) const {
    const Json& j = member(obj, path, key);
    if (!j.is_number() || !std::isfinite(j.get<double>()) || !(j.get<double>() > 0))
      fail(join(path, key), "expected a positive number, got " + shown(j));
    return j.get<double>();
  }
  int count(const Json& obj, const std::string& path, const std::string& key, int fallback) const {
    if (obj.find(key) == obj.end() && fallback > 0) return fallback;
    const double v = positive(obj, path, key);
    if (v != std::floor(v) || v > 1e7)
      fail(join(path, key), "expected a positive integer, got " + shown(obj.at(key)));
    return static_cast<int>(v);
  }
  static std::string join(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
  }
  static std::string shown(const Json& j) { return j.is_null() ? "null (NaN?)" : j.dump(); }

 private:
  std::string where_;
};

CommPoint read_point(const Reader& r, const Json& j, const std::string& path) {
  r.object(j, path);
  r.only(j, path, {"gpus", "nodes", "size_bytes", "time_us", "min_us", "max_us", "samples"});
  CommPoint p;
  p.gpus = r.count(j, path, "gpus", 0);
  p.nodes = r.count(j, path, "nodes", 1);
  p.size_bytes = r.positive(j, path, "size_bytes");
  p.time_us = r.positive(j, path, "time_us");
  p.min_us = j.contains("min_us") ? r.positive(j, path, "min_us") : p.time_us;
  p.max_us = j.contains("max_us") ? r.positive(j, path, "max_us") : p.time_us;
  p.samples = r.count(j, path, "samples", 1);
  if (p.nodes > p.gpus) r.fail(path + ".nodes", "more nodes than gpus");
  if (!(p.min_us <= p.time_us && p.time_us <= p.max_us))
    r.fail(path, "expected min_us <= time_us <= max_us, got " + j.dump());
  return p;
}

CommTable read_table(const Reader& r, const Json& j, const std::string& path) {
  r.object(j, path);
  r.only(j, path, {"op", "dtype", "in_place", "graph", "algorithm", "protocol", "implementation", "points"});
  CommTable t;
  try {
    t.op = parse_collective(r.text(j, path, "op", false));
  } catch (const InputError& e) {
    r.fail(path + ".op", e.what());
  }
  t.dtype = normalise_dtype(r.text(j, path, "dtype", true));
  t.in_place = r.flag(j, path, "in_place");
  t.graph = r.flag(j, path, "graph");
  t.algorithm = r.text(j, path, "algorithm", true);
  t.protocol = r.text(j, path, "protocol", true);
  t.implementation = r.text(j, path, "implementation", true);
  const Json& pts = r.member(j, path, "points");
  if (!pts.is_array() || pts.empty()) r.fail(path + ".points", "expected a non-empty array of points");
  for (std::size_t i = 0; i < pts.size(); ++i)
    t.points.push_back(read_point(r, pts[i], path + ".points[" + std::to_string(i) + "]"));
  return t;
}

std::string read_text(const std::filesystem::path& path) {
  return read_text_file(path, "communication table file");
}

std::string size_text(double bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4 && std::fmod(bytes, 1024) == 0) {
    bytes /= 1024;
    ++u;
  }
  std::ostringstream out;
  out << bytes << " " << units[u];
  return out.str();
}

}  // namespace

CommTables detail::parse_comm_tables_json(const Json& root, const std::string& where) {
  const Reader r(where);
  r.object(root, "(top level)");
  r.only(root, "", {"format", "provenance", "tables"});
  const Json& format = r.member(root, "", "format");
  if (format != Json(std::string(kCommTablesFormat)))
    r.fail("format", "expected \"" + std::string(kCommTablesFormat) + "\", got " + format.dump());
  CommTables out;
  const Json& prov = r.member(root, "", "provenance");
  r.object(prov, "provenance");
  r.only(prov, "provenance", {"device", "nccl", "system", "source", "date", "command"});
  out.provenance.device = r.text(prov, "provenance", "device", false);
  if (out.provenance.device.empty()) r.fail("provenance.device", "expected a non-empty string");
  out.provenance.nccl = r.text(prov, "provenance", "nccl", true);
  out.provenance.system = r.text(prov, "provenance", "system", true);
  out.provenance.source = r.text(prov, "provenance", "source", false);
  out.provenance.date = r.text(prov, "provenance", "date", true);
  out.provenance.command = r.text(prov, "provenance", "command", true);
  const Json& tables = r.member(root, "", "tables");
  if (!tables.is_array() || tables.empty()) r.fail("tables", "expected a non-empty array of tables");
  for (std::size_t i = 0; i < tables.size(); ++i) {
    const std::string path = "tables[" + std::to_string(i) + "]";
    CommTable t = read_table(r, tables[i], path);
    for (const CommTable& other : out.tables) {
      if (other.op == t.op && other.dtype == t.dtype && other.in_place == t.in_place &&
          other.graph == t.graph && other.algorithm == t.algorithm && other.protocol == t.protocol &&
          other.implementation == t.implementation)
        r.fail(
            path,
            "duplicate table (the same op, dtype, placement, launch, algorithm, protocol and implementation "
            "as another)");
    }
    finalize_comm_table(t, where + ": " + path);
    out.tables.push_back(std::move(t));
  }
  return out;
}

CommTables parse_comm_tables(std::string_view json_text, std::string_view where) {
  const std::string w(where);
  return detail::parse_comm_tables_json(parse_json_checked<Json>(json_text, w), w);
}

CommTables load_comm_tables(const std::filesystem::path& path) {
  const std::filesystem::path file = existing_or_gz(path);  // X.json may be stored as X.json.gz
  return parse_comm_tables(read_text(file), file.string());
}

std::string comm_tables_json(const CommTables& t) {
  const CommProvenance& p = t.provenance;
  Json prov = {{"device", p.device}, {"nccl", p.nccl}, {"system", p.system},
               {"source", p.source}, {"date", p.date}, {"command", p.command}};
  std::string out = "{\n  \"format\": " + Json(std::string(kCommTablesFormat)).dump() +
                    ",\n  \"provenance\": " + prov.dump() + ",\n  \"tables\": [";
  for (std::size_t i = 0; i < t.tables.size(); ++i) {
    const CommTable& k = t.tables[i];
    Json head = {{"op", std::string(to_string(k.op))},
                 {"dtype", k.dtype},
                 {"in_place", k.in_place},
                 {"graph", k.graph}};
    if (!k.algorithm.empty()) head["algorithm"] = k.algorithm;
    if (!k.protocol.empty()) head["protocol"] = k.protocol;
    if (!k.implementation.empty()) head["implementation"] = k.implementation;
    std::string text = head.dump();
    text.pop_back();  // reopen the object for its points
    out += std::string(i ? "," : "") + "\n    " + text + ", \"points\": [";
    for (std::size_t j = 0; j < k.points.size(); ++j) {
      const CommPoint& pt = k.points[j];
      Json jp = {{"gpus", pt.gpus},       {"nodes", pt.nodes},   {"size_bytes", pt.size_bytes},
                 {"time_us", pt.time_us}, {"min_us", pt.min_us}, {"max_us", pt.max_us},
                 {"samples", pt.samples}};
      out += std::string(j ? "," : "") + "\n      " + jp.dump();
    }
    out += "\n    ]}";
  }
  return out + "\n  ]\n}\n";
}

Json detail::comm_tables_to_json(const CommTables& t) {
  return Json::parse(comm_tables_json(t));
}

std::string describe_comm_tables(const CommTables& t) {
  const CommProvenance& p = t.provenance;
  std::ostringstream out;
  out << "device " << p.device << (p.nccl.empty() ? "" : ", NCCL " + p.nccl)
      << (p.system.empty() ? "" : ", " + p.system) << "\n";
  if (!p.source.empty()) out << "source " << p.source << "\n";
  if (!p.date.empty() || !p.command.empty())
    out << "made " << p.date << (p.command.empty() ? "" : ": " + p.command) << "\n";
  for (const CommTable& k : t.tables) {
    std::map<std::pair<int, int>, std::pair<double, double>> groups;  // (nodes, gpus) -> size range
    for (const CommPoint& pt : k.points) {
      auto [it, fresh] = groups.try_emplace({pt.nodes, pt.gpus}, pt.size_bytes, pt.size_bytes);
      if (!fresh)
        it->second = {std::min(it->second.first, pt.size_bytes), std::max(it->second.second, pt.size_bytes)};
    }
    out << "  " << to_string(k.op) << " " << k.dtype << (k.in_place ? " in-place" : " out-of-place")
        << (k.graph ? " graph" : "") << (k.algorithm.empty() ? "" : " algo " + k.algorithm)
        << (k.protocol.empty() ? "" : " proto " + k.protocol)
        << (k.implementation.empty() ? "" : " " + k.implementation) << ": " << k.points.size() << " points";
    for (const auto& [g, range] : groups) {
      out << "; " << g.second << " gpus" << (g.first > 1 ? " on " + std::to_string(g.first) + " nodes" : "")
          << " " << size_text(range.first) << " - " << size_text(range.second);
    }
    out << "\n";
  }
  return out.str();
}

}  // namespace dcpsim::models
