#pragma once
// `dcpsim calibrate`: fit a hardware profile to measured traces.
//
// Every measured figure the trace's source measures faithfully (observations.h) is re-simulated under the
// profile; the profile numbers in fit_params.h are fitted by bounded least squares on relative errors
// (least_squares.h): Gauss–Newton steps whose Jacobian comes from the simulator itself (finite differences in
// coordinates where the model is linear, so one step is exact for kernels), each step solved with the bounds
// that keep the profile valid, with a backtracking line search. Parameters the data do not identify (no
// figure depends on them, they are confounded with an earlier one, or their relative standard error stays
// above a threshold) keep the base profile's value and source; fitted ones get a source naming the fit.
//
// Outputs: a complete profile (same JSON format, loadable by load_profile) and a sidecar
// "<out minus .json>.calibration.json" with provenance, the domain covered, the fitted parameters and the
// residual statistics that validate turns into prediction intervals.
#include <filesystem>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dcpsim/analysis/fit_params.h"
#include "dcpsim/analysis/measured.h"
#include "dcpsim/models/profile.h"

namespace dcpsim::analysis {

struct CalibrateOptions {
  int max_iterations = 20;
  // A parameter whose relative standard error exceeds this after the fit is "weakly identified" and reverted
  // to the base value (the fit is then redone without it).
  double max_relative_std_error = 0.5;
  // Parameters never fitted (names from fit_params.h), e.g. to keep a number measured another way.
  std::vector<std::string> fixed;
  // When not empty: only these parameters are candidates (every other keeps the base value), e.g. the in-step
  // and signal numbers fitted on real two-GPU steps with the NCCL numbers kept from a table fit.
  std::vector<std::string> only;
  // Huber's loss instead of plain least squares, so that a few pathological figures do not drag the fit.
  bool robust = true;
  // Also fit each kernel phase on its own (CalibrationResult::per_kernel_type).
  bool per_kernel_type = true;
  // Price every measured kernel phase from its own median (trace-driven: validate.h) and fit only what is
  // left: communication, launches, signals. Kernel phases are then inputs, not figures.
  bool measured_kernels = false;
  // Called with one line per Gauss–Newton iteration when set.
  std::function<void(const std::string&)> progress;
};

// Prediction intervals: predicted × (1 ± kIntervalZ × sigma of the figure's relative residuals), a two-sided
// 95% interval when the relative residuals are roughly normal.
// The half-width is never below kIntervalFloorS, the 1 ns resolution of trace times.
inline constexpr double kIntervalZ = 1.96;
inline constexpr double kIntervalFloorS = 1e-9;

// Relative residuals (predicted − measured) / measured of one kind of figure.
struct ResidualStats {
  std::string figure;  // a simulator phase, "step", "row_lse" or "row_output"; "all" for every figure
  int count = 0;
  double p50 = 0, p90 = 0, max = 0;  // of |relative residual|
  double mean = 0;                   // signed: a bias
  double rms = 0;                    // root mean square
  // 1.4826 × p50: a standard deviation robust to outliers (equal to it for normal residuals), used for
  // prediction intervals so that a few pathological figures do not widen every band.
  double sigma = 0;
};

// Groups relative residuals by figure; the result's last entry is "all".
std::vector<ResidualStats> residual_stats(const std::vector<std::string>& figures,
                                          const std::vector<double>& relative);

struct ParameterResult {
  std::string name;
  ParameterGroup group = ParameterGroup::kKernel;
  models::Quantity base;    // as in the base profile
  models::Quantity result;  // as written to the calibrated profile
  bool fitted = false;
  bool at_bound = false;
  double relative_std_error = 0.0;  // of the fitted coordinate (0 when not fitted)
  std::string status;               // "fitted", or why not
};

// The scenarios a calibration saw; validate warns outside them.
struct CalibrationDomain {
  std::set<int> dcp;
  std::set<std::string> geometries;  // "h128 kv1 d512/576"
  std::set<std::string> strategies;
  std::set<std::string> launch_modes;
  std::int64_t min_context = 0, max_context = 0;
  int min_rows = 0, max_rows = 0;
};
CalibrationDomain domain_of(const std::vector<MeasuredSection>& sections);
std::string geometry_label(const models::Scenario& s);
nlohmann::json domain_json(const CalibrationDomain& d);
// Throws InputError naming `origin` and the field when `j` is not a domain as domain_json() writes it.
CalibrationDomain domain_from_json(const nlohmann::json& j, const std::string& origin);
// Empty when `s` lies inside `d`; otherwise what lies outside, e.g. "dcp 16 not in {2, 4, 8}".
std::string outside_domain(const CalibrationDomain& d, const models::Scenario& s);

// The memory-kernel and attention numbers fitted to one kernel phase alone. The profile has one memory-kernel
// model shared by correction, pack and combine (and the split-KV combine), so the calibrated profile carries
// the joint fit; these per-type fits show how far the kernel types disagree, and what per-type numbers would
// give, if the profile schema grew them.
struct KernelTypeFit {
  std::string figure;  // "attention", "correction", "pack", "combine"
  int figures = 0;
  std::vector<ParameterResult> parameters;  // the fitted ones
  ResidualStats residuals;
};

struct CalibrationResult {
  models::HardwareProfile base;
  models::HardwareProfile profile;
  std::vector<ParameterResult> parameters;
  std::vector<ResidualStats> residuals;          // over the fitted figures, per figure then "all"
  std::vector<ResidualStats> holdout_residuals;  // over the held-out figures (empty without hold-out)
  CalibrationDomain domain;
  int observations = 0;
  int fit_sections = 0;
  int holdout_sections = 0;
  int iterations = 0;
  std::vector<std::string> excluded;  // figures left out and why
  std::vector<std::string> warnings;
  std::vector<KernelTypeFit> per_kernel_type;
  int downweighted = 0;               // figures Huber's loss treated as outliers (weight < 1)
  std::vector<std::string> outliers;  // the largest fit residuals, one line each
};

// Fits `base` to the figures of `fit`; figures of `holdout` are only re-simulated with the result. Throws
// InputError when nothing can be fitted (no faithful figure, or no parameter identified).
CalibrationResult calibrate(const models::HardwareProfile& base, const std::vector<MeasuredSection>& fit,
                            const std::vector<MeasuredSection>& holdout,
                            const CalibrateOptions& options = {});

// What the fitted quantities' sources and the sidecar say about where the data came from.
struct CalibrationProvenance {
  std::vector<std::filesystem::path> traces;          // fitted, as given on the command line
  std::vector<std::filesystem::path> holdout_traces;  // only checked (--hold-out-file)
  std::vector<traces::v1::Header> headers;            // of all of them
  std::string date;                                   // YYYY-MM-DD; empty: today (UTC)
  std::string name;  // the calibrated profile's name; empty: base name + "-calibrated"
  // Further top-level fields of the sidecar (`dcpsim hw calibrate`: "calibrate", "fitted_on").
  nlohmann::json extra = nlohmann::json::object();
};

// Writes the fitted parameters' sources, the name and the description into result.profile.
void stamp_sources(CalibrationResult& result, const CalibrationProvenance& provenance);

// "<dir>/<stem>.calibration.json" for "<dir>/<stem>.json".
std::filesystem::path calibration_sidecar(const std::filesystem::path& profile_path);

nlohmann::json calibration_json(const CalibrationResult& result, const CalibrationProvenance& provenance);

// Writes the profile to `out` and the sidecar next to it, each through a temporary file and a rename.
void write_calibration(const CalibrationResult& result, const CalibrationProvenance& provenance,
                       const std::filesystem::path& out);

}  // namespace dcpsim::analysis
