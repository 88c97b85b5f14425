// Communication tables: merging points, checking, and the interpolated lookup (JSON in comm_table_json.cc).
#include "dcpsim/models/comm_table.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <sstream>
#include <string>
#include <tuple>

#include "dcpsim/error.h"

namespace dcpsim::models {
namespace {

std::string comm_lowered(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

// Element width class of a normalised type: reductions over half and bfloat16 move the same bytes.
int width_of(const std::string& dtype) {
  if (dtype == "half" || dtype == "bfloat16") return 2;
  if (dtype == "float" || dtype == "int" || dtype == "uint32") return 4;
  if (dtype == "double" || dtype == "int64" || dtype == "uint64") return 8;
  if (dtype == "int8" || dtype == "uint8" || dtype == "char" || dtype == "fp8_e4m3" || dtype == "fp8_e5m2")
    return 1;
  return 0;
}

// Time at `size` from the points of one group (sorted by size), or nullopt outside their range.
std::optional<double> along_size(const std::vector<const CommPoint*>& pts, double size, bool& exact) {
  if (pts.empty() || size < pts.front()->size_bytes || size > pts.back()->size_bytes) return std::nullopt;
  for (std::size_t i = 0; i < pts.size(); ++i) {
    if (pts[i]->size_bytes == size) {
      exact = true;
      return pts[i]->time_us * 1e-6;
    }
    if (i + 1 < pts.size() && size < pts[i + 1]->size_bytes) {
      const double w =
          std::log(size / pts[i]->size_bytes) / std::log(pts[i + 1]->size_bytes / pts[i]->size_bytes);
      return std::exp((1 - w) * std::log(pts[i]->time_us) + w * std::log(pts[i + 1]->time_us)) * 1e-6;
    }
  }
  return std::nullopt;
}

// The lookup inside one table.
std::optional<CommTableHit> lookup_table(const CommTable& t, const CommQuery& q,
                                         const std::function<double(int, double)>& guide) {
  std::map<int, std::vector<const CommPoint*>> by_gpus;  // points are sorted by (nodes, gpus, size)
  for (const CommPoint& p : t.points) {
    if (p.nodes == q.nodes) by_gpus[p.gpus].push_back(&p);
  }
  CommTableHit hit;
  hit.table = &t;
  if (auto it = by_gpus.find(q.gpus); it != by_gpus.end()) {
    const std::optional<double> s = along_size(it->second, q.size_bytes, hit.exact);
    if (!s) return std::nullopt;
    hit.time_s = *s;
    return hit;
  }
  auto above = by_gpus.upper_bound(q.gpus);
  if (above == by_gpus.begin() || above == by_gpus.end() || !guide) return std::nullopt;
  auto below = std::prev(above);
  bool unused = false;
  const std::optional<double> lo = along_size(below->second, q.size_bytes, unused);
  const std::optional<double> hi = along_size(above->second, q.size_bytes, unused);
  if (!lo || !hi) return std::nullopt;
  const double g_lo = guide(below->first, q.size_bytes), g_hi = guide(above->first, q.size_bytes),
               g = guide(q.gpus, q.size_bytes);
  if (!(g_lo > 0 && g_hi > 0 && g > 0)) return std::nullopt;
  const double w = std::log(double(q.gpus) / below->first) / std::log(double(above->first) / below->first);
  const double ratio = std::exp((1 - w) * std::log(*lo / g_lo) + w * std::log(*hi / g_hi));
  hit.time_s = g * ratio;
  hit.between_groups = true;
  return hit;
}

// The model at the query, anchored at the table's measured point nearest to it (same layout): the nearest
// group in log(gpus), then the nearest size measured there in log(size).
std::optional<CommTableHit> anchored_hit(const CommTable& t, const CommQuery& q,
                                         const std::function<double(int, double)>& guide) {
  const CommPoint* best = nullptr;
  double best_g = 0, best_s = 0;
  for (const CommPoint& p : t.points) {
    if (p.nodes != q.nodes) continue;
    const double dg = std::abs(std::log(double(p.gpus) / q.gpus));
    const double ds = std::abs(std::log(p.size_bytes / q.size_bytes));
    if (best == nullptr || dg < best_g - 1e-12 || (std::abs(dg - best_g) <= 1e-12 && ds < best_s)) {
      best = &p;
      best_g = dg;
      best_s = ds;
    }
  }
  if (best == nullptr || !guide) return std::nullopt;
  const double at = guide(best->gpus, best->size_bytes), g = guide(q.gpus, q.size_bytes);
  if (!(at > 0 && g > 0)) return std::nullopt;
  // A table more than kMaxAnchorRatio away from the model at its own point describes something the model does
  // not (another fabric, a broken run, a table of another GPU): carrying that factor elsewhere would price
  // nonsense (a 1-byte point at 0.1 us on 2^20 GPUs made links a million times faster and crashed the
  // simulator), so the model stands alone there.
  constexpr double kMaxAnchorRatio = 10;
  const double ratio = best->time_us * 1e-6 / at;
  if (!(ratio >= 1 / kMaxAnchorRatio && ratio <= kMaxAnchorRatio)) return std::nullopt;
  CommTableHit hit;
  hit.table = &t;
  hit.time_s = g * ratio;
  hit.extrapolated = true;
  return hit;
}

}  // namespace

std::string normalise_dtype(std::string_view name) {
  const std::string n = comm_lowered(name);
  if (n == "fp16" || n == "float16" || n == "half") return "half";
  if (n == "bf16" || n == "bfloat16") return "bfloat16";
  if (n == "fp32" || n == "float32" || n == "float") return "float";
  if (n == "fp64" || n == "float64" || n == "double") return "double";
  if (n == "int32" || n == "int") return "int";
  if (n == "uint8" || n == "char" || n == "int8") return n == "uint8" ? "uint8" : "int8";
  return n;
}

void merge_comm_points(CommTable& table) {
  std::map<std::tuple<int, int, double>, std::vector<CommPoint>> groups;
  for (const CommPoint& p : table.points) groups[{p.nodes, p.gpus, p.size_bytes}].push_back(p);
  table.points.clear();
  for (auto& [key, pts] : groups) {
    std::vector<double> times;
    CommPoint merged = pts.front();
    merged.samples = 0;
    for (const CommPoint& p : pts) {
      times.push_back(p.time_us);
      merged.min_us = std::min(merged.min_us, p.min_us);
      merged.max_us = std::max(merged.max_us, p.max_us);
      merged.samples += p.samples;
    }
    std::sort(times.begin(), times.end());
    const std::size_t n = times.size();
    merged.time_us = n % 2 == 1 ? times[n / 2] : 0.5 * (times[n / 2 - 1] + times[n / 2]);
    table.points.push_back(merged);
  }
}

namespace {
std::string g(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}
}  // namespace

void check_comm_point(const CommPoint& p, const std::string& at) {
  // Bounds no measurement reaches: they catch a unit slip, a corrupted file or a hostile value before it
  // reaches the simulator's clock (a nanosecond collective, a petabyte message, 100 TB/s through one group).
  if (p.gpus > kMaxCommGpus)
    throw InputError(at + ": " + std::to_string(p.gpus) + " GPUs in one group (at most " +
                     std::to_string(kMaxCommGpus) + ")");
  if (!(p.size_bytes >= 1 && p.size_bytes <= kMaxCommBytes))
    throw InputError(at + ": a size of " + g(p.size_bytes) + " bytes is outside [1 B, 1 PiB]");
  if (!(p.time_us >= kMinCommUs && p.time_us <= kMaxCommUs))
    throw InputError(at + ": a time of " + g(p.time_us) +
                     " us is outside [0.1 us, 1000 s] (no collective is faster than a kernel launch)");
  if (p.size_bytes / (p.time_us * 1e-6) > kMaxCommBandwidth)
    throw InputError(at + ": " + g(p.size_bytes) + " bytes in " + g(p.time_us) +
                     " us is beyond 100 TB/s, faster than any interconnect");
}

void finalize_comm_table(CommTable& t, const std::string& where) {
  std::sort(t.points.begin(), t.points.end(), [](const CommPoint& a, const CommPoint& b) {
    return std::tie(a.nodes, a.gpus, a.size_bytes) < std::tie(b.nodes, b.gpus, b.size_bytes);
  });
  for (std::size_t i = 0; i < t.points.size(); ++i) {
    const CommPoint& p = t.points[i];
    const std::string at = where + ".points[" + std::to_string(i) + "]";
    if (p.gpus < 1 || p.nodes < 1 || p.nodes > p.gpus)
      throw InputError(at + ": gpus must be >= 1 and nodes in [1, gpus], got gpus " + std::to_string(p.gpus) +
                       ", nodes " + std::to_string(p.nodes));
    for (double v : {p.size_bytes, p.time_us, p.min_us, p.max_us}) {
      if (!std::isfinite(v) || !(v > 0)) throw InputError(at + ": sizes and times must be positive numbers");
    }
    if (!(p.min_us <= p.time_us && p.time_us <= p.max_us))
      throw InputError(at + ": expected min_us <= time_us <= max_us");
    check_comm_point(p, at);
    if (p.samples < 1) throw InputError(at + ": samples must be >= 1");
    if (i > 0 && t.points[i - 1].gpus == p.gpus && t.points[i - 1].nodes == p.nodes &&
        t.points[i - 1].size_bytes == p.size_bytes)
      throw InputError(at + ": duplicate point (gpus " + std::to_string(p.gpus) + ", size " +
                       std::to_string(static_cast<long long>(p.size_bytes)) + ")");
  }
}

std::optional<CommTableHit> lookup_comm_time(const std::vector<CommTables>& files, const CommQuery& q,
                                             const std::function<double(int gpus, double size)>& guide) {
  struct Candidate {
    int score;
    std::size_t order;
    const CommTables* file;
    const CommTable* table;
  };
  std::vector<Candidate> candidates;
  const std::string want = normalise_dtype(q.dtype);
  std::size_t order = 0;
  for (const CommTables& f : files) {
    for (const CommTable& t : f.tables) {
      ++order;
      if (t.op != q.op || comm_lowered(t.algorithm) != comm_lowered(q.algorithm) ||
          comm_lowered(t.protocol) != comm_lowered(q.protocol) ||
          comm_lowered(t.implementation) != comm_lowered(q.implementation))
        continue;
      const std::string dt = normalise_dtype(t.dtype);
      const int dtype_score = want.empty() || dt == want ? 2 : (width_of(dt) == width_of(want) ? 1 : 0);
      const int score = 100 * (t.graph == q.graph) + 10 * (t.in_place == q.in_place) + dtype_score;
      candidates.push_back({score, order, &f, &t});
    }
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) { return a.score > b.score; });
  for (const Candidate& c : candidates) {
    if (std::optional<CommTableHit> hit = lookup_table(*c.table, q, guide)) {
      hit->file = c.file;
      return hit;
    }
  }
  if (!q.extrapolate) return std::nullopt;
  for (const Candidate& c : candidates) {
    if (std::optional<CommTableHit> hit = anchored_hit(*c.table, q, guide)) {
      hit->file = c.file;
      return hit;
    }
  }
  return std::nullopt;
}

}  // namespace dcpsim::models
