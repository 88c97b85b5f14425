// What a calibration writes: the calibrated profile (sources naming the fit) and its sidecar (provenance,
// domain, parameters, residual statistics).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <set>

#include "dcpsim/analysis/calibrate.h"
#include "dcpsim/dates.h"
#include "dcpsim/error.h"
#include "dcpsim/traces/output_file.h"
#include "dcpsim/version.h"

namespace dcpsim::analysis {
namespace {

using nlohmann::json;

std::string percent(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2g%%", 100.0 * x);
  return buf;
}

// "a.pb, b.pb" for a few files; "71 trace files in traces/measured/h200, traces/measured/h200x2" otherwise.
std::string describe_traces(const std::vector<std::filesystem::path>& traces) {
  if (traces.empty()) return "no trace";
  std::string out;
  if (traces.size() <= 3) {
    for (const auto& t : traces) out += (out.empty() ? "" : ", ") + t.string();
    return out;
  }
  std::set<std::string> dirs;
  for (const auto& t : traces) dirs.insert(t.parent_path().empty() ? "." : t.parent_path().string());
  for (const std::string& d : dirs) out += (out.empty() ? "" : ", ") + d;
  return std::to_string(traces.size()) + " trace files in " + out;
}

// Six significant digits: the fit's standard errors are far wider than that, and the file stays readable.
double rounded(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return std::strtod(buf, nullptr);
}

const ResidualStats* find_stats(const std::vector<ResidualStats>& v, const std::string& figure) {
  for (const ResidualStats& s : v) {
    if (s.figure == figure) return &s;
  }
  return nullptr;
}

json stats_json(const std::vector<ResidualStats>& v) {
  json out = json::object();
  for (const ResidualStats& s : v) {
    out[s.figure] = {{"count", s.count}, {"p50", s.p50}, {"p90", s.p90},    {"max", s.max},
                     {"mean", s.mean},   {"rms", s.rms}, {"sigma", s.sigma}};
  }
  return out;
}

json per_type_json(const std::vector<KernelTypeFit>& fits) {
  json out = json::object();
  for (const KernelTypeFit& f : fits) {
    json params = json::object();
    for (const ParameterResult& p : f.parameters) {
      params[p.name] = {{"value", p.result.value},
                        {"unit", std::string(models::to_string(p.result.unit))},
                        {"relative_std_error", p.relative_std_error},
                        {"at_bound", p.at_bound}};
    }
    out[f.figure] = {
        {"figures", f.figures}, {"parameters", params}, {"residuals", stats_json({f.residuals})[f.figure]}};
  }
  return out;
}

json quantity_json(const models::Quantity& q) {
  return {{"value", q.value}, {"unit", std::string(models::to_string(q.unit))}, {"source", q.source}};
}

json provenance_json(const CalibrationProvenance& prov) {
  std::set<std::string> sources, runtimes, drivers, nccl, tools;
  json devices = json::array();
  std::set<std::string> seen_devices;
  for (const traces::v1::Header& h : prov.headers) {
    sources.insert(std::string(traces::to_string(h.source())));
    if (!h.cuda_runtime_version().empty()) runtimes.insert(h.cuda_runtime_version());
    if (!h.cuda_driver_version().empty()) drivers.insert(h.cuda_driver_version());
    if (!h.nccl_version().empty()) nccl.insert(h.nccl_version());
    tools.insert(h.tool_version() + (h.git_sha().empty() ? "" : " (" + h.git_sha() + ")"));
    for (const auto& d : h.devices()) {
      if (!seen_devices.insert(d.uuid() + d.host_name() + std::to_string(d.index())).second) continue;
      devices.push_back({{"name", d.name()},
                         {"uuid", d.uuid()},
                         {"pci_bus_id", d.pci_bus_id()},
                         {"host", d.host_name()},
                         {"sm_count", d.sm_count()},
                         {"memory_bytes", d.memory_bytes()}});
    }
  }
  json traces = json::array(), holdout = json::array();
  for (const auto& t : prov.traces) traces.push_back(t.string());
  for (const auto& t : prov.holdout_traces) holdout.push_back(t.string());
  return {{"traces", traces},   {"holdout_traces", holdout}, {"trace_sources", sources},
          {"devices", devices}, {"cuda_runtime", runtimes},  {"cuda_driver", drivers},
          {"nccl", nccl},       {"trace_tools", tools}};
}

}  // namespace

std::string geometry_label(const models::Scenario& s) {
  return "h" + std::to_string(s.heads) + " kv" + std::to_string(s.kv_heads) + " d" +
         std::to_string(s.head_dim) + "/" + std::to_string(s.qk_dim);
}

CalibrationDomain domain_of(const std::vector<MeasuredSection>& sections) {
  CalibrationDomain d;
  bool first = true;
  for (const MeasuredSection& sec : sections) {
    const models::Scenario& s = sec.scenario;
    d.dcp.insert(s.dcp);
    d.geometries.insert(geometry_label(s));
    d.strategies.insert(std::string(models::to_string(s.strategy)));
    d.launch_modes.insert(std::string(models::to_string(s.launch)));
    const auto [lo, hi] = std::minmax_element(s.contexts.begin(), s.contexts.end());
    const std::int64_t cmin = s.contexts.empty() ? 0 : *lo, cmax = s.contexts.empty() ? 0 : *hi;
    d.min_context = first ? cmin : std::min(d.min_context, cmin);
    d.max_context = first ? cmax : std::max(d.max_context, cmax);
    d.min_rows = first ? s.rows() : std::min(d.min_rows, s.rows());
    d.max_rows = first ? s.rows() : std::max(d.max_rows, s.rows());
    first = false;
  }
  return d;
}

json domain_json(const CalibrationDomain& d) {
  return {{"dcp", d.dcp},
          {"geometries", d.geometries},
          {"strategies", d.strategies},
          {"launch_modes", d.launch_modes},
          {"context_tokens", {d.min_context, d.max_context}},
          {"rows", {d.min_rows, d.max_rows}}};
}

CalibrationDomain domain_from_json(const json& j, const std::string& origin) {
  try {
    CalibrationDomain d;
    d.dcp = j.at("dcp").get<std::set<int>>();
    d.geometries = j.at("geometries").get<std::set<std::string>>();
    d.strategies = j.at("strategies").get<std::set<std::string>>();
    d.launch_modes = j.at("launch_modes").get<std::set<std::string>>();
    d.min_context = j.at("context_tokens").at(0).get<std::int64_t>();
    d.max_context = j.at("context_tokens").at(1).get<std::int64_t>();
    d.min_rows = j.at("rows").at(0).get<int>();
    d.max_rows = j.at("rows").at(1).get<int>();
    return d;
  } catch (const json::exception& e) {
    throw InputError(origin + ": domain: " + e.what());
  }
}

std::string outside_domain(const CalibrationDomain& d, const models::Scenario& s) {
  auto list = [](const auto& set) {
    std::string out;
    for (const auto& v : set) {
      if constexpr (std::is_same_v<std::decay_t<decltype(v)>, int>) {
        out += (out.empty() ? "" : ", ") + std::to_string(v);
      } else {
        out += (out.empty() ? "" : ", ") + v;
      }
    }
    return "{" + out + "}";
  };
  std::vector<std::string> why;
  if (!d.dcp.count(s.dcp)) why.push_back("dcp " + std::to_string(s.dcp) + " not in " + list(d.dcp));
  if (!d.geometries.count(geometry_label(s)))
    why.push_back("geometry " + geometry_label(s) + " not in " + list(d.geometries));
  const std::string strategy(models::to_string(s.strategy)), launch(models::to_string(s.launch));
  if (!d.strategies.count(strategy)) why.push_back("strategy " + strategy + " not in " + list(d.strategies));
  if (!d.launch_modes.count(launch)) why.push_back("launch " + launch + " not in " + list(d.launch_modes));
  for (std::int64_t c : s.contexts) {
    if (c < d.min_context || c > d.max_context) {
      why.push_back("context " + std::to_string(c) + " outside [" + std::to_string(d.min_context) + ", " +
                    std::to_string(d.max_context) + "]");
      break;
    }
  }
  if (s.rows() < d.min_rows || s.rows() > d.max_rows) {
    why.push_back("batch " + std::to_string(s.rows()) + " outside [" + std::to_string(d.min_rows) + ", " +
                  std::to_string(d.max_rows) + "]");
  }
  std::string out;
  for (const std::string& w : why) out += (out.empty() ? "" : "; ") + w;
  return out;
}

void stamp_sources(CalibrationResult& result, const CalibrationProvenance& prov) {
  const std::string date = prov.date.empty() ? today_utc() : prov.date;
  const ResidualStats* all = find_stats(result.residuals, "all");
  const std::string fit = "robust (Huber) least squares over " + std::to_string(result.observations) +
                          " measured figures (" + std::to_string(result.fit_sections) + " scenarios) from " +
                          describe_traces(prov.traces) + ", " + date + ", residual p50 " +
                          percent(all ? all->p50 : 0) + ", p90 " + percent(all ? all->p90 : 0);
  const auto& params = fit_parameters();
  for (std::size_t k = 0; k < params.size(); ++k) {
    ParameterResult& r = result.parameters[k];
    if (!r.fitted) continue;
    std::string source = "calibrated: " + fit + ", relative standard error " + percent(r.relative_std_error);
    if (r.at_bound) source += ", at its bound";
    models::Quantity& q = params[k].field(result.profile);
    q.value = rounded(q.value);
    q.source = source;
    r.result = params[k].quantity(result.profile);
  }
  result.profile.name = prov.name.empty() ? result.base.name + "-calibrated" : prov.name;
  result.profile.description = result.base.description + "; calibrated " + date + " against " +
                               describe_traces(prov.traces) +
                               " (fit details in the .calibration.json sidecar)";
  models::validate_profile(result.profile, "calibrated profile " + result.profile.name);
}

std::filesystem::path calibration_sidecar(const std::filesystem::path& profile_path) {
  std::filesystem::path p = profile_path;
  if (p.extension() == ".json") p.replace_extension();
  return p.string() + ".calibration.json";
}

json calibration_json(const CalibrationResult& r, const CalibrationProvenance& prov) {
  json params = json::array();
  const auto& catalogue = fit_parameters();
  for (std::size_t k = 0; k < r.parameters.size(); ++k) {
    const ParameterResult& p = r.parameters[k];
    params.push_back({{"name", p.name},
                      {"group", std::string(to_string(p.group))},
                      {"coordinate", catalogue[k].coordinate},
                      {"fitted", p.fitted},
                      {"at_bound", p.at_bound},
                      {"relative_std_error", p.relative_std_error},
                      {"status", p.status},
                      {"base", quantity_json(p.base)},
                      {"result", quantity_json(p.result)}});
  }
  json out = {
      {"format", "dcpsim-calibration/1"},
      {"profile", r.profile.name},
      {"base_profile", r.base.name},
      {"date", prov.date.empty() ? today_utc() : prov.date},
      {"tool", std::string(kVersion) + " (" + kGitSha + ")"},
      {"provenance", provenance_json(prov)},
      {"domain", domain_json(r.domain)},
      {"fit",
       {{"sections", r.fit_sections},
        {"figures", r.observations},
        {"iterations", r.iterations},
        {"holdout_sections", r.holdout_sections}}},
      {"parameters", params},
      {"residuals", stats_json(r.residuals)},
      {"prediction_interval",
       {{"z", kIntervalZ},
        {"rule",
         "predicted x (1 +- z x residuals[figure].sigma), half-width at least 1 ns; sigma = 1.4826 x "
         "median |relative residual|"}}},
      {"loss", {{"kind", "huber on log(predicted / measured)"}, {"downweighted_figures", r.downweighted}}},
      {"largest_residuals", r.outliers},
      {"excluded", r.excluded},
      {"warnings", r.warnings}};
  if (!r.holdout_residuals.empty()) out["holdout_residuals"] = stats_json(r.holdout_residuals);
  if (!r.per_kernel_type.empty()) out["per_kernel_type"] = per_type_json(r.per_kernel_type);
  for (const auto& [key, value] : prov.extra.items()) out[key] = value;
  return out;
}

void write_calibration(const CalibrationResult& result, const CalibrationProvenance& prov,
                       const std::filesystem::path& out) {
  traces::write_files_atomically({{out, models::to_json(result.profile)},
                                  {calibration_sidecar(out), calibration_json(result, prov).dump(2) + "\n"}});
}

}  // namespace dcpsim::analysis
