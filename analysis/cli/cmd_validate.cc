// dcpsim validate: re-simulate measured scenarios and compare (analysis/validate.h). Exits 1 when the median
// relative error exceeds --max-median-err.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

#include "commands.h"
#include "dcpsim/analysis/consistency.h"
#include "dcpsim/analysis/io_inputs.h"
#include "dcpsim/analysis/memory_estimate.h"
#include "dcpsim/analysis/plot.h"
#include "dcpsim/analysis/validate.h"
#include "dcpsim/error.h"
#include "dcpsim/traces/output_file.h"

namespace dcpsim::cli {
namespace {

struct ValidateArgs {
  std::vector<std::string> measured;
  std::string profile = "h200-sxm";  // the default profile of every command
  std::string calibration;
  std::string report;
  std::string csv;
  std::string plot;
  double max_median_err = 0.05;
  bool no_rows = false;
  std::string kernels = "model";
  std::vector<std::string> argv;
};

std::string pct(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f%%", 100.0 * x);
  return buf;
}

// The sidecar named by --calibration, else the one next to a profile file, else none (no intervals).
std::optional<analysis::CalibrationInfo> calibration_for(const ValidateArgs& a) {
  if (!a.calibration.empty()) return analysis::load_calibration_info(a.calibration);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(a.profile, ec)) return std::nullopt;
  const std::filesystem::path sidecar = analysis::calibration_sidecar(a.profile);
  if (!std::filesystem::is_regular_file(sidecar, ec)) return std::nullopt;
  return analysis::load_calibration_info(sidecar);
}

std::string command_line(const std::vector<std::string>& argv) {
  std::string out = "dcpsim validate";
  for (const std::string& s : argv) out += " " + s;
  return out;
}

void print_report(const analysis::ValidationReport& r, const analysis::ValidateOptions& opt) {
  std::printf("%-12s %6s %9s %9s %9s %9s %9s %9s\n", "figure", "n", "median", "p90", "max", "p90-floor",
              "in-tol", "in-band");
  for (const analysis::ErrorSummary& s : r.per_figure) {
    std::printf("%-12s %6d %9s %9s %9s %9s %9s %9s\n", s.key.c_str(), s.count, pct(s.median).c_str(),
                pct(s.p90).c_str(), pct(s.max).c_str(), pct(s.p90_floored).c_str(),
                pct(s.within_tolerance).c_str(),
                s.with_interval > 0 ? pct(s.inside_interval).c_str() : "n/a");
  }
  std::cout << "(p90-floor: the p90 with an error within " << opt.tolerance_absolute_s * 1e6
            << " us counted as 0; in-tol: the share within max(" << pct(opt.tolerance_relative) << ", "
            << opt.tolerance_absolute_s * 1e6 << " us))\n";
  if (!r.implementations.empty()) std::cout << "kernels by implementation:\n";
  for (const analysis::ImplementationUse& u : r.implementations) std::cout << "  " << describe(u) << "\n";
  if (r.emulated) std::cout << "note: emulated traces: kernel phases only\n";
  for (const std::string& e : r.excluded) std::cout << "note: left out " << e << "\n";
  for (const std::string& w : r.warnings) std::cerr << "warning: " << w << "\n";
  std::cout << (r.passed ? "PASS" : "FAIL") << ": median |relative error| " << pct(r.median_error)
            << " (limit " << pct(opt.max_median_error) << ")\n";
}

void run(const ValidateArgs& a) {
  IoGuard io;
  analysis::guard_profile(io, "--profile", a.profile);
  analysis::guard_calibration(io, "--calibration", a.calibration, a.profile);
  analysis::guard_measured(io, "--measured", a.measured);
  io.output("--report", a.report).output("--csv", a.csv).output("--plot", a.plot).check();
  namespace est = analysis::memory_estimate;
  est::require_for_input("validate", est::kMeasuredTrace, est::expanded_bytes(a.measured));
  if (!(a.max_median_err > 0) || !std::isfinite(a.max_median_err)) {
    throw InputError("--max-median-err must be a finite number > 0");
  }
  std::vector<analysis::MeasuredTrace> traces;
  for (const std::string& m : a.measured) traces.push_back(analysis::load_measured(m));
  analysis::ValidateOptions opt;
  opt.max_median_error = a.max_median_err;
  opt.include_rows = !a.no_rows;
  if (a.kernels != "model" && a.kernels != "measured")
    throw InputError("--kernels '" + a.kernels + "': model or measured");
  opt.measured_kernels = a.kernels == "measured";
  const models::HardwareProfile profile = models::load_profile(a.profile);
  const std::optional<analysis::CalibrationInfo> calibration = calibration_for(a);
  if (calibration) analysis::require_calibration_matches(*calibration, profile);
  if (const std::string why = analysis::device_mismatch(profile, traces); !why.empty())
    std::cerr << "warning: " << why << "\n";
  const analysis::ValidationReport report =
      analysis::validate(profile, calibration, analysis::all_sections(traces), opt);
  // The report, the CSV and the plot appear together or not at all.
  std::vector<std::pair<std::filesystem::path, std::string>> files;
  if (!a.report.empty())
    files.emplace_back(a.report, analysis::validation_markdown(report, opt, command_line(a.argv)));
  if (!a.csv.empty()) files.emplace_back(a.csv, analysis::validation_csv(report));
  analysis::write_with_plot("validate", files,
                            a.plot.empty() ? std::string() : analysis::validation_csv(report), a.plot);
  print_report(report, opt);
  if (!report.passed) {
    throw RuntimeError("median |relative error| " + pct(report.median_error) + " exceeds --max-median-err " +
                       pct(opt.max_median_error));
  }
}

}  // namespace

void add_validate_command(CLI::App& app) {
  auto args = std::make_shared<ValidateArgs>();
  CLI::App* cmd = app.add_subcommand("validate", "Re-simulate measured traces under a profile and compare");
  cmd->add_option("--measured", args->measured, "Measured (or simulated) .pb traces")
      ->required()
      ->expected(1, -1);
  cmd->add_option("--profile", args->profile, "Profile: a built-in name or a JSON file")
      ->capture_default_str();
  cmd->add_option(
      "--calibration", args->calibration,
      "Calibration sidecar for prediction intervals (default: <profile>.calibration.json when present)");
  cmd->add_option("--report", args->report, "Markdown report to write");
  cmd->add_option("--csv", args->csv, "CSV with one line per compared figure");
  cmd->add_option("--plot", args->plot,
                  "Predicted vs measured plot (PNG) with the tolerance band (needs matplotlib)");
  cmd->add_option("--max-median-err", args->max_median_err,
                  "Exit 1 when the median |relative error| exceeds this (default 0.05)")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--no-rows", args->no_rows, "Compare phases and the step only, not per-row ready times");
  cmd->add_option(
      "--kernels", args->kernels,
      "model (default): price every kernel with the profile; measured: price each kernel phase the "
      "trace measured (attention, correction, A2A pack and combine) from its own median and validate "
      "only communication, launches, signals, the step and rows");
  cmd->callback([args, cmd] {
    args->argv.clear();
    for (const std::string& m : args->measured) args->argv.push_back("--measured " + m);
    args->argv.push_back("--profile " + args->profile);
    if (!args->calibration.empty()) args->argv.push_back("--calibration " + args->calibration);
    if (cmd->count("--max-median-err") > 0) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%g", args->max_median_err);
      args->argv.push_back(std::string("--max-median-err ") + buf);
    }
    run(*args);
  });
}

}  // namespace dcpsim::cli
