// JSON I/O for `dcpsim merge`. Every shape problem is reported with the JSON path of the offending element.
#include "dcpsim/analysis/merge_io.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "dcpsim/error.h"
#include "dcpsim/json_limits.h"
#include "dcpsim/traces/output_file.h"
#include "dcpsim/version.h"

namespace dcpsim::analysis {
namespace {

using nlohmann::json;

// The array at `where`, with `expected` elements unless expected < 0 (then at least one).
const json& array_at(const json& v, const std::string& where, long long expected) {
  if (!v.is_array()) throw InputError(where + " is " + std::string(v.type_name()) + ", expected an array");
  if (expected < 0 && v.empty()) throw InputError(where + " is empty, expected at least one element");
  if (expected >= 0 && static_cast<long long>(v.size()) != expected) {
    throw InputError(where + " has " + std::to_string(v.size()) + " elements, expected " +
                     std::to_string(expected) + " (arrays must not be ragged)");
  }
  return v;
}

std::string at(const std::string& where, std::size_t i) {
  return where + "[" + std::to_string(i) + "]";
}

const json& member(const json& doc, const char* key) {
  if (!doc.is_object())
    throw InputError("the partials document is " + std::string(doc.type_name()) +
                     ", expected an object with \"lse\" and \"out\"");
  auto it = doc.find(key);
  if (it == doc.end()) throw InputError(std::string("the partials document has no \"") + key + "\" array");
  return *it;
}

json tensor3(const std::vector<double>& v, int rows, int heads, int dim) {
  json out = json::array();
  for (int b = 0; b < rows; ++b) {
    json row = json::array();
    for (int h = 0; h < heads; ++h) {
      json head = json::array();
      for (int d = 0; d < dim; ++d)
        head.push_back(double_to_json(v[(static_cast<std::size_t>(b) * heads + h) * dim + d]));
      row.push_back(std::move(head));
    }
    out.push_back(std::move(row));
  }
  return out;
}

json tensor2(const std::vector<double>& v, int rows, int heads) {
  json out = json::array();
  for (int b = 0; b < rows; ++b) {
    json row = json::array();
    for (int h = 0; h < heads; ++h) row.push_back(double_to_json(v[static_cast<std::size_t>(b) * heads + h]));
    out.push_back(std::move(row));
  }
  return out;
}

}  // namespace

double json_to_double(const json& value, const std::string& where) {
  if (value.is_number()) return value.get<double>();
  if (value.is_string()) {
    const std::string& s = value.get_ref<const std::string&>();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (s == "inf" || s == "+inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
    throw InputError(where + " is the string \"" + s +
                     "\"; only numbers and \"nan\", \"inf\", \"-inf\" are allowed");
  }
  throw InputError(where + " is " + std::string(value.type_name()) +
                   "; only numbers and \"nan\", \"inf\", \"-inf\" are allowed");
}

json double_to_json(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return value;
}

std::vector<models::Partial> partials_from_json(const json& doc) {
  const json& lse = array_at(member(doc, "lse"), "lse", -1);
  const json& out = array_at(member(doc, "out"), "out", -1);
  if (lse.size() != out.size()) {
    throw InputError("\"lse\" has " + std::to_string(lse.size()) + " ranks but \"out\" has " +
                     std::to_string(out.size()) + " (both are indexed by rank first)");
  }
  const long long rows = static_cast<long long>(array_at(out[0], "out[0]", -1).size());
  const long long heads = static_cast<long long>(array_at(out[0][0], "out[0][0]", -1).size());
  const long long dim = static_cast<long long>(array_at(out[0][0][0], "out[0][0][0]", -1).size());
  std::vector<models::Partial> partials;
  for (std::size_t r = 0; r < out.size(); ++r) {
    const int b_rows = static_cast<int>(rows), b_heads = static_cast<int>(heads),
              b_dim = static_cast<int>(dim);
    models::Partial p{
        models::OutLayout::dense(b_rows, b_heads, b_dim), {}, models::LseLayout::dense(b_rows, b_heads), {}};
    p.out.reserve(static_cast<std::size_t>(rows * heads * dim));
    p.lse.reserve(static_cast<std::size_t>(rows * heads));
    const json& o_r = array_at(out[r], at("out", r), rows);
    const json& l_r = array_at(lse[r], at("lse", r), rows);
    for (std::size_t b = 0; b < o_r.size(); ++b) {
      const json& o_b = array_at(o_r[b], at(at("out", r), b), heads);
      const json& l_b = array_at(l_r[b], at(at("lse", r), b), heads);
      for (std::size_t h = 0; h < o_b.size(); ++h) {
        const std::string where = at(at(at("out", r), b), h);
        const json& o_h = array_at(o_b[h], where, dim);
        for (std::size_t d = 0; d < o_h.size(); ++d) p.out.push_back(json_to_double(o_h[d], at(where, d)));
        p.lse.push_back(json_to_double(l_b[h], at(at(at("lse", r), b), h)));
      }
    }
    partials.push_back(std::move(p));
  }
  return partials;
}

std::vector<models::Partial> read_partials(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError("cannot open partials file '" + path + "'");
  const json doc = parse_json_checked(in, path);
  try {
    return partials_from_json(doc);
  } catch (const InputError& e) {
    throw InputError(path + ": " + e.what());
  }
}

json merge_result_to_json(const models::MergeResult& m, const models::MergeOptions& o) {
  json doc;
  doc["dcpsim_version"] = std::string(kVersion) + " (" + kGitSha + ")";
  doc["strategy"] = std::string(models::to_string(o.strategy));
  doc["base"] = std::string(models::to_string(o.base));
  doc["dtype"] = std::string(models::to_string(o.out_dtype));
  doc["accumulate"] = std::string(models::to_string(o.accumulate));
  doc["shape"] = {{"ranks", m.ranks.size()}, {"rows", m.rows}, {"heads", m.heads}, {"dim", m.dim}};
  doc["lse"] = tensor2(m.lse, m.rows, m.heads);
  doc["out"] = tensor3(m.out, m.rows, m.heads, m.dim);
  if (models::scatters_heads(o.strategy)) {
    json ranks = json::array();
    for (const models::RankOutput& r : m.ranks) {
      const int kept = r.kept();
      json entry = {{"rank", r.rank}, {"heads", {r.head_begin, r.head_end}}};
      if (r.head_stride != 1) entry["head_stride"] = r.head_stride;
      if (!r.lse.empty()) entry["lse"] = tensor2(r.lse, m.rows, kept);
      entry["out"] = tensor3(r.out, m.rows, kept, m.dim);
      ranks.push_back(std::move(entry));
    }
    doc["ranks"] = std::move(ranks);
  }
  return doc;
}

void write_json_file(const std::string& path, const json& doc) {
  traces::write_file_atomically(path, doc.dump(1) + "\n");
}

}  // namespace dcpsim::analysis
