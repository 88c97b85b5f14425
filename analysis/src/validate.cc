// Re-simulate measured scenarios and compare figure by figure.
#include "dcpsim/analysis/validate.h"

#include "dcpsim/analysis/stale_calibration.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "dcpsim/error.h"
#include "dcpsim/json_limits.h"

namespace dcpsim::analysis {
namespace {

using nlohmann::json;

double percentile_of(std::vector<double> v, double q) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const double pos = q * double(v.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - double(lo)) * (v[hi] - v[lo]);
}

ErrorSummary summarise(std::string key, const std::vector<const Comparison*>& items, double floor_s) {
  ErrorSummary s;
  s.key = std::move(key);
  s.count = static_cast<int>(items.size());
  if (items.empty()) return s;
  std::vector<double> err, floored;
  int within = 0, inside = 0;
  for (const Comparison* c : items) {
    err.push_back(std::abs(c->relative_error));
    floored.push_back(std::abs(c->predicted_s - c->observation.measured_s) <= floor_s ? 0.0 : err.back());
    within += c->within_tolerance ? 1 : 0;
    if (c->interval_low_s) {
      ++s.with_interval;
      inside += c->inside_interval ? 1 : 0;
    }
  }
  s.median = percentile_of(err, 0.5);
  s.p90 = percentile_of(err, 0.9);
  s.median_floored = percentile_of(floored, 0.5);
  s.p90_floored = percentile_of(floored, 0.9);
  s.max = *std::max_element(err.begin(), err.end());
  s.within_tolerance = double(within) / double(items.size());
  s.inside_interval = s.with_interval > 0 ? double(inside) / double(s.with_interval) : 0.0;
  return s;
}

Comparison compare(const Observation& o, double predicted_s, const std::optional<CalibrationInfo>& cal,
                   const ValidateOptions& opt) {
  Comparison c;
  c.observation = o;
  c.predicted_s = predicted_s;
  const double diff = predicted_s - o.measured_s;
  c.relative_error = diff / o.measured_s;
  c.within_tolerance =
      std::abs(diff) <= std::max(opt.tolerance_relative * o.measured_s, opt.tolerance_absolute_s);
  if (cal) {
    auto it = cal->sigma.find(figure_of(o));
    if (it != cal->sigma.end()) {
      // Never narrower than the traces' 1 ns resolution (exact simulated data have sigma ~1e-9).
      const double half = std::max(cal->z * it->second * predicted_s, kIntervalFloorS);
      c.interval_low_s = predicted_s - half;
      c.interval_high_s = predicted_s + half;
      c.inside_interval = o.measured_s >= *c.interval_low_s && o.measured_s <= *c.interval_high_s;
    }
  }
  return c;
}

// "table" / "analytic" for a kernel-phase observation (over every rank for rank -1), "" otherwise.
std::string price_source(const Prediction& p, const Observation& o) {
  if (o.kind != ObservationKind::kPhase) return "";
  bool any = false, analytic = false;
  for (const auto& [key, source] : p.phase_source) {
    if (o.rank >= 0 && key.first != o.rank) continue;
    if (std::find(o.sim_phases.begin(), o.sim_phases.end(), key.second) == o.sim_phases.end()) continue;
    any = true;
    analytic = analytic || source == models::FigureSource::kAnalytic;
  }
  if (!any) return "";
  return analytic ? "analytic" : "table";
}

}  // namespace

namespace {

// The member `key` of `j` (an object), or an InputError naming the sidecar and the member's JSON path.
const json& sidecar_member(const json& j, const char* key, const std::string& where) {
  if (!j.is_object()) throw InputError(where + ": expected an object, got " + j.type_name());
  const auto it = j.find(key);
  if (it == j.end()) throw InputError(where + "." + key + ": missing");
  return *it;
}

double sidecar_number(const json& j, const std::string& where) {
  if (!j.is_number()) throw InputError(where + ": expected a number, got " + j.dump().substr(0, 40));
  return j.get<double>();
}

std::string sidecar_text(const json& j, const std::string& where) {
  if (!j.is_string()) throw InputError(where + ": expected a string, got " + j.dump().substr(0, 40));
  return j.get<std::string>();
}

}  // namespace

CalibrationInfo load_calibration_info(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path.string() + ": cannot open the calibration file");
  std::stringstream text;
  text << in.rdbuf();
  CalibrationInfo info;
  info.path = path;
  const std::string file = path.string();
  const json j = parse_json_checked(text.str(), file);
  const std::string format = sidecar_text(sidecar_member(j, "format", file), file + ": format");
  if (format != "dcpsim-calibration/1")
    throw InputError(file + ": format '" + format + "' is not dcpsim-calibration/1");
  const json& residuals = sidecar_member(j, "residuals", file);
  if (!residuals.is_object()) throw InputError(file + ": residuals: expected an object");
  for (const auto& [figure, stats] : residuals.items()) {
    const std::string where = file + ": residuals." + figure;
    info.sigma[figure] = sidecar_number(sidecar_member(stats, "sigma", where), where + ".sigma");
  }
  const json& interval = sidecar_member(j, "prediction_interval", file);
  info.z = sidecar_number(sidecar_member(interval, "z", file + ": prediction_interval"),
                          file + ": prediction_interval.z");
  if (j.contains("profile")) info.profile = sidecar_text(j["profile"], file + ": profile");
  if (j.contains("base_profile"))
    info.base_profile = sidecar_text(j["base_profile"], file + ": base_profile");
  if (j.contains("domain")) info.domain = domain_from_json(j["domain"], path.string());
  return info;
}

