// Kernel tables from measured traces.
#include "dcpsim/analysis/table_builder.h"
#include "dcpsim/dates.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <map>
#include <optional>
#include <tuple>

#include "dcpsim/error.h"
#include "dcpsim/models/cost_kernels.h"
#include "dcpsim/models/sharding.h"

namespace dcpsim::analysis {
namespace {

using models::TableKernel;
namespace v1 = traces::v1;

struct Target {
  TableKernel kernel;
  std::string key;
  std::vector<double> at;
  double bytes = 0.0;     // what the shape moves (an imported implementation's model is fitted on it)
  bool imported = false;  // the kernel is another implementation's, from a profiler trace
};

struct Pool {
  std::vector<double> medians_ns;
  int samples = 0;
  double min_ns = 0.0, max_ns = 0.0;
  double bytes = 0.0;
  bool imported = false;
};

// An implementation a profiler trace ran that is not the runner's own (which `hw sweep` tables describe).
bool foreign(const std::string& impl) {
  return !impl.empty() && impl != "dcpsim" && impl != "flashinfer";
}

// Bytes per rank of a collective phase, as the simulator sizes it (sim/src/strategies.cc).
std::optional<std::pair<std::string, double>> collective(const std::string& name, const models::Scenario& s) {
  const double rows = s.rows(), h = s.heads, n = s.dcp, d = s.head_dim;
  const double out = models::dtype_bytes(s.out_dtype);
  if (name == "query_all_gather" || name == "query_gather")
    return std::pair{
        std::string("all_gather"),
        rows * std::ceil(h / n) * s.qk_dim * double(models::dtype_bytes(models::query_dtype(s.kv_dtype)))};
  if (name == "lse_all_gather" || name == "lse_gather")
    return std::pair{std::string("all_gather"), rows * h * 4.0};
  if (name == "reduce_scatter") return std::pair{std::string("reduce_scatter"), rows * h / n * d * out};
  if (name == "all_reduce") return std::pair{std::string("all_reduce"), rows * h * d * out};
  // a2a-2call's outputs travel without LSE lanes, its LSEs in a call of their own.
  if (name == "all_to_all") {
    const double lanes =
        s.strategy == models::Strategy::kA2aTwoCall ? 0 : models::packed_lse_lanes(s.out_dtype);
    return std::pair{std::string("all_to_all"), rows * h * (d + lanes) * out};
  }
  if (name == "all_to_all_lse") return std::pair{std::string("all_to_all"), rows * h * 4.0};
  return std::nullopt;
}

// The table point a phase median measures, or nullopt (with the reason) when it measures none.
std::optional<Target> target_of(const MeasuredSection& sec, const MeasuredPhase& ph, int heads_per_cta,
                                std::string& why) {
  const models::Scenario& s = sec.scenario;
  const bool emulated = sec.source == v1::SOURCE_EMULATED;
  const std::string& name = ph.measured_name;
  if (ph.rank < 0) {
    why = "summaries over all ranks (no rank's shape)";
    return std::nullopt;
  }
  models::MergeShape merge_shape = models::merge_shape(s);
  merge_shape.row_stamps = sec.row_stamps;
  const std::string merge_key = models::merge_table_key(merge_shape);
  auto merge = [&](TableKernel k) {
    const double bytes = k == TableKernel::kCorrection   ? models::correction_bytes(merge_shape)
                         : k == TableKernel::kA2aPack    ? models::a2a_pack_bytes(merge_shape)
                         : k == TableKernel::kA2aCombine ? models::unpack_combine_bytes(merge_shape)
                                                         : models::direct_combine_bytes(merge_shape);
    return Target{k, merge_key, models::merge_table_at(k, merge_shape), bytes, !merge_shape.impl.empty()};
  };
  if (name == "attention") {
    int64_t tokens = 0, nonempty = 0;
    std::vector<int64_t> local;
    for (int64_t c : s.contexts) {
      const int64_t n = models::local_length(c, ph.rank, s.dcp, s.interleave);
      local.push_back(n);
      tokens += n;
      nonempty += n > 0;
    }
    if (nonempty == 0) {
      why = "attention over empty shards";
      return std::nullopt;
    }
    // An imported implementation's phase is what the engine ran, in its launch mode: the table holds it so.
    const bool imported = foreign(s.attention_impl) || !sec.implementations.empty();
    if (s.launch != models::LaunchMode::kGraph && !imported) {
      why =
          "attention of eager and PDL steps (tables hold the kernels as `hw sweep` replays them from a "
          "graph, "
          "the gap before the split-KV combine included; the simulator adds what other launch modes add)";
      return std::nullopt;
    }
    const models::AttentionShape shape = models::attention_shape(s);
    if (s.attention_impl == "flashinfer" && s.dcp > 1 && s.rows() > 1 && !imported) {
      why = "FlashInfer's attention phase also holds the query repack (`hw sweep` times the kernel alone)";
      return std::nullopt;
    }
    const double heads = models::attention_table_heads(shape, heads_per_cta);
    const std::string key = models::attention_table_key(shape) +
                            (s.attention_impl.empty() ? std::string() : " " + s.attention_impl);
    return Target{TableKernel::kAttention,
                  key,
                  {heads, double(s.rows()), double(tokens) / double(nonempty)},
                  models::attention_io_bytes(shape, local),
                  foreign(s.attention_impl)};
  }
  if (s.dcp < 2) {
    why = "merge kernels of N = 1";
    return std::nullopt;
  }
  if (name == "correction") return merge(TableKernel::kCorrection);
  if (name == "a2a_pack" || name == "pack") return merge(TableKernel::kA2aPack);
  if (name == "a2a_combine" || (name == "combine" && s.strategy == models::Strategy::kA2a))
    return merge(TableKernel::kA2aCombine);
  if (name == "direct_combine" || (name == "combine" && s.strategy == models::Strategy::kDirect)) {
    if (name == "direct_combine" && !emulated) {
      why = "direct_combine of real runs (it also waits for the peers' flags)";
      return std::nullopt;
    }
    return merge(TableKernel::kDirectCombine);
  }
  if (name == "direct_merge" || name == "flashinfer_merge") {
    why = name + " (stores, flags, wait and combine in one kernel; no table kernel type)";
    return std::nullopt;
  }
  if (emulated) {
    why = "emulated collectives and direct writes (device-local stand-ins)";
    return std::nullopt;
  }
  if (name == "direct_write" || name == "push") return merge(TableKernel::kDirectWrite);
  if (auto c = collective(name, s))
    return Target{TableKernel::kCollective, c->first, {double(s.dcp), c->second}};
  why = "phases that are no kernel of a table (" + name + ")";
  return std::nullopt;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

models::TableProvenance provenance(const std::vector<MeasuredTrace>& traces, const TableBuildOptions& o) {
  models::TableProvenance p;
  auto add = [](std::string& field, const std::string& value) {
    if (value.empty() || field == value || field.find(value) != std::string::npos) return;
    field += (field.empty() ? "" : ", ") + value;
  };
  for (const MeasuredTrace& t : traces) {
    for (const v1::Device& d : t.header.devices()) {
      if (p.device.empty()) p.device = d.name();
      if (d.name() != p.device) {
        throw InputError(t.path.string() + ": device \"" + d.name() + "\" differs from \"" + p.device +
                         "\" of the other traces (one table file describes one device model)");
      }
    }
    add(p.driver, t.header.cuda_driver_version());
    add(p.cuda, t.header.cuda_runtime_version());
    add(p.nccl, t.header.nccl_version());
    auto clocks = t.header.notes().find("clocks");
    if (clocks != t.header.notes().end()) add(p.clocks, clocks->second);
  }
  if (p.device.empty())
    throw InputError("the traces name no device (header.devices is empty): not measured?");
  if (p.clocks.empty()) p.clocks = o.clocks.empty() ? "default application clocks (not recorded)" : o.clocks;
  p.date = o.date.empty() ? today_utc() : o.date;
  p.command = o.command.empty() ? "dcpsim tables" : o.command;
  return p;
}

}  // namespace

TableBuildResult build_kernel_tables(const std::vector<MeasuredTrace>& traces,
                                     const TableBuildOptions& options) {
  TableBuildResult out;
  out.tables.provenance = provenance(traces, options);
  std::map<std::tuple<TableKernel, std::string, std::vector<double>>, Pool> pools;
  std::map<std::string, int> left_out;
  for (const MeasuredTrace& t : traces) {
    for (const MeasuredSection& sec : t.sections) {
      ++out.sections;
      for (const MeasuredPhase& ph : sec.phases) {
        std::string why;
        const std::optional<Target> target = target_of(sec, ph, options.heads_per_cta, why);
        if (!target) {
          ++left_out[why];
          continue;
        }
        if (!(ph.median_s > 0)) {
          ++left_out["zero-length phases"];
          continue;
        }
        Pool& pool = pools[{target->kernel, target->key, target->at}];
        pool.bytes = target->bytes;
        pool.imported = pool.imported || target->imported;
        const double lo = (ph.min_s > 0 ? ph.min_s : ph.median_s) * 1e9;
        const double hi = std::max(ph.max_s, ph.median_s) * 1e9;
        pool.min_ns = pool.medians_ns.empty() ? lo : std::min(pool.min_ns, lo);
        pool.max_ns = pool.medians_ns.empty() ? hi : std::max(pool.max_ns, hi);
        pool.medians_ns.push_back(ph.median_s * 1e9);
        pool.samples += std::max(ph.repetitions, 1);
        ++out.figures;
      }
    }
  }
  if (pools.empty()) throw InputError("no kernel phase in the traces: nothing to tabulate");
  std::map<std::pair<TableKernel, std::string>, std::vector<std::pair<double, double>>> model_points;
  for (const auto& [key, pool] : pools) {
    const auto& [kernel, name, at] = key;
    // Copies, not the bindings: lambdas may not capture structured bindings before C++20 compilers caught up
    // (clang 14 builds the fuzz targets).
    const auto want_kernel = kernel;
    const auto& want_name = name;
    auto it = std::find_if(
        out.tables.tables.begin(), out.tables.tables.end(),
        [&](const models::KernelTable& k) { return k.kernel == want_kernel && k.key == want_name; });
    if (it == out.tables.tables.end()) {
      out.tables.tables.push_back({kernel, name, {}, {}, {}, {}, {}, {}, {}});
      it = std::prev(out.tables.tables.end());
    }
    // Nanoseconds to 0.001 ns: far below the timers' resolution, and the file stays readable.
    auto ns = [](double x) { return std::round(x * 1e3) / 1e3; };
    const double med = ns(median(pool.medians_ns));
    it->points.push_back(
        {at, med, pool.samples, std::min(ns(pool.min_ns), med), std::max(ns(pool.max_ns), med)});
    if (pool.imported) model_points[{kernel, name}].push_back({pool.bytes, med * 1e-9});
  }
  // Each imported implementation's model (kernel_table.h TableModel): what prices the shapes its few measured
  // points do not cover.
  for (models::KernelTable& k : out.tables.tables) {
    const auto points = model_points.find({k.kernel, k.key});
    if (points == model_points.end()) continue;
    k.model = models::fit_table_model(points->second);
    if (!k.model)
      out.notes.push_back("no model for " + std::string(models::to_string(k.kernel)) + " [" + k.key +
                          "]: its points do not move two different byte counts");
  }
  for (models::KernelTable& k : out.tables.tables)
    k.finalize("table " + std::string(models::to_string(k.kernel)) + " [" + k.key + "]");
  for (const auto& [why, n] : left_out) out.notes.push_back(std::to_string(n) + " phase medians: " + why);
  return out;
}

}  // namespace dcpsim::analysis
