// `dcpsim collectives`: predictions in nccl-tests' words, and comparisons with measured tables.
#include "dcpsim/analysis/collectives.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>

#include "dcpsim/error.h"
#include "dcpsim/models/cost_metrics.h"
#include "dcpsim/models/nccl_tests.h"
#include "dcpsim/text_file.h"

#if DCPSIM_WITH_SIMGRID
#include "dcpsim/sim/simulator.h"
#endif

namespace dcpsim::analysis {
namespace {

// nccl-tests rounds a size to whole elements per rank (all-gather, reduce-scatter and all-to-all split the
// buffer over the ranks).
double rounded_size(models::Collective op, int gpus, double size, int element) {
  const bool split = op == models::Collective::kAllGather || op == models::Collective::kReduceScatter ||
                     op == models::Collective::kAllToAll;
  const double unit = double(element) * (split ? gpus : 1);
  return std::max(unit, std::floor(size / unit) * unit);
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double at = q * (v.size() - 1);
  const std::size_t lo = static_cast<std::size_t>(std::floor(at));
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (at - lo) * (v[hi] - v[lo]);
}

}  // namespace

models::CommTables load_measured_comm(const std::vector<std::string>& files) {
  if (files.size() == 1) {
    // A communication table (plain or gzip, X.json found as X.json.gz too), else nccl-tests output.
    const std::filesystem::path file = existing_or_gz(files[0]);
    std::error_code ec;
    if (std::filesystem::is_regular_file(file, ec)) {
      std::ifstream in(file, std::ios::binary);
      std::string head(256, '\0');
      in.read(head.data(), static_cast<std::streamsize>(head.size()));
      head.resize(static_cast<std::size_t>(in.gcount()));
      if (is_gzip(head) || head.find(models::kCommTablesFormat) != std::string::npos) {
        const std::string text = read_text_file(file, "communication table file");
        if (text.substr(0, 256).find(models::kCommTablesFormat) != std::string::npos)
          return models::parse_comm_tables(text, file.string());
      }
    }
  }
  return models::import_nccl_tests(std::vector<std::filesystem::path>(files.begin(), files.end()), {}).tables;
}

int dtype_bytes(const std::string& dtype) {
  const std::string d = models::normalise_dtype(dtype);
  if (d == "int8" || d == "uint8" || d == "fp8_e4m3" || d == "fp8_e5m2") return 1;
  if (d == "half" || d == "bfloat16") return 2;
  if (d == "float" || d == "int" || d == "uint32") return 4;
  if (d == "double" || d == "int64" || d == "uint64") return 8;
  throw InputError("--dtype '" + dtype +
                   "': not an nccl-tests type (int8, half, bfloat16, float, double, ...)");
}

std::vector<CollectiveRow> predict_collectives(const models::HardwareProfile& profile,
                                               const CollectivesRequest& request) {
  const int element = dtype_bytes(request.call.dtype);
#if DCPSIM_WITH_SIMGRID
  sim::SimOptions options;
  options.collective = request.forced;
  const sim::Simulator simulator(profile, options);
#endif
  std::vector<CollectiveRow> rows;
  for (models::Collective op : request.ops) {
    for (int gpus : request.gpus) {
      if (gpus < 2)
        throw InputError("--gpus " + std::to_string(gpus) + ": a collective needs at least 2 GPUs");
      for (double size : request.sizes) {
        CollectiveRow row;
        row.op = op;
        row.gpus = gpus;
        row.size_bytes = rounded_size(op, gpus, size, element);
        const double per_rank = models::bytes_per_rank_of_size(op, gpus, row.size_bytes);
#if DCPSIM_WITH_SIMGRID
        const sim::CollectiveRun run = simulator.run_collective(op, gpus, per_rank, {}, request.call);
        const models::CollectivePrice& price = run.price;
        row.time_s = run.time_s;
#else
        const models::CollectivePrice price =
            models::price_collective(profile, op, gpus, per_rank, request.forced, request.call);
        row.time_s = price.time_s;
#endif
        row.algorithm = lower(models::to_string(price.plan.algorithm));
        row.protocol = lower(models::to_string(price.plan.protocol));
        row.source = price.source;
        row.between_groups = price.between_groups;
        row.anchored = price.anchored;
        row.in_step_s = price.in_step_s;
        row.algbw_Bps = models::algbw(row.size_bytes, row.time_s);
        row.busbw_Bps = models::busbw(op, gpus, row.size_bytes, row.time_s);
        rows.push_back(row);
      }
    }
  }
  return rows;
}

std::string collectives_csv(const std::vector<CollectiveRow>& rows) {
  std::string out =
      "op,gpus,size_bytes,time_us,algbw_gbs,busbw_gbs,algorithm,protocol,source,extrapolated,in_step_us\n";
  char line[320];
  for (const CollectiveRow& r : rows) {
    std::snprintf(line, sizeof line, "%s,%d,%.0f,%.4f,%.4f,%.4f,%s,%s,%s,%d,%.4f\n",
                  std::string(models::to_string(r.op)).c_str(), r.gpus, r.size_bytes, r.time_s * 1e6,
                  r.algbw_Bps / 1e9, r.busbw_Bps / 1e9, r.algorithm.c_str(), r.protocol.c_str(),
                  r.source == models::FigureSource::kTable
                      ? (r.between_groups ? "table-between-groups" : "table")
                      : "model",
                  r.source == models::FigureSource::kTable ? 0 : 1, r.in_step_s * 1e6);
    out += line;
  }
  return out;
}

std::string collectives_text(const std::vector<CollectiveRow>& rows, const std::string& heading) {
  std::string out = heading;
  char line[256];
  int extrapolated = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const CollectiveRow& r = rows[i];
    if (i == 0 || rows[i - 1].op != r.op) {
      out += "#\n# " + std::string(models::to_string(r.op)) + "\n";
      out += "#  gpus          size        time   algbw   busbw  plan          source\n";
      out += "#                 (B)        (us)  (GB/s)  (GB/s)\n";
    }
    extrapolated += r.source != models::FigureSource::kTable;
    std::snprintf(line, sizeof line, "%7d  %12.0f  %10.2f  %6.2f  %6.2f  %-12s  %s\n", r.gpus, r.size_bytes,
                  r.time_s * 1e6, r.algbw_Bps / 1e9, r.busbw_Bps / 1e9,
                  (r.algorithm + "/" + r.protocol).c_str(),
                  r.source == models::FigureSource::kTable
                      ? (r.between_groups ? "table (between measured groups)" : "table")
                      : (r.anchored ? "model anchored to the table (extrapolated)" : "model (extrapolated)"));
    out += line;
  }
  std::snprintf(line, sizeof line,
                "#\n# %d of %zu figures from the profile's measured tables; %d from NCCL's tuning model "
                "(extrapolated: outside every table)\n",
                static_cast<int>(rows.size()) - extrapolated, rows.size(), extrapolated);
  return out + line;
}

