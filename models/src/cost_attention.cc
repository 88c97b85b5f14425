// Split-KV decode attention: work units in SM waves, each row's completion time in closed form per wave.
#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <functional>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "dcpsim/checked.h"
#include "dcpsim/error.h"
#include "dcpsim/models/cost_kernels.h"
#include "dcpsim/models/kernel_plan.h"

namespace dcpsim::models {
namespace {

void check_shape(const AttentionShape& a) {
  if (a.heads < 1 || a.kv_heads < 1 || a.heads % a.kv_heads != 0 || a.head_dim < 1 || a.qk_dim < 1) {
    throw InputError("attention shape: heads " + std::to_string(a.heads) + ", kv_heads " +
                     std::to_string(a.kv_heads) + ", head_dim " + std::to_string(a.head_dim) + ", qk_dim " +
                     std::to_string(a.qk_dim) + ": expected positive sizes with kv_heads dividing heads");
  }
}

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// HBM bytes of one work unit per KV token: its share of the KV read. Head groups that share a KV head share
// its read (the first group's read brings the tokens into L2). The unit's Q load and its partial-output write
// are L2 traffic priced by attention.cta_overhead.
double unit_kv_bytes_per_token(const HardwareProfile& p, const AttentionShape& a) {
  const double groups_per_kv_head = double(head_groups(p, a)) / a.kv_heads;
  return kv_bytes_per_token(a) / a.kv_heads / groups_per_kv_head;
}

// Bytes a non-empty row adds to the kernel besides its KV: its queries read once, its output and LSE written.
double row_io_bytes(const AttentionShape& a) {
  return a.heads * (a.qk_dim * double(dtype_bytes(query_dtype(a.kv_dtype))) +
                    a.head_dim * double(dtype_bytes(a.out_dtype)) + 4.0);
}

int64_t units_for(std::span<const int64_t> tokens, int64_t split, int groups) {
  int64_t units = 0;
  for (int64_t n : tokens) units += ceil_div(n, split) * groups;
  return units;
}

// FlashDecoding-style split size, in whole work units: the smallest split whose units fit in one wave of the
// slots, so that no nearly empty tail wave costs a whole unit's time. When even one split per row overflows
// the slots (rows × head groups > slots), rows are not split at all and run in several full waves.
int64_t choose_split_tokens(std::span<const int64_t> tokens, int groups, int slots, int64_t unit_tokens) {
  int64_t longest = 0, nonempty = 0;
  for (int64_t n : tokens) {
    longest = std::max(longest, n);
    nonempty += n > 0;
  }
  const int64_t whole_row = ceil_div(longest, unit_tokens);  // in work units
  if (nonempty * groups >= slots) return whole_row * unit_tokens;
  int64_t lo = 1, hi = whole_row;  // units_for is non-increasing in the split; fits at hi
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (units_for(tokens, mid * unit_tokens, groups) <= slots) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo * unit_tokens;
}

}  // namespace

AttentionShape attention_shape(const Scenario& s) {
  AttentionShape a{
      s.heads,    s.kv_heads,  s.head_dim,      s.qk_dim, s.kv_heads == 1 && s.qk_dim > s.head_dim,
      s.kv_dtype, s.out_dtype, s.attention_impl};
  a.pushes_rows = s.strategy == Strategy::kRowStream;
  a.rows_per_kv = s.rows_per_kv;
  return a;
}

std::optional<double> attention_table_time_s(const HardwareProfile& p, const AttentionShape& a,
                                             std::span<const double> at) {
  const std::string base = attention_table_key(a);
  if (!a.impl.empty()) {
    if (auto t = lookup_kernel_time_s(p.tables, TableKernel::kAttention, base + " " + a.impl, at)) return t;
    return lookup_kernel_time_s(p.tables, TableKernel::kAttention, base, at);
  }
  if (auto t = lookup_kernel_time_s(p.tables, TableKernel::kAttention, base, at)) return t;
  for (const KernelTables& file : p.tables) {
    for (const KernelTable& t : file.tables) {
      if (t.kernel != TableKernel::kAttention || t.key.size() <= base.size() + 1 ||
          t.key.compare(0, base.size() + 1, base + " ") != 0)
        continue;
      // The first implementation measured for this geometry decides, covered or not (never a mix).
      return table_time_s(t, at);
    }
  }
  return std::nullopt;
}

std::string attention_table_key(const AttentionShape& a) {
  check_shape(a);
  const std::string dims = "qk" + std::to_string(a.qk_dim) + " d" + std::to_string(a.head_dim);
  const std::string dtype(to_string(a.kv_dtype));
  if (a.shared_kv) return "mla " + dims + " " + dtype;
  return "gqa " + dims + " g" + std::to_string(a.heads / a.kv_heads) + " " + dtype;
}

double attention_table_heads(const HardwareProfile& p, const AttentionShape& a) {
  return attention_table_heads(a, static_cast<int>(p.attention.heads_per_cta.si()));
}

double attention_table_heads(const AttentionShape& a, int heads_per_cta) {
  check_shape(a);
  if (a.shared_kv && a.impl == "flashinfer") return flashinfer_mla_table_heads(a.heads);
  const int q_per_kv = a.heads / a.kv_heads;
  if (!a.shared_kv || heads_per_cta < 1 || q_per_kv <= heads_per_cta) return double(a.heads);
  return double(a.kv_heads) * double(ceil_div(q_per_kv, heads_per_cta) * heads_per_cta);
}

double attention_flops_per_head_token(const AttentionShape& a) {
  return 2.0 * (double(a.qk_dim) + double(a.head_dim));
}

double kv_bytes_per_token(const AttentionShape& a) {
  check_shape(a);
  const double per_head = a.shared_kv ? a.qk_dim : a.qk_dim + a.head_dim;
  return a.kv_heads * per_head * double(dtype_bytes(a.kv_dtype));
}

double attention_io_bytes(const AttentionShape& a, std::span<const int64_t> local_tokens) {
  double bytes = 0.0;
  const double kv = kv_bytes_per_token(a);
  for (int64_t n : local_tokens)
    if (n > 0) bytes += double(n) * kv + row_io_bytes(a);
  return bytes;
}

int heads_per_work_unit(const HardwareProfile& p, const AttentionShape& a) {
  check_shape(a);
  const int q_per_kv = a.heads / a.kv_heads;
  return a.shared_kv ? std::min(q_per_kv, static_cast<int>(p.attention.heads_per_cta.si())) : q_per_kv;
}

int head_groups(const HardwareProfile& p, const AttentionShape& a) {
  check_shape(a);
  const int q_per_kv = a.heads / a.kv_heads;
  return a.kv_heads * static_cast<int>(ceil_div(q_per_kv, heads_per_work_unit(p, a)));
}

std::vector<double> AttentionTiming::row_ready_s(double combine_start_s) const {
  std::vector<double> out(row_done_s.size());
  for (std::size_t b = 0; b < out.size(); ++b) {
    out[b] = combined(b) ? combine_start_s + combine_s : row_done_s[b];
  }
  return out;
}

namespace {

// Where `x` lies on a grid axis: the grid values around it and whether it is one of them; nullopt outside.
struct Bracket {
  double lo = 0.0, hi = 0.0;
  bool on_grid = false;
};
std::optional<Bracket> bracket(const std::vector<double>& g, double x) {
  if (g.empty() || !(x >= g.front() && x <= g.back())) return std::nullopt;
  const auto it = std::lower_bound(g.begin(), g.end(), x);
  if (*it == x) return Bracket{x, x, true};
  return Bracket{*(it - 1), *it, false};
}

// A kernel between the shapes its table measured, for the kernels whose schedule dcpsim knows: FlashInfer's
// MLA kernel and dcpsim's own (kernel_plan.h). Their times move in the schedule's steps, not as powers of the
// coordinates: at 8 rows of 4,915 tokens and 128 heads every FlashInfer cluster streams one 768-token chunk,
// halfway in load between the 512 of 4,096 tokens and the 1,024 of 8,192, where a power law in tokens puts
// it at a quarter; one row of 10,923 tokens is cut into as many chunks as 8,192 are, and the kernel then
// merges as many partials. So along the tokens axis the weight between two measured neighbours is where the
// shape's schedule features lie between theirs, each feature weighed by what it costs on this (heads, rows)
// slice of the table: time ≈ a + b · critical-path tokens + c · partials per row, least squares over the
// slice's measured tokens. Leave-one-out on the committed H200 tables (a value predicted from its neighbours
// 4x apart in tokens), median / p90: FlashInfer 1.4% / 7.1% against 4.2% / 9.9% for the power law, dcpsim's
// kernels 0.6% / 2.5% against 2.4% / 6.4%. Exact at measured points; along tokens always between the
// measured neighbours.
struct PlanFeatures {
  double load = 0.0;    // tokens on the kernel's critical path
  double chunks = 0.0;  // partials merged per row
  // The cost model the fitted-schedule reading fits (fitted_table_time_s): time ≈ Σ c_i · cost[i], c_i >= 0.
  // FlashInfer's MLA kernel: 1 (the launch), the chunks and the KV tokens of the most loaded cluster, the KV
  // tokens per cluster of all (the HBM they share), then the merge's: the partials a merged row reads and
  // the rows one merge CTA merges. dcpsim's: 1, the waves, the tokens of the waves' blocks, the KV tokens per
  // SM of all, then the splits its combine reads (and 0).
  std::array<double, 6> cost{};
};

// One implementation's schedule: its features for `heads` query heads (GQA: heads / group KV heads) over rows
// of the given lengths.
// Uniform shapes (the table's points) are planned once per lookup.
struct Planner {
  std::function<PlanFeatures(int heads, std::span<const int64_t> tokens)> plan;
  mutable std::map<std::array<double, 3>, PlanFeatures> seen;
  PlanFeatures uniform(double heads, double rows, double tokens) const {
    const auto [it, fresh] = seen.try_emplace({heads, rows, tokens});
    if (fresh) {
      const std::vector<int64_t> same(static_cast<std::size_t>(rows), std::llround(tokens));
      it->second = plan(static_cast<int>(heads), same);
    }
    return it->second;
  }
};

// Least squares of the rows' last entry on their columns `cols` (every column scaled to at most 1): normal
// equations, Gauss-Jordan with partial pivoting. The coefficients in the order of `cols`; nullopt when a
// pivot falls below 1e-9 of the first diagonal entry (a singular system).
std::optional<std::vector<double>> solve_normal(const std::vector<std::vector<double>>& rows,
                                                const std::vector<int>& cols) {
  const std::size_t k = cols.size();
  if (k == 0 || rows.empty()) return std::nullopt;
  const std::size_t y = rows.front().size() - 1;
  std::vector<std::vector<double>> m(k, std::vector<double>(k + 1, 0.0));
  for (const auto& x : rows) {
    for (std::size_t i = 0; i < k; ++i) {
      for (std::size_t j = 0; j < k; ++j) m[i][j] += x[cols[i]] * x[cols[j]];
      m[i][k] += x[cols[i]] * x[y];
    }
  }
  const double scale = m[0][0];
  for (std::size_t c = 0; c < k; ++c) {
    std::size_t pivot = c;
    for (std::size_t r = c + 1; r < k; ++r)
      if (std::abs(m[r][c]) > std::abs(m[pivot][c])) pivot = r;
    if (!(std::abs(m[pivot][c]) > 1e-9 * scale)) return std::nullopt;
    std::swap(m[c], m[pivot]);
    for (std::size_t r = 0; r < k; ++r) {
      if (r == c) continue;
      const double f = m[r][c] / m[c][c];
      for (std::size_t j = c; j <= k; ++j) m[r][j] -= f * m[c][j];
    }
  }
  std::vector<double> out(k);
  for (std::size_t i = 0; i < k; ++i) out[i] = m[i][k] / m[i][i];
  return out;
}

// Least squares of time on (1, load, chunks) over the slice's points, in relative error, or on (1, load)
// where the chunks do not vary over the slice (the fit would be singular); the costs of a load token and of a
// chunk, or nullopt when the slice has too few points or the fit gives a non-positive one.
std::optional<PlanFeatures> slice_costs(const KernelTable& t, double heads, double rows,
                                        const Planner& planner) {
  std::vector<std::array<double, 4>> xs;  // 1, load, chunks, time
  for (const TablePoint& pt : t.points) {
    if (pt.at[0] != heads || pt.at[1] != rows) continue;
    const PlanFeatures f = planner.uniform(heads, rows, pt.at[2]);
    xs.push_back({1.0, f.load, f.chunks, pt.median_ns});
  }
  if (xs.size() < 4) return std::nullopt;
  // Weighted by 1 / time, so that the fit minimises relative errors: a slice spans 128 to 131,072 tokens,
  // and unweighted its longest points decide the costs that place its shortest (the H100's table, completed
  // above 4 GB of KV on 2026-12-07, moved a 6,920-token shape of a held-out step by 11 points so; weighted,
  // its leave-one-out p90 is 8.5% against 8.7%, and 486 off-grid shapes measured apart are priced at 3.4%
  // / 11.0% median / p90 against 3.5% / 11.2%; docs/VALIDATION.md). The intercept's column is rescaled with
  // the others.
  for (auto& x : xs) {
    const double w = 1.0 / x[3];
    for (double& v : x) v *= w;
  }
  // Each feature column scaled to its largest value, so that the pivot test below does not depend on units
  // (critical-path tokens reach 10^5, partials 10^2).
  std::array<double, 3> unit{0.0, 0.0, 0.0};
  for (const auto& x : xs)
    for (std::size_t i = 0; i < 3; ++i) unit[i] = std::max(unit[i], std::abs(x[i]));
  for (std::size_t i = 0; i < 3; ++i) {
    if (!(unit[i] > 0.0)) unit[i] = 1.0;
    for (auto& x : xs) x[i] /= unit[i];
  }
  std::vector<std::vector<double>> fit;
  for (const auto& x : xs) fit.push_back({x[0], x[1], x[2], x[3]});
  auto coef = solve_normal(fit, {0, 1, 2});
  if (!coef) coef = solve_normal(fit, {0, 1});
  if (!coef) return std::nullopt;
  coef->resize(3, 0.0);
  const PlanFeatures cost{(*coef)[1] / unit[1], (*coef)[2] / unit[2]};
  if (!(cost.load >= 0.0) || !(cost.chunks >= 0.0) || !(cost.load + cost.chunks > 0.0)) return std::nullopt;
  return cost;
}

// Whether `table` is the attention table of `key` over (heads, rows, tokens) that a schedule can read:
// schedules need whole heads and rows; a table with others is looked up as any table is.
bool schedule_readable(const KernelTable& table, const std::string& key) {
  if (table.kernel != TableKernel::kAttention || table.key != key || table.grid.size() != 3) return false;
  const auto whole = [](const std::vector<double>& g) {
    return std::all_of(g.begin(), g.end(), [](double v) { return v >= 1.0 && v == std::floor(v); });
  };
  return whole(table.grid[0]) && whole(table.grid[1]);
}

// `heads`: the table's heads coordinate of the query (attention_table_heads). nullopt when no table of `key`
// covers the shape.
std::optional<double> planned_table_time_s(const HardwareProfile& p, const AttentionShape& a,
                                           std::span<const int64_t> local_tokens, double mean_tokens,
                                           const std::string& key, double heads, const Planner& planner) {
  const double rows = double(local_tokens.size());
  const PlanFeatures query = planner.plan(a.heads, local_tokens);
  for (const KernelTables& file : p.tables) {
    for (const KernelTable& table : file.tables) {
      if (!schedule_readable(table, key)) continue;
      std::map<std::pair<double, double>, std::optional<PlanFeatures>> fits;
      auto costs = [&](double hg, double bg) {
        const auto [it, fresh] = fits.try_emplace({hg, bg});
        if (fresh) it->second = slice_costs(table, hg, bg, planner);
        return it->second;
      };
      const auto h = bracket(table.grid[0], heads);
      const auto b = bracket(table.grid[1], rows);
      const auto n = bracket(table.grid[2], mean_tokens);
      if (!h || !b || !n) continue;
      const bool own = h->on_grid && b->on_grid;  // the query's own slice: its plan as its rows are
      // On the slice (hg, bg), at the query's tokens.
      auto on_slice = [&](double hg, double bg) -> std::optional<double> {
        const auto point = [&](double tok) -> std::optional<double> {
          const double at[] = {hg, bg, tok};
          return table_time_s(table, at);
        };
        if (n->on_grid) return point(n->lo);
        const auto lo = point(n->lo);
        const auto hi = lo ? point(n->hi) : std::nullopt;
        if (!lo || !hi) return std::nullopt;
        double w = (mean_tokens - n->lo) / (n->hi - n->lo);  // without a fit: linear in tokens
        if (const auto cost = costs(hg, bg)) {
          const auto model = [&](const PlanFeatures& f) {
            return cost->load * f.load + cost->chunks * f.chunks;
          };
          const double m_lo = model(planner.uniform(hg, bg, n->lo));
          const double m_hi = model(planner.uniform(hg, bg, n->hi));
          const double m = model(own ? query : planner.uniform(hg, bg, mean_tokens));
          if (m_hi > m_lo) w = std::clamp((m - m_lo) / (m_hi - m_lo), 0.0, 1.0);
        }
        return *lo + w * (*hi - *lo);
      };
      // Power law between grid values of heads and rows, as table_time_s.
      auto along = [](const Bracket& g, double x, const std::optional<double>& lo,
                      const std::optional<double>& hi) -> std::optional<double> {
        if (g.on_grid || !lo) return lo;
        if (!hi) return std::nullopt;
        const double w = (std::log(x) - std::log(g.lo)) / (std::log(g.hi) - std::log(g.lo));
        return std::exp((1.0 - w) * std::log(*lo) + w * std::log(*hi));
      };
      // Heads or rows between measured ones, where the schedule is not monotone between them (24 rows of
      // 4,096 tokens at 128 heads cut into 72 FlashInfer chunks for 66 clusters, six of which take two, where
      // 16 and 32 rows give each cluster one; 96 GQA rows of 3 KV heads need two waves of dcpsim's blocks
      // where 64 rows of 2 need one): on each neighbouring slice, the time at which that slice does the
      // query's work (its fitted model of the schedule equal to the query's), then the power law.
      auto matched = [&](double hg, double bg) -> std::optional<double> {
        const auto cost = costs(hg, bg);
        if (!cost) return on_slice(hg, bg);
        const double want = cost->load * query.load + cost->chunks * query.chunks;
        std::optional<double> prev_t;
        double prev_m = 0.0;
        for (double tok : table.grid[2]) {
          const double at[] = {hg, bg, tok};
          const auto t = table_time_s(table, at);
          if (!t) continue;
          const PlanFeatures f = planner.uniform(hg, bg, tok);
          const double m = cost->load * f.load + cost->chunks * f.chunks;
          if (!prev_t && m >= want) return m == want ? t : std::nullopt;  // below the slice's measured work
          if (prev_t && m >= want && m > prev_m)
            return *prev_t + (want - prev_m) / (m - prev_m) * (*t - *prev_t);
          prev_t = t;
          prev_m = m;
        }
        return std::nullopt;  // above the slice's measured work: not read off this table
      };
      // Where the query's critical-path load lies between its neighbours' along every off-grid axis, the
      // power laws hold; otherwise the time follows the work.
      auto within = [&](double lo, double hi) {
        return std::min(lo, hi) <= query.load && query.load <= std::max(lo, hi);
      };
      const bool regular = (b->on_grid || within(planner.uniform(heads, b->lo, mean_tokens).load,
                                                 planner.uniform(heads, b->hi, mean_tokens).load)) &&
                           (h->on_grid || within(planner.uniform(h->lo, rows, mean_tokens).load,
                                                 planner.uniform(h->hi, rows, mean_tokens).load));
      auto slice = [&](double hg, double bg) { return regular ? on_slice(hg, bg) : matched(hg, bg); };
      // Between two slices: matched values are the query's work on each, so the power law; otherwise where
      // the query's load lies between theirs, linearly in time (leave-one-out along rows on the committed
      // H200 tables, neighbours 4x apart: FlashInfer 3.7% / 17.3% median / p90 against 5.1% / 18.4% for the
      // power law; dcpsim's kernels 1.1% / 7.8% against 1.6% / 9.5%).
      auto between = [&](const Bracket& g, double x, const std::optional<double>& lo,
                         const std::optional<double>& hi, double load_lo,
                         double load_hi) -> std::optional<double> {
        if (regular && load_hi != load_lo && lo && hi)
          return *lo + std::clamp((query.load - load_lo) / (load_hi - load_lo), 0.0, 1.0) * (*hi - *lo);
        return along(g, x, lo, hi);
      };
      auto at_heads = [&](double hg) -> std::optional<double> {
        const auto lo = slice(hg, b->lo);
        if (b->on_grid || !lo) return lo;
        return between(*b, rows, lo, slice(hg, b->hi), planner.uniform(hg, b->lo, mean_tokens).load,
                       planner.uniform(hg, b->hi, mean_tokens).load);
      };
      const auto lo = at_heads(h->lo);
      std::optional<double> t = lo;
      if (!h->on_grid && lo) {
        t = between(*h, heads, lo, at_heads(h->hi), planner.uniform(h->lo, rows, mean_tokens).load,
                    planner.uniform(h->hi, rows, mean_tokens).load);
      }
      if (t) return t;
    }
  }
  return std::nullopt;
}

constexpr std::size_t kCosts = std::tuple_size_v<decltype(PlanFeatures::cost)>;
constexpr std::size_t kMergeCosts = 4;  // the costs from here on are the merge's (split rows only)

// A point's cost features and its time (ns) as one row of a fit.
std::vector<double> cost_row(const PlanFeatures& f, double ns) {
  std::vector<double> x(f.cost.begin(), f.cost.end());
  x.push_back(ns);
  return x;
}

// The non-negative costs (ns per unit of each feature) that fit the rows' times in relative error: features
// taken in order where each adds rank to those before it (a feature zero on every row, or one column with
// another, stays out at 0), then, while a cost comes out negative, the most negative one's feature leaves
// and the rest are refitted. nullopt for fewer than two rows per feature or no feature left.
std::optional<std::vector<double>> fit_costs(std::vector<std::vector<double>> xs) {
  const std::size_t k = kCosts;
  if (xs.size() < 2 * k) return std::nullopt;
  for (auto& x : xs) {
    const double w = 1.0 / x[k];
    for (double& v : x) v *= w;
  }
  std::vector<double> unit(k, 0.0);
  for (const auto& x : xs)
    for (std::size_t i = 0; i < k; ++i) unit[i] = std::max(unit[i], std::abs(x[i]));
  std::vector<int> cols;
  for (std::size_t i = 0; i < k; ++i) {
    if (!(unit[i] > 0.0)) continue;
    for (auto& x : xs) x[i] /= unit[i];
    cols.push_back(static_cast<int>(i));
    if (!solve_normal(xs, cols)) cols.pop_back();
  }
  std::vector<double> c(k, 0.0);
  for (;;) {
    if (cols.empty()) return std::nullopt;
    const auto sol = solve_normal(xs, cols);
    if (!sol) return std::nullopt;
    const auto most = std::min_element(sol->begin(), sol->end());
    if (*most >= 0.0) {
      for (std::size_t i = 0; i < cols.size(); ++i)
        c[static_cast<std::size_t>(cols[i])] = (*sol)[i] / unit[static_cast<std::size_t>(cols[i])];
      return c;
    }
    cols.erase(cols.begin() + (most - sol->begin()));
  }
}

// The fitted-schedule reading (TableInterpolation::kFittedSchedule) of a table measured over (heads, rows,
// tokens): on each measured heads value around the query's, the schedule's cost model (PlanFeatures::cost)
// fitted in relative error with no negative cost on the table's points of the rows values around the query's
// (its bracket and one more on each side where the table has them, every tokens value; the merge's costs on
// every point of that heads value where the query merges more than any point of that window), times the
// measured / modelled ratio of
// the four measured neighbours, interpolated multilinearly in log ratio over log rows and log tokens; then
// the power law in heads. Exact at measured points; between them the model carries the schedule's steps (a
// row cut into a long chunk and a short one, a cluster given two chunks) that neither neighbour shows, and
// the ratio what the model misses there. On the H100's FlashInfer MLA table, 486 shapes measured between its
// grids (traces/measured/h100-mla-probe): 2.53% / 7.64% median / p90 against 3.37% / 10.96% for the schedule
// reading. A feature constant over the window (other than the merge's) is fitted no cost: a query beyond it
// there is priced as if it cost nothing more (none of the probe's shapes or held-out steps was found so).
// nullopt when no table of `key` covers the shape or a fit fails.
std::optional<double> fitted_table_time_s(const HardwareProfile& p, const AttentionShape& a,
                                          std::span<const int64_t> local_tokens, double mean_tokens,
                                          const std::string& key, double heads, const Planner& planner) {
  const double rows = double(local_tokens.size());
  const PlanFeatures query = planner.plan(a.heads, local_tokens);
  const auto dot = [](const std::vector<double>& c, const PlanFeatures& f) {
    double m = 0.0;
    for (std::size_t i = 0; i < c.size(); ++i) m += c[i] * f.cost[i];
    return m;
  };
  for (const KernelTables& file : p.tables) {
    for (const KernelTable& table : file.tables) {
      if (!schedule_readable(table, key)) continue;
      const auto h = bracket(table.grid[0], heads);
      const auto b = bracket(table.grid[1], rows);
      const auto n = bracket(table.grid[2], mean_tokens);
      if (!h || !b || !n) continue;
      const std::vector<double>& row_grid = table.grid[1];
      const auto index = [&](double v) {
        return std::size_t(std::lower_bound(row_grid.begin(), row_grid.end(), v) - row_grid.begin());
      };
      const std::size_t first = index(b->lo) > 0 ? index(b->lo) - 1 : 0;
      const std::size_t last = std::min(index(b->hi) + 1, row_grid.size() - 1);
      const auto log_weight = [](const Bracket& g, double x) {
        return g.on_grid ? 0.0 : (std::log(x) - std::log(g.lo)) / (std::log(g.hi) - std::log(g.lo));
      };
      const double wb = log_weight(*b, rows), wn = log_weight(*n, mean_tokens);
      // The query's time on the heads value `hg` under the fitted costs `c`.
      auto priced = [&](double hg,
                        const std::optional<std::vector<double>>& fitted) -> std::optional<double> {
        if (!fitted) return std::nullopt;
        const std::vector<double>& c = *fitted;
        // The log ratio measured / modelled at the four neighbours, multilinear over log rows and log tokens.
        double log_ratio = 0.0;
        for (const auto& [bg, w_b] : {std::pair{b->lo, 1.0 - wb}, std::pair{b->hi, wb}}) {
          for (const auto& [ng, w_n] : {std::pair{n->lo, 1.0 - wn}, std::pair{n->hi, wn}}) {
            if (w_b * w_n == 0.0) continue;
            const double at[] = {hg, bg, ng};
            const auto t = table_time_s(table, at);
            const double m = dot(c, planner.uniform(hg, bg, ng));
            if (!t || !(m > 0.0)) return std::nullopt;
            log_ratio += w_b * w_n * std::log(*t / (m * 1e-9));
          }
        }
        const double mq = dot(c, query);
        if (!(mq > 0.0)) return std::nullopt;
        return mq * 1e-9 * std::exp(log_ratio);
      };
      auto on_heads = [&](double hg) -> std::optional<double> {
        std::vector<std::vector<double>> xs;  // the window's points
        std::array<double, kCosts> most{};    // the largest of each feature over the window
        for (const TablePoint& pt : table.points) {
          if (pt.at[0] != hg || pt.at[1] < row_grid[first] || pt.at[1] > row_grid[last]) continue;
          xs.push_back(cost_row(planner.uniform(hg, pt.at[1], pt.at[2]), pt.median_ns));
          for (std::size_t i = 0; i < kCosts; ++i) most[i] = std::max(most[i], xs.back()[i]);
        }
        bool beyond = false;  // the query merges more than any point of the window
        for (std::size_t i = kMergeCosts; i < kCosts; ++i) beyond = beyond || query.cost[i] > most[i];
        if (!beyond) return priced(hg, fit_costs(xs));
        // Rows are split, and so merged, only where they are fewer than the clusters (a batch of many rows of
        // one length never is), so a window of many rows holds no merge while mixed rows split their long
        // ones: the merge's costs then come from every point of this heads value, the others from the
        // window, on what the merge leaves of each time.
        std::vector<double> merge;
        {
          const std::string memo = "fitted-schedule merge costs, " + std::to_string(p.gpu.sm_count.si()) +
                                   " SMs, heads " + std::to_string(hg);
          const std::lock_guard<std::mutex> lock(table.memo->mutex);
          auto it = table.memo->values.find(memo);
          if (it == table.memo->values.end()) {
            std::vector<std::vector<double>> all;
            for (const TablePoint& pt : table.points)
              if (pt.at[0] == hg)
                all.push_back(cost_row(planner.uniform(hg, pt.at[1], pt.at[2]), pt.median_ns));
            it = table.memo->values.emplace(memo, fit_costs(all).value_or(std::vector<double>{})).first;
          }
          merge = it->second;
        }
        if (merge.empty()) return priced(hg, fit_costs(xs));
        std::vector<std::vector<double>> rest = xs;
        for (auto& x : rest) {
          for (std::size_t i = kMergeCosts; i < kCosts; ++i) {
            x[kCosts] -= merge[i] * x[i];
            x[i] = 0.0;
          }
          if (!(x[kCosts] > 0.0)) return priced(hg, fit_costs(xs));  // the merge leaves nothing: the window's
        }
        std::optional<std::vector<double>> fitted = fit_costs(rest);
        if (fitted)
          for (std::size_t i = kMergeCosts; i < kCosts; ++i) (*fitted)[i] = merge[i];
        return priced(hg, fitted);
      };
      const auto lo = on_heads(h->lo);
      if (!lo) continue;
      if (h->on_grid) return lo;
      const auto hi = on_heads(h->hi);
      if (!hi) continue;
      const double w = log_weight(*h, heads);
      return std::exp((1.0 - w) * std::log(*lo) + w * std::log(*hi));
    }
  }
  return std::nullopt;
}

// The implementation a shape's table time is read as: its own, or where it names none the first one a table
// measured for its geometry (as attention_table_time_s looks it up, a table of no implementation first), so
// that its schedule guides the interpolation too. Only the table lookup: the analytic model keeps the shape
// as given.
AttentionShape with_measured_impl(const HardwareProfile& p, AttentionShape a) {
  if (!a.impl.empty()) return a;
  const std::string bare = attention_table_key(a), base = bare + " ";
  for (const KernelTables& file : p.tables)  // a table of no implementation comes first, as in that lookup
    for (const KernelTable& t : file.tables)
      if (t.kernel == TableKernel::kAttention && t.key == bare) return a;
  for (const KernelTables& file : p.tables)
    for (const KernelTable& t : file.tables)
      if (t.kernel == TableKernel::kAttention && t.key.size() > base.size() &&
          t.key.compare(0, base.size(), base) == 0) {
        a.impl = t.key.substr(base.size());
        return a;
      }
  return a;
}

// The query-head group sizes (H / H_kv) the profile's GQA tables measured for `a`'s dims and element type
// (keys "gqa qk<Dqk> d<D> g<G> <dtype>[ <impl>]"), ascending, all of one implementation: `a`'s, or where it
// names none the first one listed (so that two groups of different kernels are never mixed); `impl` is set
// to it. A table of no implementation serves every one.
std::vector<int> measured_gqa_groups(const HardwareProfile& p, const AttentionShape& a, std::string& impl) {
  const std::string head = "gqa qk" + std::to_string(a.qk_dim) + " d" + std::to_string(a.head_dim) + " g";
  const std::string tail = " " + std::string(to_string(a.kv_dtype));
  impl = a.impl;
  bool chosen = !a.impl.empty();
  std::vector<int> out;
  for (const KernelTables& file : p.tables) {
    for (const KernelTable& t : file.tables) {
      if (t.kernel != TableKernel::kAttention || t.key.compare(0, head.size(), head) != 0) continue;
      std::size_t end = head.size();
      while (end < t.key.size() && std::isdigit(static_cast<unsigned char>(t.key[end]))) ++end;
      if (end == head.size() || end - head.size() > 5) continue;
      const int g = std::stoi(t.key.substr(head.size(), end - head.size()));
      const std::string rest = t.key.substr(end);
      if (g < 1 || g > kMaxHeads || rest.compare(0, tail.size(), tail) != 0) continue;
      std::string suffix;  // the implementation, "" for none
      if (rest.size() > tail.size()) {
        if (rest[tail.size()] != ' ' || rest.size() == tail.size() + 1) continue;
        suffix = rest.substr(tail.size() + 1);
      }
      if (!chosen && !suffix.empty()) {
        impl = suffix;
        chosen = true;
      }
      if (suffix.empty() || suffix == impl) out.push_back(g);
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// GQA at a group size no table measured but two bracket (the H200 tables hold groups 1, 4, 8 and 16; a model
// with 96 query heads over 8 KV heads has 12): the same KV heads and rows at the nearest measured group below
// and above, each from its table, linear in the group between them. Both read the same KV bytes and run
// blocks per KV head (for groups up to 16 one block holds the whole group in dcpsim's kernel); the group sets
// the query heads each block multiplies and the Q and O bytes. Exact at a measured group; nullopt outside the
// measured groups (the analytic model then, marked as such).
std::optional<double> between_groups_time_s(const HardwareProfile& p, const AttentionShape& a,
                                            std::span<const int64_t> local_tokens) {
  if (a.shared_kv || a.kv_heads < 1 || a.heads % a.kv_heads != 0) return std::nullopt;
  const int g = a.heads / a.kv_heads;
  std::string impl;
  const std::vector<int> groups = measured_gqa_groups(p, a, impl);
  const auto hi = std::upper_bound(groups.begin(), groups.end(), g);
  if (hi == groups.begin() || hi == groups.end()) return std::nullopt;
  const int g_lo = *std::prev(hi), g_hi = *hi;
  if (g_lo == g) return std::nullopt;  // measured: its own table decided
  const auto at_group = [&](int group) -> std::optional<double> {
    if (std::int64_t(a.kv_heads) * group > kMaxHeads) return std::nullopt;
    AttentionShape b = a;
    b.heads = a.kv_heads * group;
    b.impl = impl;
    const AttentionTiming t = decode_attention_time(p, b, local_tokens, true);
    if (t.source != FigureSource::kTable) return std::nullopt;
    return t.kernel_end_s + t.combine_s;
  };
  const auto lo = at_group(g_lo);
  const auto up = lo ? at_group(g_hi) : std::nullopt;
  if (!lo || !up) return std::nullopt;
  const double w = double(g - g_lo) / double(g_hi - g_lo);
  return *lo + w * (*up - *lo);
}

// The kernel's time (attention and split-KV combine) from the profile's tables at (heads computed, rows, mean
// tokens of the non-empty rows): every analytic time is scaled by measured / analytic, so per-row order and
// the waves' shares stay the model's while the total is the measurement.
void apply_table(const HardwareProfile& p, const AttentionShape& shape, std::span<const int64_t> local_tokens,
                 AttentionTiming& t) {
  const AttentionShape a = with_measured_impl(p, shape);
  int64_t tokens = 0, nonempty = 0;
  for (int64_t n : local_tokens) {
    tokens += n;
    nonempty += n > 0;
  }
  if (nonempty == 0) return;
  const double mean = double(tokens) / double(nonempty);
  const double at[] = {attention_table_heads(p, a), double(local_tokens.size()), mean};
  std::optional<double> measured;
  const int sms = static_cast<int>(p.gpu.sm_count.si());
  const std::string key = attention_table_key(a) + " " + a.impl;
  // Rows of unequal length (a serving batch) on dcpsim's kernel: it splits every row by its longest row's
  // tiles, so the long rows' blocks outlast the others and then stream alone, where rows of the mean length
  // would not. Its tables are read for as many rows of their mean length, and that time is scaled by its
  // block schedule's time of the rows as they are over theirs (dcpsim_attention_makespan, with the block
  // bandwidth the profile fitted on steps of mixed rows). FlashInfer's planner cuts the batch's tokens into
  // chunks of one length whatever the rows: its fitted schedule prices the plan of the rows as they are.
  std::vector<int64_t> even(local_tokens.begin(), local_tokens.end());
  bool mixed = false;
  const int64_t length = std::max<int64_t>(1, std::llround(mean));
  for (int64_t& n : even) {
    if (n == 0) continue;
    mixed = mixed || n != length;
    n = length;
  }
  double saturating = 0.0;  // dcpsim_attention_makespan's; 0: rows read as they are
  if (mixed && a.impl == "dcpsim" && p.attention.dcpsim_block_bandwidth)
    saturating = p.gpu.hbm_bandwidth_measured.si() * p.kernel.hbm_efficiency_max.si() /
                 p.attention.dcpsim_block_bandwidth->si();
  const std::span<const int64_t> read_rows =
      saturating >= 1.0 ? std::span<const int64_t>(even) : local_tokens;
  // The table's interpolation method (kernel_table.h TableInterpolation): its schedule, a power law, or the
  // mean of the two, as leave-one-out on its own points chose.
  TableInterpolation how = TableInterpolation::kSchedule;
  // The first table of the key, as planned_table_time_s and table_loo.h read it.
  [&] {
    for (const KernelTables& file : p.tables)
      for (const KernelTable& table : file.tables)
        if (table.kernel == TableKernel::kAttention && table.key == key) {
          how = table.interpolation;
          return;
        }
  }();
  const auto planned = [&](const Planner& planner) -> std::optional<double> {
    if (how == TableInterpolation::kPowerLaw) return std::nullopt;
    if (how == TableInterpolation::kFittedSchedule) {  // where its fit fails, the schedule reading
      if (auto fitted = fitted_table_time_s(p, a, read_rows, mean, key, at[0], planner)) return fitted;
    }
    const std::optional<double> read = planned_table_time_s(p, a, read_rows, mean, key, at[0], planner);
    if (how != TableInterpolation::kMean || !read) return read;
    const std::optional<double> power = attention_table_time_s(p, a, at);
    return power ? 0.5 * (*read + *power) : read;
  };
  if (a.shared_kv && a.impl == "flashinfer") {
    const Planner planner{[&](int heads, std::span<const int64_t> rows) {
                            const MlaPlanCost c = flashinfer_mla_plan_cost(heads, rows, sms);
                            return PlanFeatures{
                                double(c.critical_tokens),
                                double(c.max_chunks),
                                {1.0, double(c.critical_items), double(c.critical_tokens), c.mean_tokens,
                                 double(c.merge_partials), double(c.merge_rows)}};
                          },
                          {}};
    measured = planned(planner);
  } else if (a.impl == "dcpsim") {
    const Planner planner{
        [&](int heads, std::span<const int64_t> rows) {
          const DcpsimPlan d = dcpsim_attention_plan(a.shared_kv, a.heads / a.kv_heads, heads, rows, sms);
          double all = 0.0;
          for (int64_t r : rows) all += double(r);
          return PlanFeatures{
              double(d.waves * d.block_tokens),
              double(d.splits),
              {1.0, double(d.waves), double(d.waves * d.block_tokens), all / sms, double(d.splits), 0.0}};
        },
        {}};
    measured = planned(planner);
  }
  if (!measured) measured = attention_table_time_s(p, a, at);
  if (measured && saturating >= 1.0) {
    const int group = a.heads / a.kv_heads;
    const double as_run =
        dcpsim_attention_makespan(a.shared_kv, group, a.heads, local_tokens, sms, saturating);
    const double at_mean = dcpsim_attention_makespan(a.shared_kv, group, a.heads, even, sms, saturating);
    if (at_mean > 0.0) *measured *= as_run / at_mean;
  }
  if (!measured) measured = between_groups_time_s(p, a, local_tokens);
  // An implementation imported from a profiler trace (not the runner's own): its model off its table's grid.
  const bool imported = !a.impl.empty() && a.impl != "dcpsim" && a.impl != "flashinfer";
  if (!measured && imported)
    measured =
        lookup_model_time_s(p.tables, TableKernel::kAttention, key, attention_io_bytes(a, local_tokens));
  const double analytic = t.kernel_end_s + t.combine_s;
  if (!measured || !(analytic > 0)) return;
  const double scale = *measured / analytic;
  for (double& x : t.row_done_s) x *= scale;
  for (double& x : t.wave_end_s) x *= scale;
  t.kernel_end_s *= scale;
  t.combine_s *= scale;
  t.source = FigureSource::kTable;
  // FlashInfer's MLA kernel merges its splits in the same launch; an imported implementation's table holds
  // its whole phase as the engine ran it (kernels and the gaps between them).
  t.table_one_launch = (a.shared_kv && a.impl == "flashinfer") || imported;
}

}  // namespace

namespace {

// vLLM PR #40750's tuned TRITON_MLA configurations for SM120 with an fp8 KV cache
// (vllm/v1/attention/backends/ mla/triton_mla_tuning.py of github.com/voipmonitor/vllm, the stack the
// rtx6kpro images run), its max_model_len 262144 bucket: query heads, rows bucket -> KV splits, heads per
// CTA. vLLM takes the largest rows bucket at or below the rows (the smallest below it); head counts it does
// not list take the heuristic.
struct TritonConfig {
  int heads, rows, splits, block_h;
};
constexpr std::array<TritonConfig, 27> kSm120Fp8Configs{{
    {16, 1, 64, 8},    {16, 2, 64, 16},   {16, 4, 32, 16},  {16, 8, 64, 16},  {16, 16, 32, 16},
    {16, 32, 16, 16},  {16, 64, 8, 16},   {16, 128, 4, 16}, {16, 256, 8, 16}, {64, 1, 32, 16},
    {64, 2, 64, 16},   {64, 4, 32, 16},   {64, 8, 16, 16},  {64, 16, 16, 32}, {64, 32, 8, 32},
    {64, 64, 4, 32},   {64, 128, 8, 32},  {64, 256, 4, 32}, {128, 1, 64, 16}, {128, 2, 32, 16},
    {128, 4, 16, 16},  {128, 8, 16, 32},  {128, 16, 8, 32}, {128, 32, 4, 32}, {128, 64, 8, 32},
    {128, 128, 4, 32}, {128, 256, 2, 32},
}};

// A grid past this many CTAs is not a decode step (vLLM's grid.y and grid.z stay far below it too).
constexpr int64_t kMaxTritonUnits = int64_t{1} << 28;

struct TritonGeometry {
  int block_h = 8;
  int splits = 1;
};

TritonGeometry triton_geometry(const TritonMlaSpec& t, const AttentionShape& a, int rows) {
  if (t.sm120_fp8_table.si() == 1 && a.kv_dtype == DType::kFP8E4M3) {
    const TritonConfig* pick = nullptr;
    for (const TritonConfig& c : kSm120Fp8Configs) {
      if (c.heads == a.heads && (pick == nullptr || c.rows <= rows)) pick = &c;
    }
    if (pick != nullptr) return {pick->block_h, pick->splits};
  }
  // vLLM's CUDA-graph-safe heuristic: about split_target CTAs over rows x ceil(H / 8) head blocks (8 fixed in
  // vLLM's rule, whatever the CTA's heads).
  const int block_h = static_cast<int>(t.block_h.si());
  const int64_t head_blocks = std::max<int64_t>(1, ceil_div(a.heads, 8));
  const int64_t target =
      std::max<int64_t>(1, static_cast<int64_t>(t.split_target.si()) / (rows * head_blocks));
  int64_t p2 = 1;
  while (p2 * 2 <= target) p2 *= 2;
  return {block_h, static_cast<int>(std::min<int64_t>(p2, static_cast<int64_t>(t.max_splits.si())))};
}

// The Triton MLA path of decode_attention_time (see TritonMlaSpec). Grid (rows, head groups, splits), rows
// fastest; unit i runs in wave i / slots. A unit loads its split of its row's KV; it reads DRAM unless the
// same KV was read shortly before: by the previous row of one request's verify block (the next unit in the
// grid) or by the previous head group (rows units earlier), found in the L2 when the two are resident at once
// or the bytes streamed between them fit in it. A wave lasts cta_overhead + the largest of its DRAM bytes
// over the kernel's bandwidth, its largest unit's loads at attention.max_cta_bandwidth, and its largest
// unit's FLOPs (at least mma_min_heads heads) at its SM's share of triton_mla.tensor_rate.
AttentionTiming triton_mla_time(const HardwareProfile& p, const AttentionShape& a,
                                std::span<const int64_t> local_tokens) {
  const TritonMlaSpec& spec = *p.attention.triton_mla;
  AttentionTiming t;
  const int rows = static_cast<int>(local_tokens.size());
  const double floor = p.attention.floor.si();
  t.slots = static_cast<int>(std::min(p.gpu.sm_count.si() * spec.ctas_per_sm.si(), double(kMaxTritonUnits)));
  t.row_done_s.assign(rows, floor);
  t.row_splits.assign(rows, 0);
  t.row_last_wave.assign(rows, -1);
  t.kernel_end_s = floor;
  t.all_rows_combined = true;  // the reduce kernel writes every row
  int64_t longest = 0;
  for (int64_t n : local_tokens) {
    if (n < 0) throw InputError("attention: local token count must be >= 0, got " + std::to_string(n));
    longest = std::max(longest, n);
  }
  if (longest == 0) return t;  // nothing to read: the kernel's floor, every row empty

  const TritonGeometry g = triton_geometry(spec, a, rows);
  const int groups = static_cast<int>(ceil_div(a.heads, g.block_h));
  const int splits = g.splits;
  t.split_tokens = ceil_div(longest, splits);
  const int per_kv = std::max(1, a.rows_per_kv);
  const double kv_token = kv_bytes_per_token(a);
  const double l2 = p.gpu.l2_size.si();
  const double flops_head_token = attention_flops_per_head_token(a);
  const double mma_heads = spec.mma_min_heads.si();

  struct Wave {
    int busy = 0;  // units with KV to read
    double dram = 0.0, max_loaded = 0.0, max_flops = 0.0;
  };
  const int64_t units = int64_t(rows) * groups * splits;
  if (units > kMaxTritonUnits) {
    throw InputError("attention: vLLM's Triton MLA grid of " + std::to_string(rows) + " rows x " +
                     std::to_string(groups) + " head groups x " + std::to_string(splits) +
                     " splits exceeds " + std::to_string(kMaxTritonUnits) + " CTAs");
  }
  std::vector<Wave> waves(static_cast<std::size_t>(ceil_div(units, t.slots)));
  // A re-read `distance` units after the first read of the same KV finds it in the L2.
  auto hits = [&](int64_t distance, double bytes) {
    return distance < t.slots || double(distance) * bytes <= l2;
  };
  for (int s = 0; s < splits; ++s) {
    for (int grp = 0; grp < groups; ++grp) {
      const double heads = std::min(g.block_h, a.heads - grp * g.block_h);
      for (int b = 0; b < rows; ++b) {
        const int64_t n = local_tokens[b];
        const int64_t per_split = ceil_div(n, splits);
        const int64_t tokens = std::clamp<int64_t>(n - int64_t(s) * per_split, 0, per_split);
        const int64_t index = b + int64_t(rows) * (grp + int64_t(groups) * s);
        if (tokens == 0) continue;
        const double bytes = double(tokens) * kv_token;
        const bool first_row = b % per_kv == 0;
        const bool reread = !first_row || grp > 0;
        const int64_t distance = first_row ? rows - per_kv + 1 : 1;
        Wave& w = waves[static_cast<std::size_t>(index / t.slots)];
        ++w.busy;
        if (!reread || !hits(distance, bytes)) w.dram += bytes;
        w.max_loaded = std::max(w.max_loaded, bytes);
        w.max_flops = std::max(w.max_flops, double(tokens) * flops_head_token * std::max(heads, mma_heads));
        t.total_bytes += bytes;
      }
    }
  }
  double dram = 0.0;
  for (const Wave& w : waves) dram += w.dram;
  for (int b = 0; b < rows; ++b) {
    if (local_tokens[b] == 0) continue;
    t.row_splits[b] = splits;
    const int64_t last = b + int64_t(rows) * ((groups - 1) + int64_t(groups) * (splits - 1));
    t.row_last_wave[b] = static_cast<int>(last / t.slots);
    t.total_bytes += row_io_bytes(a);
  }
  t.work_units = static_cast<int>(units);
  t.waves = static_cast<int>(waves.size());
  t.total_flops = flops_head_token * a.heads *
                  double(std::accumulate(local_tokens.begin(), local_tokens.end(), int64_t{0}));
  const double kernel_bw = p.gpu.hbm_bandwidth_measured.si() * hbm_efficiency(p, dram);
  const double sms = p.gpu.sm_count.si();
  const double sm_rate = spec.tensor_rate.si() / sms;
  double end = floor;
  for (const Wave& w : waves) {
    const double per_sm = std::ceil(double(w.busy) / sms);
    const double work =
        std::max({w.dram > 0 ? w.dram / kernel_bw : 0.0, w.max_loaded / p.attention.max_cta_bandwidth.si(),
                  w.max_flops * per_sm / sm_rate});
    end += p.attention.cta_overhead.si() + work;
    t.wave_end_s.push_back(end);
  }
  t.kernel_end_s = end;
  for (int b = 0; b < rows; ++b) {
    if (t.row_last_wave[b] >= 0) t.row_done_s[b] = t.wave_end_s[t.row_last_wave[b]];
  }
  // The reduce kernel reads every row's fp32 partials and LSEs and writes its output.
  t.needs_combine = true;
  for (int b = 0; b < rows; ++b) {
    t.combine_bytes +=
        a.heads * (splits * (a.head_dim * 4.0 + 4.0) + a.head_dim * double(dtype_bytes(a.out_dtype)) + 4.0);
  }
  t.combine_s = memory_kernel_time(p, t.combine_bytes);
  return t;
}

}  // namespace

// dcpsim's own kernel, FlashInfer's and row-stream's pushing kernel keep their models and tables.
bool uses_triton_mla(const HardwareProfile& p, const AttentionShape& a) {
  return p.attention.triton_mla && a.shared_kv && a.impl.empty() && !a.pushes_rows;
}

AttentionTiming decode_attention_time(const HardwareProfile& p, const AttentionShape& a,
                                      std::span<const int64_t> local_tokens, bool use_tables) {
  check_shape(a);
  if (uses_triton_mla(p, a)) return triton_mla_time(p, a, local_tokens);
  AttentionTiming t;
  const int rows = static_cast<int>(local_tokens.size());
  const int groups = head_groups(p, a);
  const double floor = p.attention.floor.si();
  t.slots = static_cast<int>(p.gpu.sm_count.si() * p.attention.ctas_per_sm.si());
  t.row_done_s.assign(rows, floor);  // an empty row writes its −inf LSE in the prologue
  t.row_splits.assign(rows, 0);
  t.row_last_wave.assign(rows, -1);
  t.kernel_end_s = floor;

  int64_t total_tokens = 0;
  for (int64_t n : local_tokens) {
    if (n < 0) throw InputError("attention: local token count must be >= 0, got " + std::to_string(n));
    total_tokens += n;
  }
  if (total_tokens == 0) return t;

  const double kv_per_token = unit_kv_bytes_per_token(p, a);
  t.split_tokens = choose_split_tokens(local_tokens, groups, t.slots,
                                       static_cast<int64_t>(p.attention.work_unit_tokens.si()));
  // Units in launch order: row by row, split by split, head group by head group; unit i runs in wave i /
  // slots.
  std::vector<double> wave_max_bytes;  // of the wave's largest unit (its FLOPs scale with the same tokens)
  std::vector<int> wave_units;
  int64_t unit = 0;
  // `count` consecutive units of `bytes` each, a wave at a time.
  auto add_units = [&](int64_t count, double bytes) {
    while (count > 0) {
      const auto wave = static_cast<std::size_t>(unit / t.slots);
      const int64_t here = std::min(count, t.slots - unit % t.slots);
      if (wave >= wave_max_bytes.size()) {
        wave_max_bytes.push_back(0.0);
        wave_units.push_back(0);
      }
      wave_max_bytes[wave] = std::max(wave_max_bytes[wave], bytes);
      wave_units[wave] += static_cast<int>(here);
      for (int64_t i = 0; i < here; ++i) t.total_bytes += bytes;  // unit by unit: the same sum as before
      unit += here;
      count -= here;
    }
  };
  for (int b = 0; b < rows; ++b) {
    const int splits = static_cast<int>(ceil_div(local_tokens[b], t.split_tokens));
    t.row_splits[b] = splits;
    if (splits == 0) continue;
    // Every split but the last is split_tokens long.
    add_units(int64_t(splits - 1) * groups, kv_per_token * double(t.split_tokens));
    add_units(groups, kv_per_token * double(local_tokens[b] - int64_t(splits - 1) * t.split_tokens));
    t.row_last_wave[b] = static_cast<int>((unit - 1) / t.slots);
    t.total_bytes += row_io_bytes(a);
  }
  t.work_units = static_cast<int>(unit);
  t.waves = static_cast<int>(wave_max_bytes.size());
  const double flops_per_token = attention_flops_per_head_token(a) * heads_per_work_unit(p, a);
  t.total_flops = attention_flops_per_head_token(a) * a.heads * double(total_tokens);

  // The units of a wave share the kernel's bandwidth, none faster than one CTA can stream, and each gets its
  // SM's share of the tensor-core rate (split among the units resident on that SM); a wave lasts as long as
  // its largest unit's slower side.
  const double kernel_bw = p.gpu.hbm_bandwidth_measured.si() * hbm_efficiency(p, t.total_bytes);
  const double sms = p.gpu.sm_count.si();
  const double sm_rate = p.attention.tensor_rate.si() / sms;
  double end = floor;
  for (std::size_t w = 0; w < wave_max_bytes.size(); ++w) {
    const double unit_bw = std::min(kernel_bw / wave_units[w], p.attention.max_cta_bandwidth.si());
    const double per_sm = std::ceil(double(wave_units[w]) / sms);
    const double tokens = wave_max_bytes[w] / kv_per_token;
    const double memory_s = wave_max_bytes[w] / unit_bw;
    const double compute_s = tokens * flops_per_token * per_sm / sm_rate;
    end += p.attention.cta_overhead.si() + std::max(memory_s, compute_s);
    t.wave_end_s.push_back(end);
  }
  t.kernel_end_s = end;
  for (int b = 0; b < rows; ++b) {
    if (t.row_last_wave[b] >= 0) t.row_done_s[b] = t.wave_end_s[t.row_last_wave[b]];
  }

  // Combine reads every split's fp32 partial and LSE of the split rows and writes their final output once.
  // dcpsim's kernel writes every row through that pass, split or not (its split kernel keeps fp32 partials;
  // only row-stream's push takes a one-split row from the split kernel itself): each row is final when the
  // combine has written it, as its row stamps show.
  t.all_rows_combined = a.impl == "dcpsim" && !a.pushes_rows;
  for (int b = 0; b < rows; ++b) {
    if (!t.combined(b) || t.row_splits[b] == 0) continue;
    t.needs_combine = true;
    t.combine_bytes += a.heads * (t.row_splits[b] * (a.head_dim * 4.0 + 4.0) +
                                  a.head_dim * double(dtype_bytes(a.out_dtype)) + 4.0);
  }
  if (t.needs_combine) t.combine_s = memory_kernel_time(p, t.combine_bytes);
  if (use_tables && !p.tables.empty()) apply_table(p, a, local_tokens, t);
  return t;
}

}  // namespace dcpsim::models
