// dcpsim calibrate: fit a hardware profile to measured traces (analysis/calibrate.h).
#include <cstdio>
#include <iostream>
#include <memory>

#include "commands.h"
#include "dcpsim/analysis/calibrate.h"
#include "dcpsim/analysis/calibrate_comm.h"
#include "dcpsim/analysis/collectives.h"
#include "dcpsim/analysis/consistency.h"
#include "dcpsim/analysis/io_inputs.h"
#include "dcpsim/analysis/memory_estimate.h"
#include "dcpsim/analysis/scenario_flags.h"
#include "dcpsim/analysis/stale_calibration.h"
#include "dcpsim/dates.h"
#include "dcpsim/error.h"
#include "dcpsim/text_file.h"
#include "dcpsim/traces/output_file.h"

namespace dcpsim::cli {
namespace {

struct CalibrateArgs {
  std::vector<std::string> measured;
  std::string profile = "h200-sxm";  // the default profile of every command
  std::string out;
  std::string name;
  int hold_out = 0;
  std::vector<std::string> hold_out_files;
  std::string fix;
  std::string date;
  int max_iterations = 20;
  double max_std_error = 0.5;
  bool verbose = false;
  bool plain = false;
  bool no_tables = false;
  std::vector<std::string> comm_tables;    // --comm-tables: fit NCCL's numbers to measured collectives
  std::vector<std::string> hold_out_comm;  // --hold-out-comm-tables
  std::string kernels = "model";
  std::string only;
};

std::string pct(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f%%", 100.0 * x);
  return buf;
}

std::string quantity(const models::Quantity& q) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g %s", q.value, std::string(models::to_string(q.unit)).c_str());
  return buf;
}

void print_stats(const char* title, const std::vector<analysis::ResidualStats>& stats) {
  std::cout << title << "\n";
  for (const analysis::ResidualStats& s : stats) {
    std::printf("  %-12s n=%-5d |rel err| p50 %-8s p90 %-8s max %-8s bias %s\n", s.figure.c_str(), s.count,
                pct(s.p50).c_str(), pct(s.p90).c_str(), pct(s.max).c_str(), pct(s.mean).c_str());
  }
}

void print_result(const analysis::CalibrationResult& r, const std::string& out) {
  std::cout << "calibrated " << r.profile.name << " from " << r.base.name << ": " << r.observations
            << " figures, " << r.fit_sections << " scenarios, " << r.iterations
            << " Gauss-Newton iterations\n";
  for (const analysis::ParameterResult& p : r.parameters) {
    if (!p.fitted) continue;
    std::printf("  %-36s %14s -> %-14s (rel. std. error %s)%s\n", p.name.c_str(), quantity(p.base).c_str(),
                quantity(p.result).c_str(), pct(p.relative_std_error).c_str(), p.at_bound ? " at bound" : "");
  }
  print_stats("fit residuals:", r.residuals);
  if (!r.per_kernel_type.empty()) {
    std::cout << "each kernel phase fitted alone (in the sidecar):\n";
    for (const analysis::KernelTypeFit& f : r.per_kernel_type) {
      std::printf("  %-12s n=%-5d |rel err| p50 %-8s p90 %-8s", f.figure.c_str(), f.figures,
                  pct(f.residuals.p50).c_str(), pct(f.residuals.p90).c_str());
      for (const analysis::ParameterResult& p : f.parameters)
        std::printf(" %s=%s", p.name.c_str(), quantity(p.result).c_str());
      std::printf("\n");
    }
  }
  if (!r.holdout_residuals.empty()) print_stats("held-out residuals:", r.holdout_residuals);
  if (r.downweighted > 0) {
    std::cout << r.downweighted << " figures down-weighted as outliers (Huber's loss); the largest:\n";
    for (std::size_t i = 0; i < std::min<std::size_t>(r.outliers.size(), 5); ++i)
      std::cout << "  " << r.outliers[i] << "\n";
  }
  for (const std::string& e : r.excluded) std::cout << "note: left out " << e << "\n";
  for (const std::string& w : r.warnings) std::cerr << "warning: " << w << "\n";
  std::cout << "wrote " << out << " and " << analysis::calibration_sidecar(out).string() << "\n";
}

// The table files a fit priced from (the base profile's kernel and communication tables, found next to a
// profile file; a built-in's are compiled in and not listed), hashed into the sidecar so that a later change
// to one marks the calibration stale (stale_calibration.h).
nlohmann::json fitted_on(const std::string& profile, const models::HardwareProfile& base) {
  std::error_code ec;
  const std::filesystem::path file(profile);
  std::vector<std::filesystem::path> files;
  auto add = [&](const std::string& origin) {
    const std::filesystem::path p = file.parent_path() / origin;
    if (!origin.empty() && std::filesystem::is_regular_file(p, ec)) files.push_back(p);
  };
  if (std::filesystem::is_regular_file(file, ec)) {
    for (const models::KernelTables& t : base.tables) add(t.origin);
    for (const models::CommTables& t : base.comm_tables) add(t.origin);
  }
  return analysis::fitted_on_json(files);
}

// What both fits write: the provenance's common fields, the profile with its base's tables inline (it is
// written elsewhere than its base, so it must not depend on relative paths), the sidecar, and the summary.
void write_result(const CalibrateArgs& a, const models::HardwareProfile& base,
                  analysis::CalibrationResult& result, analysis::CalibrationProvenance& prov) {
  prov.date = a.date;
  prov.name = a.name;
  prov.extra["fitted_on"] = fitted_on(a.profile, base);
  analysis::stamp_sources(result, prov);
  for (models::KernelTables& t : result.profile.tables) t.origin.clear();
  for (models::CommTables& t : result.profile.comm_tables) t.origin.clear();
  analysis::write_calibration(result, prov, a.out);
  print_result(result, a.out);
}

// --comm-tables: the collective numbers fitted to measured nccl-tests tables (analysis/calibrate_comm.h).
void run_comm(const CalibrateArgs& a) {
  if (!a.measured.empty()) {
    throw InputError(
        "--comm-tables and --measured fit different figures: run calibrate --comm-tables first, "
        "then --measured with --profile set to its output");
  }
  // The trace fit's flags mean nothing to the collective fit: refused rather than silently ignored.
  for (const auto& [given, flag] :
       {std::pair{!a.only.empty(), "--only"}, std::pair{a.kernels != "model", "--kernels"},
        std::pair{a.no_tables, "--no-tables"}, std::pair{a.hold_out > 0, "--hold-out"},
        std::pair{!a.hold_out_files.empty(), "--hold-out-file"}}) {
    if (given)
      throw InputError(std::string(flag) + " applies to --measured fits; --comm-tables takes --fix and " +
                       "--hold-out-comm-tables");
  }
  IoGuard io;
  analysis::guard_profile(io, "--profile", a.profile);
  for (const std::string& m : a.comm_tables) io.input("--comm-tables", existing_or_gz(m).string());
  for (const std::string& m : a.hold_out_comm) io.input("--hold-out-comm-tables", existing_or_gz(m).string());
  io.output("--out", a.out).output("the sidecar of --out", analysis::calibration_sidecar(a.out)).check();
  std::vector<models::CommTables> fit, held;
  for (const std::string& f : a.comm_tables) fit.push_back(analysis::load_measured_comm({f}));
  for (const std::string& f : a.hold_out_comm) held.push_back(analysis::load_measured_comm({f}));
  analysis::CalibrateOptions options;
  options.max_iterations = a.max_iterations;
  options.max_relative_std_error = a.max_std_error;
  options.robust = !a.plain;
  if (!a.fix.empty()) options.fixed = analysis::split_list(a.fix, "--fix");
  if (a.verbose) options.progress = [](const std::string& line) { std::cerr << line << "\n"; };
  const models::HardwareProfile base = models::load_profile(a.profile);
  analysis::CalibrationResult result = analysis::calibrate_comm(base, fit, held, options);
  analysis::CalibrationProvenance prov;
  for (const std::string& m : a.comm_tables) prov.traces.emplace_back(m);
  for (const std::string& m : a.hold_out_comm) prov.holdout_traces.emplace_back(m);
  write_result(a, base, result, prov);
}

void run(const CalibrateArgs& a) {
  if (!a.date.empty() && !is_calendar_date(a.date))
    throw InputError("--date '" + a.date + "': expected a date YYYY-MM-DD");
  if (!a.comm_tables.empty()) {
    run_comm(a);
    return;
  }
  if (a.measured.empty()) throw InputError("calibrate needs --measured TRACES (or --comm-tables TABLES)");
  if (!a.hold_out_comm.empty())
    throw InputError(
        "--hold-out-comm-tables checks a --comm-tables fit; a --measured fit takes --hold-out-file");
  if (a.hold_out == 1) throw InputError("--hold-out 1 would hold out every scenario; use K >= 2");
  IoGuard io;
  analysis::guard_profile(io, "--profile", a.profile);
  analysis::guard_measured(io, "--measured", a.measured);
  analysis::guard_measured(io, "--hold-out-file", a.hold_out_files);
  io.output("--out", a.out).output("the sidecar of --out", analysis::calibration_sidecar(a.out)).check();
  namespace est = analysis::memory_estimate;
  est::require_for_input("calibrate", est::kMeasuredTrace,
                         est::expanded_bytes(a.measured) + est::expanded_bytes(a.hold_out_files));
  std::vector<analysis::MeasuredTrace> traces, held_traces;
  for (const std::string& m : a.measured) traces.push_back(analysis::load_measured(m));
  for (const std::string& m : a.hold_out_files) held_traces.push_back(analysis::load_measured(m));
  std::vector<analysis::MeasuredSection> fit, holdout = analysis::all_sections(held_traces);
  const std::vector<analysis::MeasuredSection> sections = analysis::all_sections(traces);
  for (std::size_t i = 0; i < sections.size(); ++i) {
    const bool held = a.hold_out >= 2 && (i + 1) % static_cast<std::size_t>(a.hold_out) == 0;
    (held ? holdout : fit).push_back(sections[i]);
  }
  if (fit.empty())
    throw InputError("--hold-out " + std::to_string(a.hold_out) + " leaves no scenario to fit");

  analysis::CalibrateOptions options;
  options.max_iterations = a.max_iterations;
  options.max_relative_std_error = a.max_std_error;
  options.robust = !a.plain;
  if (!a.fix.empty()) options.fixed = analysis::split_list(a.fix, "--fix");
  if (a.verbose) options.progress = [](const std::string& line) { std::cerr << line << "\n"; };
  if (a.kernels != "model" && a.kernels != "measured")
    throw InputError("--kernels '" + a.kernels + "': model or measured");
  options.measured_kernels = a.kernels == "measured";
  if (!a.only.empty()) options.only = analysis::split_list(a.only, "--only");
  models::HardwareProfile base = models::load_profile(a.profile);
  if (const std::string why = analysis::device_mismatch(base, traces); !why.empty())
    std::cerr << "warning: " << why << " (a starting point for a new GPU; name the result with --name)\n";
  if (a.no_tables) base.tables.clear();
  analysis::CalibrationResult result = analysis::calibrate(base, fit, holdout, options);

  analysis::CalibrationProvenance prov;
  for (const std::string& m : a.measured) prov.traces.emplace_back(m);
  for (const std::string& m : a.hold_out_files) prov.holdout_traces.emplace_back(m);
  for (const auto& t : traces) prov.headers.push_back(t.header);
  for (const auto& t : held_traces) prov.headers.push_back(t.header);
  write_result(a, base, result, prov);
}

}  // namespace

