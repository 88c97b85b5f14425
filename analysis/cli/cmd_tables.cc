// dcpsim tables: build a kernel table file from measured traces (analysis/table_builder.h), check and print
// one (--show), or record the interpolation method of its attention and merge-kernel tables
// (--choose-interpolation).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "dcpsim/analysis/io_inputs.h"
#include "dcpsim/analysis/memory_estimate.h"
#include "dcpsim/analysis/table_builder.h"
#include "dcpsim/error.h"
#include "dcpsim/models/profile.h"
#include "dcpsim/models/table_loo.h"
#include "dcpsim/text_file.h"
#include "dcpsim/traces/output_file.h"
#include "dcpsim/traces/trace_reader.h"

namespace dcpsim::cli {
namespace {

struct TablesArgs {
  std::vector<std::string> measured;
  std::string out;
  std::string show;
  std::string date;
  std::string clocks;
  std::string choose;   // --choose-interpolation: a table file whose tables get their method
  std::string profile;  // the profile that reads them (the GPU that measured them)
  std::vector<std::string> argv;
};

// --choose-interpolation IN --profile P --out OUT: every attention table of IN whose kernel has a schedule
// model, and every merge kernel's table, records the interpolation method its own leave-one-out reads best
// (models/table_loo.h).
void choose(const TablesArgs& a) {
  if (!a.measured.empty() || !a.date.empty() || !a.clocks.empty())
    throw InputError("--choose-interpolation reads a table file; it takes no --measured, --date or --clocks");
  if (a.out.empty() || a.profile.empty())
    throw InputError("--choose-interpolation FILE needs --profile (the GPU's profile) and --out FILE");
  IoGuard io;
  io.input("--choose-interpolation", existing_or_gz(a.choose).string());  // X.json may be stored as X.json.gz
  analysis::guard_profile(io, "--profile", a.profile);
  io.output("--out", a.out).check();
  models::KernelTables tables = models::load_kernel_tables(a.choose);
  const models::HardwareProfile profile = models::load_profile(a.profile);
  if (!models::profile_describes_device(profile, tables.provenance.device))
    throw InputError(a.choose + ": measured on \"" + tables.provenance.device + "\", which --profile " +
                     a.profile +
                     " does not describe (its gpu.devices): give the profile of the GPU that measured it");
  const std::vector<std::string> lines = models::choose_interpolations(profile, tables);
  if (lines.empty())
    throw InputError(a.choose +
                     ": no merge-kernel table and no attention table of a kernel with a schedule model "
                     "(FlashInfer's MLA kernel, dcpsim's kernels), or none with three values on an axis to "
                     "leave one out: no interpolation to choose");
  traces::write_file_atomically(a.out, models::kernel_tables_json(tables));
  for (const std::string& line : lines) std::cout << line << "\n";
  std::cout << "wrote " << a.out << "\n";
}

// Files as given; a directory stands for every .pb (or .pb.gz) under it, sorted.
std::vector<std::filesystem::path> expand(const std::vector<std::string>& inputs) {
  std::vector<std::filesystem::path> out;
  for (const std::string& in : inputs) {
    std::error_code ec;
    if (!std::filesystem::is_directory(in, ec)) {
      out.emplace_back(in);
      continue;
    }
    std::vector<std::filesystem::path> found;
    for (const auto& e : std::filesystem::recursive_directory_iterator(in)) {
      if (e.is_regular_file() && traces::is_trace_file_name(e.path())) found.push_back(e.path());
    }
    if (found.empty()) throw InputError(in + ": directory holds no .pb trace");
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

void run(const TablesArgs& a) {
  if (!a.choose.empty()) {
    if (!a.show.empty()) throw InputError("--show and --choose-interpolation: give one");
    choose(a);
    return;
  }
  if (!a.profile.empty()) throw InputError("--profile goes with --choose-interpolation");
  if (!a.show.empty()) {
    if (!a.measured.empty() || !a.out.empty())
      throw InputError("--show prints a table file; it takes no --measured or --out");
    IoGuard().input("--show", existing_or_gz(a.show).string()).check();  // X.json may be stored as X.json.gz
    std::cout << models::describe_kernel_tables(models::load_kernel_tables(a.show));
    return;
  }
  if (a.measured.empty() || a.out.empty())
    throw InputError("tables: give --measured TRACES and --out FILE (or --show FILE)");
  IoGuard io;
  analysis::guard_measured(io, "--measured", a.measured);
  io.output("--out", a.out).check();
  namespace est = analysis::memory_estimate;
  est::require_for_input("tables", est::kMeasuredTrace, est::expanded_bytes(a.measured));
  std::vector<analysis::MeasuredTrace> traces;
  for (const auto& path : expand(a.measured)) traces.push_back(analysis::load_measured(path));
  analysis::TableBuildOptions options;
  options.date = a.date;
  options.clocks = a.clocks;
  for (const std::string& arg : a.argv) options.command += (options.command.empty() ? "" : " ") + arg;
  const analysis::TableBuildResult r = analysis::build_kernel_tables(traces, options);
  traces::write_file_atomically(a.out, models::kernel_tables_json(r.tables));
  std::size_t points = 0;
  for (const auto& t : r.tables.tables) points += t.points.size();
  std::cout << "wrote " << a.out << ": " << r.tables.tables.size() << " tables, " << points << " points from "
            << r.figures << " phase medians of " << r.sections << " sections (" << r.tables.provenance.device
            << ")\n";
  for (const auto& t : r.tables.tables) {
    if (!t.model) continue;
    std::printf(
        "model of %s [%s]: %.3f us + bytes / %.3f TB/s (fitted on %d points, largest residual %.1f%%)\n",
        std::string(models::to_string(t.kernel)).c_str(), t.key.c_str(), t.model->floor_ns / 1e3,
        t.model->bandwidth / 1e12, t.model->points, 100 * t.model->max_relative_residual);
  }
  for (const std::string& n : r.notes)
    std::cout << (n.rfind("no model", 0) == 0 ? "note: " : "note: left out ") << n << "\n";
}

}  // namespace

void add_tables_command(CLI::App& app, int argc, char** argv) {
  auto args = std::make_shared<TablesArgs>();
  args->argv.assign(argv, argv + argc);
  if (!args->argv.empty()) args->argv[0] = "dcpsim";
  CLI::App* cmd = app.add_subcommand("tables",
                                     "Build a kernel table file from measured traces, print one, or choose "
                                     "how its attention tables are read between measured shapes");
  cmd->add_option("--measured", args->measured, "Measured .pb traces (a directory: every .pb under it)")
      ->expected(1, -1);
  cmd->add_option("--out", args->out, "Kernel table JSON to write (dcpsim-kernel-tables/1)");
  cmd->add_option("--show", args->show, "Check a table file and print its provenance, tables and points");
  cmd->add_option("--date", args->date, "Date recorded in the provenance (default: today, UTC)");
  cmd->add_option("--clocks", args->clocks,
                  "Clock policy of the measurement, when the traces do not record it");
  cmd->add_option(
      "--choose-interpolation", args->choose,
      "A table file whose attention tables (FlashInfer's MLA kernel, dcpsim's kernels: schedule, power-law, "
      "mean or fitted-schedule) and merge-kernel tables (power-law or linear) record the interpolation "
      "between measured "
      "shapes that leave-one-out on their own points reads best; with --profile and --out");
  cmd->add_option("--profile", args->profile,
                  "With --choose-interpolation: the profile of the GPU that measured the tables (a built-in "
                  "name or a file)");
  cmd->callback([args] { run(*args); });
}

}  // namespace dcpsim::cli
