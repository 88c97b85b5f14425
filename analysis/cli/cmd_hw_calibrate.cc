// dcpsim hw calibrate: one command from a bare GPU machine to a validated profile of that GPU
// (analysis/calibration_run.h): every kernel-table family the simulator reads, the fit, PDL and held-out
// steps, the fit, and the held-out validation, each stage kept in named files so that a run cut short
// resumes.
#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>

#include "commands.h"
#include "dcpsim/analysis/calibration_run.h"
#include "dcpsim/analysis/calibration_steps.h"
#include "dcpsim/analysis/io_inputs.h"
#include "dcpsim/dates.h"
#include "dcpsim/error.h"
#include "dcpsim/interrupt.h"
#include "dcpsim/io_guard.h"

namespace dcpsim::cli {
namespace {

struct CalibrateFlags {
  std::string out, base, name, budget = "10m", date;
  int device = 0;
  std::string holdout_seed = std::to_string(analysis::kHoldoutSeed);
  bool dry_run = false;
  bool name_given = false;
};

// "10m", "600", "600s", "9m30s", "1h" -> seconds; InputError otherwise.
double parse_budget(const std::string& text) {
  const std::string error = "--budget '" + text + "': expected a duration such as 10m, 600s, 9m30s or 1h";
  double total = 0;
  std::size_t i = 0;
  bool any = false;
  while (i < text.size()) {
    std::size_t used = 0;
    double v = 0;
    try {
      v = std::stod(text.substr(i), &used);
    } catch (const std::exception&) {
      throw InputError(error);
    }
    if (used == 0 || !(v >= 0)) throw InputError(error);
    i += used;
    double unit = 1;
    if (i < text.size()) {
      const char c = text[i++];
      unit = c == 'h' ? 3600 : c == 'm' ? 60 : c == 's' ? 1 : -1;
      if (unit < 0) throw InputError(error);
    }
    total += v * unit;
    any = true;
  }
  if (!any || !(total > 0) || total > 7 * 86400) throw InputError(error);
  return total;
}

// A seed: digits only, within 64 bits (no sign, no exponent: a negative one would wrap around).
std::uint64_t parse_seed(const std::string& text) {
  std::uint64_t v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0])) || ec != std::errc() || ptr != end)
    throw InputError("--holdout-seed '" + text + "': expected a whole number from 0 to 18446744073709551615");
  return v;
}

void run(const CalibrateFlags& f, const std::string& command) {
  if (f.out.empty()) throw InputError("--out is required (the profile to write, e.g. my-gpu.json)");
  if (!f.date.empty() && !is_calendar_date(f.date))
    throw InputError("--date '" + f.date + "': expected a date YYYY-MM-DD");
  if (f.name_given && f.name.empty()) throw InputError("--name: an empty name");
  if (f.device < 0) throw InputError("--device must be >= 0");
  analysis::CalibrateRunOptions o;
  o.out = f.out;
  o.base = f.base;
  o.name = f.name;
  o.budget_s = parse_budget(f.budget);
  o.device = f.device;
  o.date = f.date;
  o.command = command;
  o.holdout_seed = parse_seed(f.holdout_seed);
  if (f.dry_run) {
    std::cout << analysis::describe_calibration(o);
    return;
  }
  const analysis::CalibrationPaths paths = analysis::calibration_paths(f.out);
  IoGuard io;
  if (!f.base.empty()) analysis::guard_profile(io, "--base", f.base);
  io.output("--out", paths.profile()).output("the sidecar of --out", paths.sidecar());
  for (const analysis::TableFamily& family : analysis::table_families())
    if (family.listed) io.output("--out's " + family.name + " table", paths.table(family.name));
  io.check();
  o.progress = [](const std::string& line) { std::cerr << line << std::endl; };
  // An interruption (dcpsim/interrupt.h) ends the command at once, removing what was half written and naming
  // the checkpoints kept: every finished table and step file, resumed by the same command.
  o.interrupted = [] { return interrupt::requested(); };
  const analysis::CalibrateRunResult r = analysis::run_calibration(o);
  for (const std::string& line : r.lines) std::cout << line << "\n";
  std::cout << std::flush;
  switch (r.outcome) {
    case analysis::RunOutcome::kComplete:
      std::cout << r.message << "\n";
      return;
    case analysis::RunOutcome::kNeedsGpu:
      throw RuntimeError(r.message);
    case analysis::RunOutcome::kBudget:
    case analysis::RunOutcome::kNeedsSimulator:
    case analysis::RunOutcome::kInterrupted:
      // Not a failure: the run stopped where it was told to, with everything so far kept. Exit 3 tells a
      // script to run the same command again (130 after a signal that a loop saw first).
      std::cerr << r.message << std::endl;
      std::fflush(nullptr);
      std::_Exit(r.outcome == analysis::RunOutcome::kInterrupted ? 130 : 3);
  }
}

}  // namespace

void add_hw_calibrate_command(CLI::App& hw_cmd, int argc, char** argv) {
  auto f = std::make_shared<CalibrateFlags>();
  auto command = std::make_shared<std::string>();
  for (int i = 0; i < argc; ++i) *command += (i ? " " : "") + std::string(i == 0 ? "dcpsim" : argv[i]);
  CLI::App* c = hw_cmd.add_subcommand(
      "calibrate",
      "Measure this GPU's kernels and steps, fit a profile and validate it on held-out steps (resumable)");
  c->add_option("--out", f->out,
                "profile to write (my-gpu.json; its tables my-gpu-<family>.json beside it, the sidecar "
                "my-gpu.calibration.json, checkpoints in my-gpu.calibrate/)");
  c->add_option(
      "--base", f->base,
      "profile whose non-measured numbers (NVLink, NCCL, signals) are kept: a built-in name or a file "
      "(default: the built-in whose gpu.devices names this GPU)");
  c->add_option("--budget", f->budget,
                "time for this run (10m, 600s, 1h); it stops before a stage that would not fit and the same "
                "command resumes")
      ->capture_default_str();
  c->add_option("--name", f->name, "the profile's name (default: the file's stem)");
  c->add_option("--device", f->device, "device ordinal")->capture_default_str();
  c->add_option("--date", f->date, "date for the provenance, YYYY-MM-DD (default: today, UTC)");
  c->add_option(
       "--holdout-seed", f->holdout_seed,
       "seed of the held-out steps (drawn before any fit, off every table grid); another seed draws a "
       "fresh set, to re-validate a profile on steps it has never seen")
      ->capture_default_str();
  c->add_flag("--dry-run", f->dry_run,
              "print the plan (stages, points, held-out steps, estimated GPU time, what is done) and measure "
              "nothing");
  c->footer(
      "Exit status: 0 profile written and validated; 3 stopped by --budget or waiting for a build with the "
      "simulator (run the same command again); 130 interrupted (the same command resumes); 2 bad input; 1 "
      "runtime failure.");
  CLI::Option* name = c->get_option("--name");
  c->callback([f, command, name] {
    f->name_given = name->count() > 0;
    run(*f, *command);
  });
}

}  // namespace dcpsim::cli