std::vector<CollectiveComparison> compare_collectives(const models::HardwareProfile& profile,
                                                      const models::CommTables& measured,
                                                      const CollectivesRequest& request) {
  const std::string want = models::normalise_dtype(request.call.dtype);
  bool any_match = false;
  for (const models::CommTable& t : measured.tables)
    any_match = any_match || (!t.in_place && t.dtype == want);
  std::vector<CollectiveComparison> out;
  for (const models::CommTable& t : measured.tables) {
    if (t.in_place || (any_match && t.dtype != want)) continue;
    if (!request.ops.empty() && std::find(request.ops.begin(), request.ops.end(), t.op) == request.ops.end())
      continue;
    CollectivesRequest one = request;
    one.ops = {t.op};
    one.call.dtype = t.dtype;
    for (const models::CommPoint& p : t.points) {
      if (!request.gpus.empty() &&
          std::find(request.gpus.begin(), request.gpus.end(), p.gpus) == request.gpus.end())
        continue;
      one.gpus = {p.gpus};
      one.sizes = {p.size_bytes};
      const CollectiveRow row = predict_collectives(profile, one).front();
      CollectiveComparison c{t.op, p.gpus, p.size_bytes, p.time_us * 1e-6, row.time_s, 0, row.source};
      c.relative_error = (c.predicted_s - c.measured_s) / c.measured_s;
      out.push_back(c);
    }
  }
  if (out.empty()) throw InputError("the measured tables have no out-of-place point to compare with");
  return out;
}

std::vector<ComparisonSummary> summarise(const std::vector<CollectiveComparison>& c) {
  std::map<std::string, std::vector<double>> groups;
  std::vector<std::string> order;
  const auto add = [&](const std::string& key, double e) {
    if (!groups.count(key)) order.push_back(key);
    groups[key].push_back(std::abs(e));
  };
  for (const CollectiveComparison& x : c) {
    add(std::string(models::to_string(x.op)), x.relative_error);
    add(std::string(models::to_string(x.op)) + " " + std::to_string(x.gpus) + " gpus", x.relative_error);
  }
  for (const CollectiveComparison& x : c) add("all", x.relative_error);
  std::vector<ComparisonSummary> out;
  for (const std::string& key : order) {
    const std::vector<double>& v = groups[key];
    out.push_back({key, static_cast<int>(v.size()), quantile(v, 0.5), quantile(v, 0.9),
                   *std::max_element(v.begin(), v.end())});
  }
  return out;
}

std::string comparison_text(const std::vector<CollectiveComparison>& c, bool per_point) {
  std::string out;
  char line[256];
  if (per_point) {
    out += "# op              gpus          size    measured   predicted    error  source\n";
    for (const CollectiveComparison& x : c) {
      std::snprintf(line, sizeof line, "  %-14s %5d  %12.0f  %10.2f  %10.2f  %+6.1f%%  %s\n",
                    std::string(models::to_string(x.op)).c_str(), x.gpus, x.size_bytes, x.measured_s * 1e6,
                    x.predicted_s * 1e6, 100 * x.relative_error,
                    x.source == models::FigureSource::kTable ? "table" : "model");
      out += line;
    }
  }
  out += "# |relative error|        n   median      p90      max\n";
  for (const ComparisonSummary& s : summarise(c)) {
    std::snprintf(line, sizeof line, "  %-20s %5d  %6.2f%%  %6.2f%%  %6.2f%%\n", s.key.c_str(), s.count,
                  100 * s.median, 100 * s.p90, 100 * s.max);
    out += line;
  }
  return out;
}

}  // namespace dcpsim::analysis
