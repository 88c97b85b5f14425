// Kernel tables: reading, checking, writing and interpolated lookup.
#include "dcpsim/models/kernel_table.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "dcpsim/error.h"
#include "dcpsim/json_limits.h"
#include "dcpsim/text_file.h"
#include "kernel_table_json.h"
#include "kernel_table_points.h"

namespace dcpsim::models {
namespace {

using Json = nlohmann::ordered_json;

struct KernelName {
  TableKernel kernel;
  std::string_view name;
};
constexpr KernelName kKernelNames[] = {
    {TableKernel::kAttention, "attention"},
    {TableKernel::kCorrection, "correction"},
    {TableKernel::kA2aPack, "a2a_pack"},
    {TableKernel::kA2aCombine, "a2a_combine"},
    {TableKernel::kDirectWrite, "direct_write"},
    {TableKernel::kDirectCombine, "direct_combine"},
    {TableKernel::kCollective, "collective"},
    {TableKernel::kGemm, "gemm"},
    {TableKernel::kMoe, "moe"},
};

std::string number_text(double v) {
  if (std::isnan(v)) return "NaN";
  return Json(v).dump();
}

// Walks a JSON document keeping the path for messages ("tables[2].points[0].at").
class Cursor {
 public:
  Cursor(std::string where) : where_(std::move(where)) {}
  [[noreturn]] void fail(const std::string& path, const std::string& what) const {
    throw InputError(where_ + ": " + path + ": " + what);
  }
  const Json& member(const Json& obj, const std::string& path, const std::string& key) const {
    auto it = obj.find(key);
    if (it == obj.end()) fail(path.empty() ? key : path + "." + key, "missing required field");
    return *it;
  }
  void only(const Json& obj, const std::string& path, std::initializer_list<std::string_view> allowed) const {
    for (auto it = obj.begin(); it != obj.end(); ++it) {
      if (std::find(allowed.begin(), allowed.end(), it.key()) != allowed.end()) continue;
      std::string list;
      for (std::string_view a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
      fail(path.empty() ? it.key() : path + "." + it.key(), "unknown field (allowed: " + list + ")");
    }
  }
  std::string text(const Json& obj, const std::string& path, const std::string& key, bool nonempty) const {
    const Json& j = member(obj, path, key);
    const std::string p = path.empty() ? key : path + "." + key;
    if (!j.is_string()) fail(p, "expected a string, got " + j.dump());
    if (nonempty && j.get<std::string>().empty()) fail(p, "expected a non-empty string");
    return j.get<std::string>();
  }
  double positive(const Json& j, const std::string& path) const {
    // nlohmann writes NaN as null; a string "NaN" is the other spelling a producer might use.
    if (!j.is_number()) fail(path, "expected a positive number, got " + (j.is_null() ? "NaN" : j.dump()));
    const double v = j.get<double>();
    if (!std::isfinite(v) || !(v > 0)) fail(path, "expected a positive number, got " + number_text(v));
    return v;
  }

 private:
  std::string where_;
};

TableProvenance read_provenance(const Cursor& c, const Json& j) {
  if (!j.is_object()) c.fail("provenance", "expected an object, got " + j.dump());
  c.only(j, "provenance",
         {"device", "driver", "cuda", "nccl", "clocks", "date", "command", "source", "license"});
  TableProvenance p;
  p.device = c.text(j, "provenance", "device", true);
  p.driver = c.text(j, "provenance", "driver", false);
  p.cuda = c.text(j, "provenance", "cuda", false);
  p.nccl = c.text(j, "provenance", "nccl", false);
  p.clocks = c.text(j, "provenance", "clocks", false);
  p.date = c.text(j, "provenance", "date", true);
  p.command = c.text(j, "provenance", "command", true);
  if (j.contains("source")) p.source = c.text(j, "provenance", "source", true);
  if (j.contains("license")) p.license = c.text(j, "provenance", "license", true);
  return p;
}

TablePoint read_point(const Cursor& c, const Json& j, const std::string& path, std::size_t axes) {
  if (!j.is_object()) c.fail(path, "expected an object, got " + j.dump());
  c.only(j, path, {"at", "median_ns", "samples", "min_ns", "max_ns"});
  TablePoint pt;
  const Json& at = c.member(j, path, "at");
  if (!at.is_array() || at.size() != axes) {
    c.fail(path + ".at", "expected an array of " + std::to_string(axes) + " coordinates, got " + at.dump());
  }
  for (std::size_t i = 0; i < axes; ++i)
    pt.at.push_back(c.positive(at[i], path + ".at[" + std::to_string(i) + "]"));
  pt.median_ns = c.positive(c.member(j, path, "median_ns"), path + ".median_ns");
  pt.min_ns = c.positive(c.member(j, path, "min_ns"), path + ".min_ns");
  pt.max_ns = c.positive(c.member(j, path, "max_ns"), path + ".max_ns");
  const Json& samples = c.member(j, path, "samples");
  if (!samples.is_number_integer() || samples.get<int64_t>() < 1 ||
      samples.get<int64_t>() > std::numeric_limits<int>::max())
    c.fail(path + ".samples", "expected a positive integer up to " +
                                  std::to_string(std::numeric_limits<int>::max()) + ", got " +
                                  samples.dump());
  pt.samples = static_cast<int>(samples.get<int64_t>());
  if (!(pt.min_ns <= pt.median_ns && pt.median_ns <= pt.max_ns)) {
    c.fail(path, "expected min_ns <= median_ns <= max_ns, got " + number_text(pt.min_ns) + ", " +
                     number_text(pt.median_ns) + ", " + number_text(pt.max_ns));
  }
  return pt;
}

// Thrown where the fast read's points (kernel_table_points.h) fail a check read_point makes: the file is then
// read the ordinary way, whose message names the point and the field.
struct ReadPointsTheOrdinaryWay {};

// read_point's checks on a point the fast read took from the file.
void check_fast_point(const TablePoint& p, std::size_t axes) {
  const auto positive = [](double v) { return std::isfinite(v) && v > 0; };
  bool ok = p.at.size() == axes && positive(p.median_ns) && positive(p.min_ns) && positive(p.max_ns) &&
            p.samples >= 1 && p.min_ns <= p.median_ns && p.median_ns <= p.max_ns;
  for (double x : p.at) ok = ok && positive(x);
  if (!ok) throw ReadPointsTheOrdinaryWay{};
}

// `fast_points`: the table's points as the fast read took them (its "points" in `j` is then empty), or null.
KernelTable read_table(const Cursor& c, const Json& j, const std::string& path, const std::string& where,
                       std::vector<TablePoint>* fast_points) {
  if (!j.is_object()) c.fail(path, "expected an object, got " + j.dump());
  c.only(j, path, {"kernel", "key", "axes", "points", "model", "interpolation"});
  KernelTable t;
  const std::string kernel = c.text(j, path, "kernel", true);
  try {
    t.kernel = parse_table_kernel(kernel);
  } catch (const InputError& e) {
    c.fail(path + ".kernel", e.what());
  }
  t.key = c.text(j, path, "key", true);
  const Json& axes = c.member(j, path, "axes");
  const std::vector<std::string>& expected = table_axes(t.kernel);
  const bool total_heads =
      heads_per_rank_axis(t.kernel) && axes == Json(table_axes(TableKernel::kCorrection));
  if (axes != Json(expected) && !total_heads) {
    c.fail(path + ".axes", "expected " + Json(expected).dump() + " for " + kernel + ", got " + axes.dump());
  }
  const Json& points = c.member(j, path, "points");
  if (fast_points != nullptr) {
    // The fast read left an empty array in the document; anything else there is a later "points" member
    // (JSON keeps the last), which the ordinary reader judges.
    if (fast_points->empty() || !points.is_array() || !points.empty()) throw ReadPointsTheOrdinaryWay{};
    for (const TablePoint& p : *fast_points) check_fast_point(p, expected.size());
    t.points = std::move(*fast_points);
  } else {
    if (!points.is_array() || points.empty())
      c.fail(path + ".points", "expected a non-empty array of points, got " + points.dump().substr(0, 80));
    for (std::size_t i = 0; i < points.size(); ++i)
      t.points.push_back(
          read_point(c, points[i], path + ".points[" + std::to_string(i) + "]", expected.size()));
  }
  if (total_heads) {
    for (TablePoint& p : t.points) p.at[2] /= p.at[0];  // H -> H / N
  }
  if (const auto m = j.find("model"); m != j.end()) {
    const std::string mp = path + ".model";
    if (!m->is_object()) c.fail(mp, "expected an object, got " + m->dump());
    c.only(*m, mp, {"form", "floor_ns", "bandwidth_GBps", "points", "max_relative_residual"});
    const std::string form = c.text(*m, mp, "form", true);
    if (form != "floor + bytes / bandwidth") c.fail(mp + ".form", "expected \"floor + bytes / bandwidth\"");
    TableModel model;
    const Json& floor = c.member(*m, mp, "floor_ns");
    if (!floor.is_number() || !(floor.get<double>() >= 0) || !std::isfinite(floor.get<double>()))
      c.fail(mp + ".floor_ns", "expected a number >= 0, got " + floor.dump());
    model.floor_ns = floor.get<double>();
    model.bandwidth = c.positive(c.member(*m, mp, "bandwidth_GBps"), mp + ".bandwidth_GBps") * 1e9;
    const Json& n = c.member(*m, mp, "points");
    if (!n.is_number_integer() || n.get<int64_t>() < 2) c.fail(mp + ".points", "expected an integer >= 2");
    model.points = static_cast<int>(n.get<int64_t>());
    const Json& r = c.member(*m, mp, "max_relative_residual");
    if (!r.is_number() || !(r.get<double>() >= 0))
      c.fail(mp + ".max_relative_residual", "expected a number >= 0");
    model.max_relative_residual = r.get<double>();
    t.model = model;
  }
  if (const auto m = j.find("interpolation"); m != j.end()) {
    const std::string mp = path + ".interpolation";
    if (!m->is_object()) c.fail(mp, "expected an object, got " + m->dump().substr(0, 80));
    c.only(*m, mp, {"method", "chosen_by"});
    if (t.kernel != TableKernel::kAttention && !is_merge_kernel(t.kernel))
      c.fail(mp, "only attention and merge-kernel tables have an interpolation method");
    const std::string method = c.text(*m, mp, "method", true);
    const auto allowed = interpolation_methods(t.kernel);
    const auto it = std::find_if(allowed.begin(), allowed.end(),
                                 [&](TableInterpolation x) { return to_string(x) == method; });
    if (it == allowed.end()) {
      std::string known;
      for (TableInterpolation x : allowed) known += (known.empty() ? "" : ", ") + std::string(to_string(x));
      c.fail(mp + ".method",
             "unknown interpolation method \"" + method + "\" for " +
                 (t.kernel == TableKernel::kAttention ? "an attention table" : "a merge kernel's table") +
                 " (known: " + known + ")");
    }
    t.interpolation = *it;
    if (m->contains("chosen_by")) t.interpolation_chosen_by = c.text(*m, mp, "chosen_by", false);
  }
  t.finalize(where + ": " + path);
  return t;
}

std::string read_text(const std::filesystem::path& path) {
  return read_text_file(path, "kernel table file");
}

std::string coords(const std::vector<double>& at) {
  return Json(at).dump();
}

}  // namespace

std::string_view to_string(TableInterpolation m) {
  switch (m) {
    case TableInterpolation::kSchedule:
      return "schedule";
    case TableInterpolation::kPowerLaw:
      return "power-law";
    case TableInterpolation::kMean:
      return "mean";
    case TableInterpolation::kLinear:
      return "linear";
    case TableInterpolation::kFittedSchedule:
      return "fitted-schedule";
  }
  return "?";
}

TableInterpolation parse_table_interpolation(std::string_view s) {
  for (TableInterpolation m :
       {TableInterpolation::kSchedule, TableInterpolation::kPowerLaw, TableInterpolation::kMean,
        TableInterpolation::kLinear, TableInterpolation::kFittedSchedule})
    if (to_string(m) == s) return m;
  throw InputError("unknown interpolation method \"" + std::string(s) +
                   "\" (known: schedule, power-law, mean, linear, fitted-schedule)");
}

std::string_view to_string(TableKernel k) {
  for (const KernelName& n : kKernelNames)
    if (n.kernel == k) return n.name;
  return "?";
}

TableKernel parse_table_kernel(std::string_view s) {
  std::string known;
  for (const KernelName& n : kKernelNames) {
    if (n.name == s) return n.kernel;
    known += (known.empty() ? "" : ", ") + std::string(n.name);
  }
  throw InputError("unknown kernel type \"" + std::string(s) + "\" (known: " + known + ")");
}

const std::vector<std::string>& table_axes(TableKernel k) {
  static const std::vector<std::string> attention = {"heads", "rows", "tokens"};
  static const std::vector<std::string> merge = {"dcp", "rows", "heads"};
  static const std::vector<std::string> per_owner = {"dcp", "rows", "heads_per_rank"};
  static const std::vector<std::string> collective = {"dcp", "bytes_per_rank"};
  static const std::vector<std::string> gemm = {"m", "n", "k"};
  static const std::vector<std::string> moe = {"tokens"};
  if (k == TableKernel::kAttention) return attention;
  if (k == TableKernel::kCollective) return collective;
  if (k == TableKernel::kGemm) return gemm;
  if (k == TableKernel::kMoe) return moe;
  return heads_per_rank_axis(k) ? per_owner : merge;
}

bool heads_per_rank_axis(TableKernel k) {
  switch (k) {
    case TableKernel::kA2aPack:
    case TableKernel::kA2aCombine:
    case TableKernel::kDirectWrite:
    case TableKernel::kDirectCombine:
      return true;
    case TableKernel::kAttention:
    case TableKernel::kCorrection:
    case TableKernel::kCollective:
    case TableKernel::kGemm:
    case TableKernel::kMoe:
      break;
  }
  return false;
}

std::vector<TableInterpolation> interpolation_methods(TableKernel k) {
  if (k == TableKernel::kAttention)
    return {TableInterpolation::kSchedule, TableInterpolation::kPowerLaw, TableInterpolation::kMean,
            TableInterpolation::kFittedSchedule};
  if (is_merge_kernel(k)) return {TableInterpolation::kPowerLaw, TableInterpolation::kLinear};
  return {};
}

bool is_merge_kernel(TableKernel k) {
  return k == TableKernel::kCorrection || heads_per_rank_axis(k);  // the owner-slice kernels are the others
}

void KernelTable::finalize(const std::string& where) {
  finalize(where, table_axes(kernel).size());
}

void KernelTable::finalize(const std::string& where, std::size_t axes) {
  memo = std::make_shared<TableMemo>();
  grid.assign(axes, {});
  for (const TablePoint& p : points) {
    if (p.at.size() != axes)
      throw InputError(where + ": a point has " + std::to_string(p.at.size()) + " coordinates, expected " +
                       std::to_string(axes));
    for (double v : p.at)
      if (!std::isfinite(v) || !(v > 0))
        throw InputError(where + ": coordinate " + number_text(v) + " is not a positive number");
    if (!std::isfinite(p.median_ns) || !(p.median_ns > 0))
      throw InputError(where + ": point " + coords(p.at) + ": median_ns " + number_text(p.median_ns) +
                       " is not a positive number");
    for (std::size_t a = 0; a < axes; ++a) grid[a].push_back(p.at[a]);
  }
  for (auto& g : grid) {
    std::sort(g.begin(), g.end());
    g.erase(std::unique(g.begin(), g.end()), g.end());
  }
  std::size_t cells = 1;
  for (const auto& g : grid) cells *= g.size();
  cell_point.assign(cells, -1);
  for (std::size_t i = 0; i < points.size(); ++i) {
    std::size_t cell = 0;
    for (std::size_t a = 0; a < axes; ++a) {
      const auto pos = std::lower_bound(grid[a].begin(), grid[a].end(), points[i].at[a]) - grid[a].begin();
      cell = cell * grid[a].size() + static_cast<std::size_t>(pos);
    }
    if (cell_point[cell] >= 0) {
      throw InputError(where + ".points[" + std::to_string(i) + "]: duplicate point " + coords(points[i].at) +
                       " (also points[" + std::to_string(cell_point[cell]) + "])");
    }
    cell_point[cell] = static_cast<int>(i);
  }
  slices.clear();
  if (axes < 2 || std::find(cell_point.begin(), cell_point.end(), -1) == cell_point.end()) return;
  // An incomplete grid: one table per value of the first axis, over the rest.
  slices.resize(grid[0].size());
  for (KernelTable& slice : slices) {
    slice.kernel = kernel;
    slice.key = key;
  }
  for (const TablePoint& p : points) {
    const auto i = std::lower_bound(grid[0].begin(), grid[0].end(), p.at[0]) - grid[0].begin();
    TablePoint rest = p;
    rest.at.erase(rest.at.begin());
    slices[static_cast<std::size_t>(i)].points.push_back(std::move(rest));
  }
  for (KernelTable& slice : slices) slice.finalize(where, axes - 1);
}

KernelTables parse_kernel_tables(std::string_view json_text, std::string_view where) {
  const std::string w(where);
  detail::TablePointsReader fast(w);
  if (fast.read(json_text)) {
    try {
      return detail::parse_kernel_tables_json(fast.take_document(), w, &fast.points());
    } catch (const ReadPointsTheOrdinaryWay&) {
    }
  }
  const Json root = parse_json_checked<Json>(json_text, w);  // depth-limited; errors name the file
  return detail::parse_kernel_tables_json(root, w);
}

KernelTables detail::parse_kernel_tables_json(const nlohmann::ordered_json& root, const std::string& w,
                                              std::vector<std::vector<TablePoint>>* fast_points) {
  const Cursor c(w);
  if (!root.is_object()) c.fail("(top level)", "expected a JSON object, got " + root.dump().substr(0, 80));
  c.only(root, "", {"format", "provenance", "tables"});
  const Json& format = c.member(root, "", "format");
  if (format != Json(std::string(kKernelTablesFormat)))
    c.fail("format", "expected \"" + std::string(kKernelTablesFormat) + "\", got " + format.dump());
  KernelTables out;
  out.provenance = read_provenance(c, c.member(root, "", "provenance"));
  const Json& tables = c.member(root, "", "tables");
  if (!tables.is_array()) c.fail("tables", "expected an array, got " + tables.dump().substr(0, 80));
  for (std::size_t i = 0; i < tables.size(); ++i) {
    const std::string path = "tables[" + std::to_string(i) + "]";
    std::vector<TablePoint>* fast = nullptr;
    if (fast_points != nullptr) {
      if (i >= fast_points->size()) throw ReadPointsTheOrdinaryWay{};
      fast = &(*fast_points)[i];
    }
    out.tables.push_back(read_table(c, tables[i], path, w, fast));
    for (std::size_t k = 0; k + 1 < out.tables.size(); ++k) {
      if (out.tables[k].kernel == out.tables.back().kernel && out.tables[k].key == out.tables.back().key)
        c.fail(path, "duplicate table for " + std::string(to_string(out.tables[k].kernel)) + " \"" +
                         out.tables[k].key + "\" (also tables[" + std::to_string(k) + "])");
    }
  }
  return out;
}

KernelTables load_kernel_tables(const std::filesystem::path& path) {
  const std::filesystem::path file = existing_or_gz(path);  // X.json may be stored as X.json.gz
  return parse_kernel_tables(read_text(file), file.string());
}

nlohmann::ordered_json detail::kernel_tables_to_json(const KernelTables& t) {
  return Json::parse(kernel_tables_json(t));
}

std::string kernel_tables_json(const KernelTables& t) {
  const TableProvenance& p = t.provenance;
  Json prov = {{"device", p.device}, {"driver", p.driver}, {"cuda", p.cuda},      {"nccl", p.nccl},
               {"clocks", p.clocks}, {"date", p.date},     {"command", p.command}};
  if (!p.source.empty()) prov["source"] = p.source;
  if (!p.license.empty()) prov["license"] = p.license;
  std::string out = "{\n  \"format\": " + Json(std::string(kKernelTablesFormat)).dump() +
                    ",\n  \"provenance\": " + prov.dump() + ",\n  \"tables\": [";
  for (std::size_t i = 0; i < t.tables.size(); ++i) {
    const KernelTable& k = t.tables[i];
    out += std::string(i ? "," : "") + "\n    {\"kernel\": " + Json(std::string(to_string(k.kernel))).dump() +
           ", \"key\": " + Json(k.key).dump() + ", \"axes\": " + Json(table_axes(k.kernel)).dump() +
           ", \"points\": [";
    for (std::size_t j = 0; j < k.points.size(); ++j) {
      const TablePoint& pt = k.points[j];
      Json jp = {{"at", pt.at},
                 {"median_ns", pt.median_ns},
                 {"samples", pt.samples},
                 {"min_ns", pt.min_ns},
                 {"max_ns", pt.max_ns}};
      out += std::string(j ? "," : "") + "\n      " + jp.dump();
    }
    out += "\n    ]";
    if (k.model) {
      const Json m = {{"form", "floor + bytes / bandwidth"},
                      {"floor_ns", k.model->floor_ns},
                      {"bandwidth_GBps", k.model->bandwidth / 1e9},
                      {"points", k.model->points},
                      {"max_relative_residual", k.model->max_relative_residual}};
      out += ", \"model\": " + m.dump();
    }
    if (k.interpolation != TableInterpolation::kSchedule || !k.interpolation_chosen_by.empty()) {
      const auto allowed = interpolation_methods(k.kernel);
      if (std::find(allowed.begin(), allowed.end(), k.interpolation) == allowed.end())
        throw std::logic_error("kernel_tables_json: [" + k.key + "] of kernel " +
                               std::string(to_string(k.kernel)) + " records interpolation " +
                               std::string(to_string(k.interpolation)) +
                               ", which its file could not be read back with");
      Json m = {{"method", std::string(to_string(k.interpolation))}};
      if (!k.interpolation_chosen_by.empty()) m["chosen_by"] = k.interpolation_chosen_by;
      out += ", \"interpolation\": " + m.dump();
    }
    out += "}";
  }
  return out + "\n  ]\n}\n";
}

std::string describe_kernel_tables(const KernelTables& t) {
  const TableProvenance& p = t.provenance;
  std::ostringstream out;
  out << "device " << p.device << ", driver " << p.driver << ", CUDA " << p.cuda << ", NCCL "
      << (p.nccl.empty() ? "-" : p.nccl) << ", clocks " << (p.clocks.empty() ? "-" : p.clocks) << ", date "
      << p.date << "\ncommand: " << p.command << "\n";
  if (!p.source.empty()) out << "source: " << p.source << (p.license.empty() ? "" : ", " + p.license) << "\n";
  for (const KernelTable& k : t.tables) {
    std::size_t cells = k.cell_point.size();
    out << to_string(k.kernel) << " [" << k.key << "]: " << k.points.size() << " points on a grid of "
        << cells << " cells;";
    const auto& axes = table_axes(k.kernel);
    for (std::size_t a = 0; a < axes.size(); ++a) {
      out << " " << axes[a] << " " << Json(k.grid[a]).dump();
    }
    out << "\n";
    // How it is read between its points, where the file says (a merge table without: the power law).
    if (k.interpolation != TableInterpolation::kSchedule || !k.interpolation_chosen_by.empty())
      out << "  read between measured shapes: " << to_string(k.interpolation)
          << (k.interpolation_chosen_by.empty() ? "" : " (" + k.interpolation_chosen_by + ")") << "\n";
    if (k.model)
      out << "  model: " << k.model->floor_ns / 1e3 << " us + bytes / " << k.model->bandwidth / 1e12
          << " TB/s (fitted on " << k.model->points << " points, largest residual "
          << 100 * k.model->max_relative_residual << "%)\n";
    for (const TablePoint& pt : k.points) {
      out << "  " << coords(pt.at) << "  median " << pt.median_ns / 1e3 << " us  (" << pt.samples
          << " samples, " << pt.min_ns / 1e3 << "-" << pt.max_ns / 1e3 << " us)\n";
    }
  }
  return out.str();
}

namespace {

// table_time_s, read linearly or as a power law (the whole table's method: its slices follow it).
std::optional<double> read_time_s(const KernelTable& table, std::span<const double> at, bool linear);

// Where the whole grid misses a corner: interpolate along the first axis between the two slices around
// `at` (or take the one it lies on), each priced over its own grid (exact at its measured points).
std::optional<double> slice_time_s(const KernelTable& table, std::span<const double> at, bool linear) {
  if (table.slices.empty()) return std::nullopt;
  const std::vector<double>& g = table.grid[0];
  const auto i = static_cast<std::size_t>(std::lower_bound(g.begin(), g.end(), at[0]) - g.begin());
  const auto rest = at.subspan(1);
  if (g[i] == at[0]) return read_time_s(table.slices[i], rest, linear);
  const auto lo = read_time_s(table.slices[i - 1], rest, linear);
  const auto hi = lo ? read_time_s(table.slices[i], rest, linear) : std::nullopt;
  if (!lo || !hi) return std::nullopt;
  if (linear) {
    const double w = (at[0] - g[i - 1]) / (g[i] - g[i - 1]);
    return (1.0 - w) * *lo + w * *hi;
  }
  const double w = (std::log(at[0]) - std::log(g[i - 1])) / (std::log(g[i]) - std::log(g[i - 1]));
  return std::exp((1.0 - w) * std::log(*lo) + w * std::log(*hi));
}

std::optional<double> read_time_s(const KernelTable& table, std::span<const double> at, bool linear) {
  const std::size_t axes = table.grid.size();
  constexpr std::size_t kMaxAxes = 8;  // tables have 2 or 3 (table_axes)
  if (at.size() != axes || axes == 0 || axes > kMaxAxes) return std::nullopt;
  // Per axis: the lower grid index and the weight of the upper one (0 when `at` is on a grid value).
  std::array<std::size_t, kMaxAxes> lo{};
  std::array<double, kMaxAxes> w{};
  for (std::size_t a = 0; a < axes; ++a) {
    const std::vector<double>& g = table.grid[a];
    const double x = at[a];
    if (!(x >= g.front() && x <= g.back())) return std::nullopt;  // also NaN
    auto it = std::lower_bound(g.begin(), g.end(), x);
    const auto i = static_cast<std::size_t>(it - g.begin());
    if (*it == x) {
      lo[a] = i;
      w[a] = 0.0;
    } else {
      lo[a] = i - 1;  // g[i-1] < x < g[i]
      w[a] = linear ? (x - g[i - 1]) / (g[i] - g[i - 1])
                    : (std::log(x) - std::log(g[i - 1])) / (std::log(g[i]) - std::log(g[i - 1]));
    }
  }
  // Multilinear in log(time) over log(coordinates): kernel times scale as powers of their sizes (linear in
  // bytes or FLOPs, flat near their floor), which this follows between grid values 2-4x apart. kLinear:
  // multilinear in time over the coordinates (a floor plus a term linear in each size, exactly).
  double log_sum = 0.0, sum = 0.0;
  int corners = 0;
  double only = 0.0;
  for (std::size_t corner = 0; corner < (std::size_t{1} << axes); ++corner) {
    double weight = 1.0;
    std::size_t cell = 0;
    for (std::size_t a = 0; a < axes; ++a) {
      const bool upper = (corner >> a) & 1U;
      if (upper && w[a] == 0.0) {
        weight = 0.0;
        break;
      }
      weight *= upper ? w[a] : 1.0 - w[a];
      cell = cell * table.grid[a].size() + lo[a] + (upper ? 1 : 0);
    }
    if (weight == 0.0) continue;
    const int point = table.cell_point[cell];
    if (point < 0) return slice_time_s(table, at, linear);  // a corner that was not measured
    only = table.points[static_cast<std::size_t>(point)].median_ns;
    log_sum += weight * std::log(only);
    sum += weight * only;
    ++corners;
  }
  if (corners == 1) return only * 1e-9;  // a measured point: exactly its median
  return (linear ? sum : std::exp(log_sum)) * 1e-9;
}

}  // namespace

std::optional<double> table_time_s(const KernelTable& table, std::span<const double> at) {
  return read_time_s(table, at, table.interpolation == TableInterpolation::kLinear);
}

std::optional<TableModel> fit_table_model(const std::vector<std::pair<double, double>>& pts) {
  std::vector<double> xs;
  double mx = 0, my = 0;
  for (const auto& [x, y] : pts) {
    xs.push_back(x);
    mx += x;
    my += y;
  }
  std::sort(xs.begin(), xs.end());
  if (std::unique(xs.begin(), xs.end()) - xs.begin() < 2) return std::nullopt;
  mx /= double(pts.size());
  my /= double(pts.size());
  double sxx = 0, sxy = 0;
  for (const auto& [x, y] : pts) {
    sxx += (x - mx) * (x - mx);
    sxy += (x - mx) * (y - my);
  }
  double slope = sxy / sxx, floor = my - slope * mx;
  if (floor < 0) {  // through the origin: t = bytes / bandwidth
    double sx2 = 0, sxy0 = 0;
    for (const auto& [x, y] : pts) {
      sx2 += x * x;
      sxy0 += x * y;
    }
    floor = 0;
    slope = sxy0 / sx2;
  }
  if (!(slope > 0) || !std::isfinite(slope)) return std::nullopt;
  TableModel m;
  m.floor_ns = floor * 1e9;
  m.bandwidth = 1.0 / slope;
  m.points = static_cast<int>(pts.size());
  for (const auto& [x, y] : pts)
    m.max_relative_residual = std::max(m.max_relative_residual, std::fabs(m.time_s(x) / y - 1));
  return m;
}

std::optional<double> lookup_model_time_s(const std::vector<KernelTables>& tables, TableKernel kernel,
                                          std::string_view key, double bytes) {
  for (const KernelTables& file : tables)
    for (const KernelTable& t : file.tables)
      if (t.kernel == kernel && t.key == key && t.model) return t.model->time_s(bytes);
  return std::nullopt;
}

std::optional<double> lookup_kernel_time_s(const std::vector<KernelTables>& tables, TableKernel kernel,
                                           std::string_view key, std::span<const double> at) {
  for (const KernelTables& file : tables) {
    for (const KernelTable& t : file.tables) {
      if (t.kernel != kernel || t.key != key) continue;
      if (auto hit = table_time_s(t, at)) return hit;
    }
  }
  return std::nullopt;
}

}  // namespace dcpsim::models