ValidationReport validate(const models::HardwareProfile& profile, const std::optional<CalibrationInfo>& cal,
                          const std::vector<MeasuredSection>& sections, const ValidateOptions& opt) {
  ValidationReport rep;
  rep.profile = profile.name;
  rep.sections = sections;
  const ObservationSet set = build_observations(sections, opt.include_rows);
  rep.excluded = set.excluded;
  rep.implementations = implementation_uses(profile, sections);
  for (const ImplementationUse& u : rep.implementations)
    if (u.warn()) rep.warnings.push_back(missing_table_warning(u));
  // A calibration fitted on other kernels or tables than these (stale_calibration.h): say so. A sidecar
  // without the record predates `hw calibrate` and is not judged here.
  if (cal && !cal->path.empty() && std::filesystem::is_regular_file(cal->path)) {
    try {
      for (const std::string& why : stale_calibration(cal->path, {}))
        if (why.find("is gone") == std::string::npos && why.find("records no hash") == std::string::npos)
          rep.warnings.push_back("stale calibration: " + why);
    } catch (const InputError&) {
    }
  }
  // Scenarios outside the calibrated domain: one warning with each distinct reason once.
  int outside = 0;
  std::vector<std::string> reasons;
  for (const MeasuredSection& s : sections) {
    rep.emulated = rep.emulated || s.source == traces::v1::SOURCE_EMULATED;
    if (!cal || !cal->domain) continue;
    const std::string why = outside_domain(*cal->domain, s.scenario);
    if (why.empty()) continue;
    ++outside;
    std::size_t from = 0;
    while (from <= why.size()) {
      const std::size_t end = std::min(why.find("; ", from), why.size());
      const std::string reason = why.substr(from, end - from);
      if (std::find(reasons.begin(), reasons.end(), reason) == reasons.end()) reasons.push_back(reason);
      from = end + 2;
    }
  }
  if (outside > 0) {
    std::string text;
    for (const std::string& r : reasons) text += (text.empty() ? "" : "; ") + r;
    rep.warnings.push_back(std::to_string(outside) + " of " + std::to_string(sections.size()) +
                           " scenarios lie outside the calibrated domain: " + text);
  }

  const Predictor predictor(profile, PredictOptions{opt.measured_kernels});
  std::map<int, Prediction> cache;
  std::map<std::string, int> unmatched;
  int inputs = 0;
  for (const Observation& o : set.observations) {
    if (opt.measured_kernels && is_measured_kernel_input(sections[o.section], o)) {
      ++inputs;
      continue;
    }
    auto it = cache.find(o.section);
    if (it == cache.end()) it = cache.emplace(o.section, predictor.predict(sections[o.section])).first;
    const double p = predicted(it->second, o);
    if (!std::isfinite(p)) {
      ++unmatched[figure_of(o)];
      continue;
    }
    rep.comparisons.push_back(compare(o, p, cal, opt));
    rep.comparisons.back().price_source = price_source(it->second, o);
    rep.has_intervals = rep.has_intervals || rep.comparisons.back().interval_low_s.has_value();
  }
  if (inputs > 0) {
    rep.excluded.push_back(std::to_string(inputs) +
                           " kernel phase medians: with --kernels measured they price their own kernels "
                           "(less the event pair's cost where event-timed) instead of being compared");
  }
  for (const auto& [figure, n] : unmatched) {
    rep.warnings.push_back(std::to_string(n) + " measured '" + figure +
                           "' figures have no simulated counterpart and are not compared");
  }
  if (rep.comparisons.empty()) {
    throw InputError("validate: no measured figure could be compared with the simulation (" +
                     std::to_string(sections.size()) + " sections)");
  }

  std::map<std::string, std::vector<const Comparison*>> by_figure;
  std::map<int, std::vector<const Comparison*>> by_section;
  std::vector<const Comparison*> everything;
  for (const Comparison& c : rep.comparisons) {
    by_figure[figure_of(c.observation)].push_back(&c);
    by_section[c.observation.section].push_back(&c);
    everything.push_back(&c);
  }
  for (const auto& [figure, items] : by_figure)
    rep.per_figure.push_back(summarise(figure, items, opt.tolerance_absolute_s));
  rep.per_figure.push_back(summarise("all", everything, opt.tolerance_absolute_s));
  for (const auto& [section, items] : by_section)
    rep.per_section.push_back(summarise(sections[section].where(), items, opt.tolerance_absolute_s));
  std::map<std::string, std::vector<const Comparison*>> by_source, source_totals;
  for (const Comparison& c : rep.comparisons) {
    if (c.price_source.empty()) continue;
    by_source[figure_of(c.observation) + " [" + c.price_source + "]"].push_back(&c);
    source_totals["all [" + c.price_source + "]"].push_back(&c);
  }
  for (const auto& [key, items] : by_source)
    rep.per_source.push_back(summarise(key, items, opt.tolerance_absolute_s));
  for (const auto& [key, items] : source_totals)
    rep.per_source.push_back(summarise(key, items, opt.tolerance_absolute_s));
  rep.median_error = rep.per_figure.back().median;
  rep.passed = rep.median_error <= opt.max_median_error;
  return rep;
}

}  // namespace dcpsim::analysis
