// The fit and validation stages of `dcpsim hw calibrate` (calibration_fit.h).
#include "dcpsim/analysis/calibration_fit.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "dcpsim/analysis/calibrate.h"
#include "dcpsim/analysis/fit_params.h"
#include "dcpsim/analysis/measured.h"
#include "dcpsim/analysis/stale_calibration.h"
#include "dcpsim/error.h"
#include "dcpsim/text_file.h"
#include "dcpsim/traces/output_file.h"

namespace dcpsim::analysis {
namespace {

bool cf_exists(const std::string& p) {
  std::error_code ec;
  return std::filesystem::is_regular_file(p, ec);
}

// The traces of one step set that were measured (failed steps left out).
std::vector<std::filesystem::path> cf_step_traces(const CalibrationPlan& plan, const CalibrationPaths& paths,
                                                  const std::string& set) {
  std::vector<std::filesystem::path> out;
  for (const CalibrationStage& s : plan.stages) {
    if (s.kind != StageKind::kSteps || s.set != set) continue;
    for (const CalibrationStep& step : s.steps)
      if (const std::string f = paths.measured_step(set, step.name); !f.empty()) out.emplace_back(f);
  }
  return out;
}

std::vector<MeasuredSection> cf_sections(const std::vector<std::filesystem::path>& files) {
  std::vector<MeasuredTrace> traces;
  for (const auto& f : files) traces.push_back(load_measured(f));
  return all_sections(traces);
}

std::string cf_pct(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f%%", 100.0 * x);
  return buf;
}

// What the fit may move: the PDL and graph savings, each merge kernel's own term after a copy node, the PDL
// gap and the dirty-L2 write-back share, which only steps show. Everything else was measured directly
// (tables, device facts, gaps off the timeline) or is not seen in emulated steps.
bool cf_free_parameter(const std::string& name) {
  return name.rfind("launch.pdl_saving_", 0) == 0 || name.rfind("launch.graph_saving_", 0) == 0 ||
         name.rfind("launch.kernel_after_copy_node_", 0) == 0 || name == "launch.dependent_gap_pdl" ||
         name == "kernel.l2_dirty_writeback";
}

}  // namespace

bool fit_available() {
#if DCPSIM_WITH_SIMGRID
  return true;
#else
  return false;
#endif
}

std::string calibrated_description(const std::string& base_description, const DeviceRecord& device,
                                   const std::string& date, bool fitted) {
  std::string out = base_description;
  if (const auto at = out.find("; measured on ");
      at != std::string::npos && out.find("by dcpsim hw calibrate", at) != std::string::npos)
    out.erase(at);
  out += "; measured on " + device.name + " (" + device.uuid + ") by dcpsim hw calibrate " + date;
  return out + (fitted
                    ? ": tables, device facts, launch gaps, PDL and graph savings, the copy-node terms and "
                      "the dirty-L2 write-back (the .calibration.json sidecar says how)"
                    : " (tables, device facts, launch gaps; not yet fitted on steps)");
}

std::string provisional_profile(const models::HardwareProfile& base, const DeviceRecord& device,
                                const CalibrationPlan& plan, const CalibrationPaths& paths,
                                std::vector<std::string>& lines) {
  std::vector<std::string> notes;
  models::HardwareProfile p = assemble_profile(base, device, plan, paths, notes);
  p.description = calibrated_description(base.description, device, device.date, false);
  traces::write_file_atomically(paths.profile(), models::to_json(p));
  for (const std::string& n : notes) lines.push_back("  " + n);
  return "wrote " + paths.profile() + " (measured, not yet fitted on steps)";
}

void fit_stage(const models::HardwareProfile& base, const DeviceRecord& device, const CalibrationPlan& plan,
               const CalibrationPaths& paths, const CalibrateRunOptions& o, const std::string& date,
               std::vector<std::string>& lines) {
  std::vector<std::string> notes;
  const models::HardwareProfile p0 = assemble_profile(base, device, plan, paths, notes);
  lines.push_back("measured:");
  for (const std::string& n : notes) lines.push_back("  " + n);
  const std::vector<std::filesystem::path> fit = cf_step_traces(plan, paths, "fit");
  const std::vector<std::filesystem::path> pdl = cf_step_traces(plan, paths, "pdl");
  std::vector<std::filesystem::path> all = fit;
  all.insert(all.end(), pdl.begin(), pdl.end());
  if (all.empty())
    throw RuntimeError("fit: no fit or PDL step was measured (every one failed; see " + paths.work() + ")");
  CalibrateOptions opt;
  opt.per_kernel_type = false;
  for (const FitParameter& f : fit_parameters())
    if (!cf_free_parameter(f.name)) opt.fixed.push_back(f.name);
  CalibrationProvenance prov;
  // Named relative to the profile, as they sit beside it (sources stay meaningful where the files travel).
  for (const auto& f : all)
    prov.traces.push_back(paths.dir.empty() ? f : f.lexically_relative(std::filesystem::path(paths.dir)));
  prov.date = date;
  prov.name = o.name.empty() ? paths.stem : o.name;
  std::vector<std::filesystem::path> tables;
  // The tables the command wrote, and those of the base it kept where they are files (a built-in's embedded
  // op tables are not, and the kernels' hash covers none of them).
  for (const models::KernelTables& t : p0.tables) {
    std::error_code ec;
    const std::filesystem::path file = existing_or_gz(paths.dir + t.origin);  // X.json may be X.json.gz
    if (std::filesystem::is_regular_file(file, ec)) tables.emplace_back(file);
  }
  prov.extra["calibrate"] = {
      {"plan", plan.fingerprint()},
      {"command", o.command},
      {"device", device_json(device)},
      {"measured", notes},
      {"free_parameters",
       "launch.pdl_saving_*, launch.graph_saving_*, launch.kernel_after_copy_node_<kernel>, "
       "launch.dependent_gap_pdl, kernel.l2_dirty_writeback (every other number measured directly or kept "
       "from the base)"}};
  prov.extra["fitted_on"] = fitted_on_json(tables);
  CalibrationResult r;
  try {
    r = calibrate(p0, cf_sections(all), {}, opt);
  } catch (const InputError& e) {
    // Nothing the steps identify (no PDL step measured): the measured profile stands as it is.
    r.base = p0;
    r.profile = p0;
    for (const FitParameter& f : fit_parameters())
      r.parameters.push_back(
          {f.name, f.group, f.quantity(p0), f.quantity(p0), false, false, 0.0, "not fitted"});
    lines.push_back("fit: nothing to fit (" + std::string(e.what()) + ")");
  }
  stamp_sources(r, prov);
  const bool any_fitted = std::any_of(r.parameters.begin(), r.parameters.end(),
                                      [](const ParameterResult& q) { return q.fitted; });
  r.profile.description = calibrated_description(base.description, device, date, any_fitted);
  write_calibration(r, prov, paths.profile());
  for (const ParameterResult& p : r.parameters)
    if (p.fitted)
      lines.push_back("fitted " + p.name + " = " + std::to_string(p.result.value) + " " +
                      std::string(models::to_string(p.result.unit)) + " (rel. std. error " +
                      cf_pct(p.relative_std_error) + ")");
  for (const ResidualStats& s : r.residuals)
    if (s.figure == "all")
      lines.push_back("fit and PDL steps: " + std::to_string(s.count) + " kernel figures, |error| median " +
                      cf_pct(s.p50) + ", p90 " + cf_pct(s.p90));
}

ValidationReport validate_stage(const CalibrationPaths& paths, const CalibrateRunOptions& o,
                                std::vector<std::string>& lines) {
  // The profile as every command loads it: from its file, tables beside it.
  const models::HardwareProfile profile = models::load_profile(paths.profile());
  std::optional<CalibrationInfo> info;
  if (cf_exists(paths.sidecar())) {
    try {
      info = load_calibration_info(paths.sidecar());
    } catch (const InputError&) {
      info.reset();  // the sidecar of a run whose fit found nothing to fit: no intervals
    }
  }
  std::vector<std::filesystem::path> files;
  int failed = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(paths.work() + "holdout", ec)) {
    const std::string f = e.path().string();
    if (f.ends_with(".pb") || f.ends_with(".pb.gz")) files.push_back(e.path());
    if (f.ends_with(".failed.txt")) ++failed;
  }
  std::sort(files.begin(), files.end());
  if (files.empty())
    throw RuntimeError("validate: no held-out step was measured (see " + paths.work() + "holdout/)");
  ValidateOptions opt;
  opt.max_median_error = 0.03;
  const ValidationReport rep = validate(profile, info, cf_sections(files), opt);
  traces::write_files_atomically(
      {{paths.work() + "validation.md", validation_markdown(rep, opt, o.command + " (held-out steps)")},
       {paths.work() + "validation.csv", validation_csv(rep)}});
  char buf[256];
  lines.push_back("held-out validation (" + std::to_string(files.size()) + " steps, " +
                  std::to_string(failed) + " failed; kernel phases; " + paths.work() + "validation.md):");
  std::snprintf(buf, sizeof buf, "  %-12s %6s %9s %9s %11s %9s", "figure", "n", "median", "p90", "p90-floor",
                "max");
  lines.push_back(buf);
  const ErrorSummary* all = nullptr;
  for (const ErrorSummary& s : rep.per_figure) {
    std::snprintf(buf, sizeof buf, "  %-12s %6d %9s %9s %11s %9s", s.key.c_str(), s.count,
                  cf_pct(s.median).c_str(), cf_pct(s.p90).c_str(), cf_pct(s.p90_floored).c_str(),
                  cf_pct(s.max).c_str());
    lines.push_back(buf);
    if (s.key == "all") all = &s;
  }
  int analytic = 0;
  for (const Comparison& c : rep.comparisons) analytic += c.price_source == "analytic";
  if (analytic > 0)
    lines.push_back("  " + std::to_string(analytic) + " figures priced analytically (outside every table)");
  if (all) {
    const bool med = all->median <= 0.03, p90 = all->p90_floored <= 0.08;
    lines.push_back(std::string("targets: median ") + cf_pct(all->median) +
                    (med ? " <= 3% met" : " > 3% NOT met") + "; p90 (0.5 us floor) " +
                    cf_pct(all->p90_floored) + (p90 ? " <= 8% met" : " > 8% NOT met"));
  }
  return rep;
}

}  // namespace dcpsim::analysis
