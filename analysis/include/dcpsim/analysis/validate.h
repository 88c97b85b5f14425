#pragma once
// `dcpsim validate`: re-simulate every measured scenario under a profile and compare, figure by figure (phase
// medians per rank, the step, per-row ready times where measured), with the relative error, a tolerance band
// of max(3%, 0.5 µs), and the prediction intervals of the profile's calibration (calibrate.h) when its
// sidecar is present. Emulated traces are compared on kernel phases only (phase_map.h), and the report says
// so.
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "dcpsim/analysis/calibrate.h"
#include "dcpsim/analysis/implementations.h"
#include "dcpsim/analysis/measured.h"
#include "dcpsim/analysis/observations.h"
#include "dcpsim/models/profile.h"

namespace dcpsim::analysis {

// What validate takes from a calibration sidecar.
struct CalibrationInfo {
  std::filesystem::path path;
  std::map<std::string, double> sigma;  // per figure (and "all"): RMS relative residual of the fit
  double z = kIntervalZ;
  std::optional<CalibrationDomain> domain;
  std::string profile, base_profile;  // the calibrated profile's name and its base's ("" in older sidecars)
};
// Reads a sidecar written by write_calibration(); InputError naming the file and field otherwise.
CalibrationInfo load_calibration_info(const std::filesystem::path& path);

struct ValidateOptions {
  double max_median_error = 0.05;  // the gate: median |relative error| over every compared figure
  double tolerance_relative = 0.03;
  double tolerance_absolute_s = 0.5e-6;
  bool include_rows = true;
  // Trace-driven validation (`--kernels measured`): kernel phases priced from the trace's own medians
  // (observations.h, PredictOptions) and left out of the comparison; communication, launches, signals, the
  // step and rows are what is validated.
  bool measured_kernels = false;
};

struct Comparison {
  Observation observation;
  double predicted_s = 0.0;
  double relative_error = 0.0;  // (predicted − measured) / measured
  bool within_tolerance = false;
  std::optional<double> interval_low_s, interval_high_s;
  bool inside_interval = false;
  // Kernel phases: "table" when every kernel behind the figure was priced from a measured table of the
  // profile, "analytic" otherwise; "" for figures that are not kernel phases (communication, step, rows).
  std::string price_source;
};

struct ErrorSummary {
  std::string key;  // a figure ("attention", "step", ...), a section where(), or "all"
  int count = 0;
  double median = 0, p90 = 0, max = 0;  // of |relative error|
  // The same with the absolute floor (ValidateOptions::tolerance_absolute_s, 0.5 µs): a figure whose error is
  // within the floor counts as 0. A target "p90 ≤ 8% (floor 0.5 µs)" is p90_floored ≤ 8%: nine figures in ten
  // within max(8%, 0.5 µs).
  double median_floored = 0, p90_floored = 0;
  double within_tolerance = 0;  // share of comparisons within max(3%, 0.5 µs)
  int with_interval = 0;
  double inside_interval = 0;  // share of those with an interval that fall inside it
};

struct ValidationReport {
  std::string profile;
  std::vector<MeasuredSection> sections;
  std::vector<Comparison> comparisons;
  std::vector<ErrorSummary> per_figure;   // ends with "all"
  std::vector<ErrorSummary> per_section;  // one per section with comparisons
  // Kernel phases by price source: "<figure> [table]", "<figure> [analytic]", then "all [table]" and
  // "all [analytic]" (figures that are not kernel phases are not in it).
  std::vector<ErrorSummary> per_source;
  std::vector<std::string> excluded;  // figures left out and why
  std::vector<std::string> warnings;  // scenarios outside the calibrated domain, unmatched figures
  // The implementation each kernel family ran and what priced it (implementations.h); a warning each where
  // the profile has no table for it.
  std::vector<ImplementationUse> implementations;
  bool emulated = false;  // some section came from an emulated trace
  bool has_intervals = false;
  double median_error = 0.0;
  bool passed = false;
};

// Throws InputError when no figure can be compared.
ValidationReport validate(const models::HardwareProfile& profile,
                          const std::optional<CalibrationInfo>& calibration,
                          const std::vector<MeasuredSection>& sections, const ValidateOptions& options = {});

// `command` is the command line to record in the report.
std::string validation_markdown(const ValidationReport& report, const ValidateOptions& options,
                                const std::string& command);
std::string validation_csv(const ValidationReport& report);

}  // namespace dcpsim::analysis