void add_calibrate_command(CLI::App& app) {
  auto args = std::make_shared<CalibrateArgs>();
  CLI::App* cmd = app.add_subcommand("calibrate", "Fit a hardware profile to measured traces");
  cmd->add_option("--measured", args->measured, "Measured (or simulated) .pb traces to fit")->expected(1, -1);
  cmd->add_option("--comm-tables", args->comm_tables,
                  "Fit NCCL's numbers (latencies, bandwidths, protocol efficiencies) to measured collectives "
                  "instead: communication tables (dcpsim import --nccl-tests) or nccl-tests output, one "
                  "measurement per file")
      ->expected(1, -1);
  cmd->add_option("--hold-out-comm-tables", args->hold_out_comm,
                  "With --comm-tables: tables used only to check the fit, never to fit it")
      ->expected(1, -1);
  cmd->add_option("--profile", args->profile, "Base profile: a built-in name or a JSON file")
      ->capture_default_str();
  cmd->add_option("--out", args->out,
                  "Calibrated profile JSON to write (a .calibration.json sidecar goes next to it)")
      ->required();
  cmd->add_option("--name", args->name,
                  "Name of the calibrated profile (default: base name + \"-calibrated\")");
  auto* k =
      cmd->add_option("--hold-out", args->hold_out,
                      "Hold out every K-th scenario of --measured (in file order) and report its residuals")
          ->check(CLI::NonNegativeNumber);
  cmd->add_option("--hold-out-file", args->hold_out_files,
                  "Traces used only to check the fit, never to fit it")
      ->expected(1, -1)
      ->excludes(k);
  cmd->add_option("--fix", args->fix, "Comma list of profile parameters to keep from the base profile");
  cmd->add_option(
      "--only", args->only,
      "Comma list of the only profile parameters to fit (every other is kept from the base profile)");
  cmd->add_option("--date", args->date, "Date recorded in the sources (default: today, UTC)");
  cmd->add_option("--max-iterations", args->max_iterations, "Gauss-Newton iterations at most")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--max-std-error", args->max_std_error,
                  "Revert parameters whose relative standard error exceeds this (default 0.5)")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--no-tables", args->no_tables,
                "Fit the analytic models alone: leave out the base profile's measured kernel tables (the "
                "calibrated profile then prices every kernel analytically)");
  cmd->add_option(
      "--kernels", args->kernels,
      "model (default) or measured: price each measured kernel phase from its own median and fit "
      "only communication, launch and signal numbers (the kernels' own numbers are then not fitted)");
  cmd->add_flag("--verbose", args->verbose, "Print each Gauss-Newton iteration on stderr");
  cmd->add_flag("--least-squares", args->plain,
                "Plain least squares instead of Huber's loss (every figure weighs the same, outliers too)");
  cmd->callback([args] { run(*args); });
}

}  // namespace dcpsim::cli
