#include "dcpsim/models/table_loo.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "dcpsim/checked.h"
#include "dcpsim/error.h"
#include "dcpsim/models/cost.h"

namespace dcpsim::models {
namespace {

constexpr double kMaxLooRows = 65536.0;  // the most rows a left-out point is priced at (a step's batch)

LeaveOneOut figures(std::vector<double> errors) {
  LeaveOneOut f;
  f.n = static_cast<int>(errors.size());
  if (errors.empty()) return f;
  std::sort(errors.begin(), errors.end());
  f.median = errors[errors.size() / 2];
  f.p90 = errors[(errors.size() * 9) / 10];
  return f;
}

KernelTable* find_table(HardwareProfile& p, const std::string& key) {
  for (KernelTables& file : p.tables)
    for (KernelTable& t : file.tables)
      if (t.kernel == TableKernel::kAttention && t.key == key) return &t;
  return nullptr;
}

// "qk576" -> 576 after the prefix; -1 otherwise.
int number_after(const std::string& word, const std::string& prefix) {
  if (word.size() <= prefix.size() || word.compare(0, prefix.size(), prefix) != 0) return -1;
  const std::string digits = word.substr(prefix.size());
  if (digits.size() > 6 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return -1;
  return std::stoi(digits);
}

bool has_schedule(const AttentionShape& a) {
  return (a.shared_kv && a.impl == "flashinfer") || a.impl == "dcpsim";
}

std::string percent(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * x);
  return buf;
}

}  // namespace

std::optional<AttentionShape> attention_shape_of_key(const std::string& key, int heads) {
  std::istringstream in(key);
  std::vector<std::string> w;
  for (std::string s; in >> s;) w.push_back(s);
  if (w.size() < 4 || (w[0] != "mla" && w[0] != "gqa") || heads < 1) return std::nullopt;
  AttentionShape a;
  a.qk_dim = number_after(w[1], "qk");
  a.head_dim = number_after(w[2], "d");
  if (a.qk_dim < 1 || a.head_dim < 1) return std::nullopt;
  std::size_t next = 3;
  a.heads = heads;
  if (w[0] == "mla") {
    a.shared_kv = true;
    a.kv_heads = 1;
  } else {
    const int g = number_after(w[3], "g");
    if (g < 1 || heads % g != 0) return std::nullopt;
    a.shared_kv = false;
    a.kv_heads = heads / g;
    next = 4;
  }
  if (w.size() < next + 1 || w.size() > next + 2) return std::nullopt;
  try {
    a.kv_dtype = parse_dtype(w[next]);
  } catch (const InputError&) {
    return std::nullopt;
  }
  if (w.size() == next + 2) a.impl = w[next + 1];
  return a;
}

LeaveOneOut attention_leave_one_out(const HardwareProfile& p, const std::string& key,
                                    TableInterpolation method) {
  HardwareProfile base = p;
  KernelTable* whole = find_table(base, key);
  if (whole == nullptr || whole->grid.size() != 3) return {};
  whole->interpolation = method;
  const std::vector<TablePoint> points = whole->points;
  const std::vector<std::vector<double>> grid = whole->grid;
  std::vector<double> errors;
  for (std::size_t axis : {std::size_t{0}, std::size_t{1}}) {
    const std::vector<double>& values = grid[axis];
    for (std::size_t i = 1; i + 1 < values.size(); ++i) {
      HardwareProfile q = base;
      KernelTable* t = find_table(q, key);
      std::vector<TablePoint> kept, out;
      for (const TablePoint& pt : points) (pt.at[axis] == values[i] ? out : kept).push_back(pt);
      t->points = std::move(kept);
      t->finalize("leave-one-out of [" + key + "]");
      for (const TablePoint& pt : out) {
        // Whole heads and rows a step can have (a file's other points are not priced, as the schedules'
        // lookup skips such tables); tokens any positive count.
        const auto integral = [](double v, double most) {
          return v >= 1.0 && v <= most && v == std::floor(v);
        };
        if (!integral(pt.at[0], kMaxHeads) || !integral(pt.at[1], kMaxLooRows) || !(pt.at[2] >= 1.0))
          continue;
        const auto a = attention_shape_of_key(key, static_cast<int>(pt.at[0]));
        if (!a) continue;
        const std::vector<int64_t> rows(static_cast<std::size_t>(pt.at[1]), static_cast<int64_t>(pt.at[2]));
        const AttentionTiming timing = decode_attention_time(q, *a, rows);
        if (timing.source != FigureSource::kTable) continue;
        errors.push_back(std::abs((timing.kernel_end_s + timing.combine_s) * 1e9 / pt.median_ns - 1.0));
      }
    }
  }
  return figures(std::move(errors));
}

TableInterpolation pick_interpolation(const std::vector<std::pair<TableInterpolation, LeaveOneOut>>& scores) {
  if (scores.empty()) return TableInterpolation::kSchedule;
  double least_p90 = scores.front().second.p90;
  for (const auto& [m, f] : scores) least_p90 = std::min(least_p90, f.p90);
  const std::pair<TableInterpolation, LeaveOneOut>* best = nullptr;
  for (const auto& s : scores) {
    if (s.second.p90 > least_p90 + 0.005) continue;
    if (best == nullptr || s.second.median < best->second.median) best = &s;
  }
  return best->first;
}

std::optional<InterpolationChoice> choose_attention_interpolation(const HardwareProfile& p,
                                                                  const std::string& key) {
  // Any head count of whole groups does: only the kind of kernel matters here.
  std::optional<AttentionShape> shape = attention_shape_of_key(key, 64);
  for (int heads = 1; !shape && heads <= 64; ++heads) shape = attention_shape_of_key(key, heads * 8);
  if (!shape || !has_schedule(*shape)) return std::nullopt;
  InterpolationChoice c;
  for (TableInterpolation m : interpolation_methods(TableKernel::kAttention)) {
    const LeaveOneOut f = attention_leave_one_out(p, key, m);
    if (f.n == 0) return std::nullopt;
    c.scores.push_back({m, f});
  }
  c.method = pick_interpolation(c.scores);
  const LeaveOneOut* best = nullptr;
  for (const auto& [m, f] : c.scores)
    if (m == c.method) best = &f;
  std::string figures;
  for (const auto& [m, f] : c.scores)
    figures += (figures.empty() ? "" : ", ") + std::string(to_string(m)) + " " + percent(f.median) + " / " +
               percent(f.p90);
  c.figures = figures;
  c.chosen_by = "leave-one-out over heads and rows (" + std::to_string(best->n) +
                " points), median / p90: " + figures +
                "; the least p90 (within 0.5 points: the least median)";
  return c;
}

LeaveOneOut merge_leave_one_out(const KernelTable& table, TableInterpolation method) {
  if (!is_merge_kernel(table.kernel)) return {};
  KernelTable whole = table;
  whole.interpolation = method;
  std::vector<double> errors;
  for (std::size_t axis = 0; axis < whole.grid.size(); ++axis) {
    const std::vector<double>& values = table.grid[axis];
    for (std::size_t i = 1; i + 1 < values.size(); ++i) {
      KernelTable t = whole;
      std::vector<TablePoint> kept, out;
      for (const TablePoint& pt : table.points) (pt.at[axis] == values[i] ? out : kept).push_back(pt);
      t.points = std::move(kept);
      t.finalize("leave-one-out of [" + table.key + "]", table.grid.size());
      for (const TablePoint& pt : out) {
        const std::optional<double> s = table_time_s(t, pt.at);
        if (s) errors.push_back(std::abs(*s * 1e9 / pt.median_ns - 1.0));
      }
    }
  }
  return figures(std::move(errors));
}

std::optional<InterpolationChoice> choose_merge_interpolation(const KernelTable& table) {
  if (!is_merge_kernel(table.kernel)) return std::nullopt;
  InterpolationChoice c;
  for (TableInterpolation m : {TableInterpolation::kPowerLaw, TableInterpolation::kLinear}) {
    const LeaveOneOut f = merge_leave_one_out(table, m);
    if (f.n == 0) return std::nullopt;
    c.scores.push_back({m, f});
  }
  c.method = pick_interpolation(c.scores);
  for (const auto& [m, f] : c.scores)
    c.figures += (c.figures.empty() ? "" : ", ") + std::string(to_string(m)) + " " + percent(f.median) +
                 " / " + percent(f.p90);
  c.chosen_by = "leave-one-out over every axis (" + std::to_string(c.scores.front().second.n) +
                " points), median / p90: " + c.figures +
                "; the least p90 (within 0.5 points: the least median)";
  return c;
}

std::vector<std::string> choose_interpolations(const HardwareProfile& p, KernelTables& tables) {
  HardwareProfile q = p;
  // The tables read as given: those of the same keys in `p` leave it.
  for (KernelTables& file : q.tables)
    std::erase_if(file.tables, [&](const KernelTable& t) {
      return std::any_of(tables.tables.begin(), tables.tables.end(),
                         [&](const KernelTable& u) { return u.kernel == t.kernel && u.key == t.key; });
    });
  q.tables.insert(q.tables.begin(), tables);
  std::vector<std::string> lines;
  for (KernelTable& t : tables.tables) {
    if (t.kernel != TableKernel::kAttention && !is_merge_kernel(t.kernel)) continue;
    const auto c = t.kernel == TableKernel::kAttention ? choose_attention_interpolation(q, t.key)
                                                       : choose_merge_interpolation(t);
    if (!c) continue;
    const std::string kernel =
        t.kernel == TableKernel::kAttention ? "" : std::string(to_string(t.kernel)) + " ";
    lines.push_back("[" + kernel + t.key + "]: " + std::string(to_string(c->method)) +
                    " (leave-one-out: " + c->figures + ")");
    t.interpolation = c->method;
    t.interpolation_chosen_by = c->chosen_by;
  }
  return lines;
}

}  // namespace dcpsim::models
