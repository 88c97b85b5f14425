// The calibration: observations, the joint fit, per-kernel-type fits, residual statistics, hold-out.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>

#include "dcpsim/analysis/calibrate.h"
#include "dcpsim/analysis/phase_map.h"
#include "dcpsim/error.h"
#include "fit_engine.h"

namespace dcpsim::analysis {
namespace {

using models::HardwareProfile;

double interpolated_quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const double pos = q * double(v.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - double(lo)) * (v[hi] - v[lo]);
}

ResidualStats stats_of(std::string figure, const std::vector<double>& rel) {
  ResidualStats s;
  s.figure = std::move(figure);
  s.count = static_cast<int>(rel.size());
  if (rel.empty()) return s;
  std::vector<double> abs_rel;
  double sum = 0, sum2 = 0;
  for (double r : rel) {
    abs_rel.push_back(std::abs(r));
    sum += r;
    sum2 += r * r;
  }
  s.p50 = interpolated_quantile(abs_rel, 0.5);
  s.p90 = interpolated_quantile(abs_rel, 0.9);
  s.max = *std::max_element(abs_rel.begin(), abs_rel.end());
  s.mean = sum / double(rel.size());
  s.rms = std::sqrt(sum2 / double(rel.size()));
  s.sigma = 1.4826 * s.p50;
  return s;
}

std::vector<double> relative_residuals(const HardwareProfile& p, const std::vector<MeasuredSection>& sections,
                                       const std::vector<Observation>& obs, std::vector<std::string>& figures,
                                       const PredictOptions& options = {}) {
  const Eigen::VectorXd f = detail::predict_all(p, sections, obs, options);
  std::vector<double> rel;
  for (std::size_t i = 0; i < obs.size(); ++i) {
    const double v = f(static_cast<Eigen::Index>(i));
    if (!std::isfinite(v)) continue;
    rel.push_back(v / obs[i].measured_s - 1.0);
    figures.push_back(figure_of(obs[i]));
  }
  return rel;
}

// The largest residuals of the fit, for the sidecar: where a model or a kernel misbehaves.
void note_outliers(const detail::Problem& pb, const detail::FitRun& f, CalibrationResult& res) {
  std::vector<Eigen::Index> order;
  for (Eigen::Index i = 0; i < f.residuals.size(); ++i) {
    if (f.weights(i) < 1.0) order.push_back(i);
  }
  res.downweighted = static_cast<int>(order.size());
  std::sort(order.begin(), order.end(), [&](Eigen::Index a, Eigen::Index b) {
    return std::abs(f.residuals(a)) > std::abs(f.residuals(b));
  });
  order.resize(std::min<std::size_t>(order.size(), 10));
  for (Eigen::Index i : order) {
    const Observation& o = pb.obs[static_cast<std::size_t>(i)];
    const double ratio = std::exp(f.residuals(i));
    char line[160];
    std::snprintf(line, sizeof line, " %s rank %d: measured %.3f us, predicted %.3f us (%+.1f%%)",
                  figure_of(o).c_str(), o.rank, o.measured_s * 1e6, o.measured_s * ratio * 1e6,
                  100 * (ratio - 1));
    res.outliers.push_back(pb.sections[static_cast<std::size_t>(o.section)].where() + line);
  }
}

std::vector<ParameterResult> fresh_results(const HardwareProfile& base) {
  std::vector<ParameterResult> out;
  for (const FitParameter& p : fit_parameters()) {
    out.push_back({p.name, p.group, p.quantity(base), p.quantity(base), false, false, 0.0, ""});
  }
  return out;
}

// Writes the fitted parameters' results (value, bound, standard error) from a run.
void record_fit(const detail::FitRun& run, std::vector<ParameterResult>& results) {
  const auto& all = fit_parameters();
  for (std::size_t k = 0; k < run.active.size(); ++k) {
    const auto i = static_cast<Eigen::Index>(k);
    ParameterResult& r = results[static_cast<std::size_t>(run.active[k])];
    r.fitted = true;
    r.result = all[static_cast<std::size_t>(run.active[k])].quantity(run.profile);
    r.at_bound = run.at_bound(i) > 0;
    r.relative_std_error = run.std_error(i);
    r.status = r.at_bound ? "fitted (at its bound)" : "fitted";
  }
}

// Each kernel phase fitted alone, over the kernel and launch parameters.
std::vector<KernelTypeFit> per_kernel_type(const detail::Problem& pb, const std::vector<int>& candidates,
                                           const CalibrateOptions& options) {
  std::vector<KernelTypeFit> out;
  for (const char* figure : {"attention", "correction", "pack", "combine"}) {
    detail::Problem sub{pb.base, pb.sections, {}, {}, {}, pb.predict_options};
    for (const Observation& o : pb.obs) {
      if (o.kind == ObservationKind::kPhase && o.phase == figure) sub.obs.push_back(o);
    }
    if (sub.obs.size() < 8) continue;
    sub.y.resize(static_cast<Eigen::Index>(sub.obs.size()));
    for (std::size_t i = 0; i < sub.obs.size(); ++i)
      sub.y(static_cast<Eigen::Index>(i)) = sub.obs[i].measured_s;
    std::vector<int> kernel_candidates;
    for (int k : candidates) {
      const ParameterGroup g = fit_parameters()[static_cast<std::size_t>(k)].group;
      if (g == ParameterGroup::kKernel || g == ParameterGroup::kLaunch) kernel_candidates.push_back(k);
    }
    std::vector<ParameterResult> results = fresh_results(pb.base);
    CalibrateOptions quiet = options;
    quiet.progress = nullptr;
    KernelTypeFit f;
    f.figure = figure;
    f.figures = static_cast<int>(sub.obs.size());
    try {
      const detail::FitRun run = detail::fit(sub, kernel_candidates, quiet, results);
      record_fit(run, results);
      std::vector<double> rel;
      for (Eigen::Index i = 0; i < run.residuals.size(); ++i) rel.push_back(std::exp(run.residuals(i)) - 1);
      f.residuals = residual_stats(std::vector<std::string>(rel.size(), figure), rel).back();
      f.residuals.figure = figure;
    } catch (const InputError&) {
      continue;  // nothing identified from this kernel alone
    }
    for (const ParameterResult& r : results) {
      if (r.fitted) f.parameters.push_back(r);
    }
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace

std::vector<ResidualStats> residual_stats(const std::vector<std::string>& figures,
                                          const std::vector<double>& relative) {
  std::map<std::string, std::vector<double>> by_figure;
  for (std::size_t i = 0; i < figures.size(); ++i) by_figure[figures[i]].push_back(relative[i]);
  std::vector<ResidualStats> out;
  for (const auto& [figure, rel] : by_figure) out.push_back(stats_of(figure, rel));
  out.push_back(stats_of("all", relative));
  return out;
}

CalibrationResult calibrate(const HardwareProfile& base, const std::vector<MeasuredSection>& fit,
                            const std::vector<MeasuredSection>& holdout, const CalibrateOptions& options) {
  models::validate_profile(base, "base profile " + base.name);
  CalibrationResult res;
  res.base = base;
  res.fit_sections = static_cast<int>(fit.size());
  res.holdout_sections = static_cast<int>(holdout.size());
  res.domain = domain_of(fit);
  // Per-row ready times are left to validate: thousands of them per step, all driven by the same phases,
  // would outweigh the phase medians they follow from.
  ObservationSet set = build_observations(fit, /*include_rows=*/false);
  if (options.measured_kernels) {
    const std::size_t before = set.observations.size();
    std::erase_if(set.observations,
                  [&](const Observation& o) { return is_measured_kernel_input(fit[o.section], o); });
    set.excluded.push_back(std::to_string(before - set.observations.size()) +
                           " kernel phase medians: priced from themselves (--kernels measured), not fitted");
  }
  res.excluded = set.excluded;
  const PredictOptions predict_options{options.measured_kernels};
  const detail::Problem pb = detail::make_problem(base, fit, set.observations, res.warnings, predict_options);
  if (pb.obs.empty()) {
    throw InputError("calibrate: the traces hold no figure the simulator can be fitted to (" +
                     std::to_string(fit.size()) + " sections; see the excluded figures)");
  }
  res.observations = static_cast<int>(pb.obs.size());

  res.parameters = fresh_results(base);
  std::vector<int> candidates;
  for (const std::string& name : options.fixed) fit_parameter(name);  // an unknown name is an InputError
  for (const std::string& name : options.only) fit_parameter(name);
  for (int k = 0; k < static_cast<int>(res.parameters.size()); ++k) {
    ParameterResult& r = res.parameters[static_cast<std::size_t>(k)];
    if (std::find(options.fixed.begin(), options.fixed.end(), r.name) != options.fixed.end()) {
      r.status = "held fixed (--fix), kept from the base profile";
    } else if (!options.only.empty() &&
               std::find(options.only.begin(), options.only.end(), r.name) == options.only.end()) {
      r.status = "not a candidate (--only), kept from the base profile";
    } else if (options.only.empty() && is_in_step_parameter(r.name)) {
      r.status =
          "an in-step, event-timing or one-sided number: fitted only when named with --only (real "
          "multi-GPU steps with --kernels measured: scripts/comm_fits.sh), kept from the base profile";
    } else {
      candidates.push_back(k);
    }
  }
  const detail::FitRun run = detail::fit(pb, candidates, options, res.parameters);
  record_fit(run, res.parameters);
  res.iterations = run.iterations;
  res.profile = run.profile;
  models::validate_profile(res.profile, "calibrated profile");
  note_outliers(pb, run, res);
  if (options.per_kernel_type) res.per_kernel_type = per_kernel_type(pb, candidates, options);

  std::vector<std::string> figures;
  const std::vector<double> rel = relative_residuals(res.profile, fit, pb.obs, figures, predict_options);
  res.residuals = residual_stats(figures, rel);
  if (!holdout.empty()) {
    ObservationSet held = build_observations(holdout);
    if (options.measured_kernels) {
      std::erase_if(held.observations,
                    [&](const Observation& o) { return is_measured_kernel_input(holdout[o.section], o); });
    }
    std::vector<std::string> held_figures;
    const std::vector<double> held_rel =
        relative_residuals(res.profile, holdout, held.observations, held_figures, predict_options);
    res.holdout_residuals = residual_stats(held_figures, held_rel);
  }
  return res;
}

}  // namespace dcpsim::analysis
