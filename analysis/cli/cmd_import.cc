// dcpsim import: a profiler timeline (Kineto/Chrome JSON or an Nsight Systems SQLite export) into a measured
// trace (.pb) of the dcpsim.trace.v1 schema (traces/import_kineto.h, traces/import_nsys.h). A profiler does
// not know which DCP scenario it watched, so the scenario flags state it (they default as for `dcpsim
// simulate`).
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "commands.h"
#include "dcpsim/analysis/scenario_flags.h"
#include "dcpsim/error.h"
#include "dcpsim/models/scenario_proto.h"
#include "dcpsim/traces/import_kineto.h"
#include "dcpsim/traces/import_nsys.h"
#include "dcpsim/traces/output_file.h"
#include "dcpsim/traces/protobuf_writer.h"

namespace dcpsim::cli {
namespace {

struct ImportArgs {
  std::string kineto;
  std::string nsys;
  std::string out;
  analysis::ScenarioFlags scenario;
  int rank = -1;
  bool cpu_ops = false;
  bool no_flows = false;
  bool no_nvtx = false;
  std::string name;
};

void run_import(const ImportArgs& a) {
  if (a.kineto.empty() == a.nsys.empty()) {
    throw InputError("dcpsim import needs exactly one of --kineto FILE or --nsys FILE");
  }
  traces::check_output_paths({{"--kineto", a.kineto}, {"--nsys", a.nsys}}, {{"--out", a.out}});
  traces::ImportOptions options;
  options.scenario = models::to_proto(analysis::to_scenario(a.scenario));
  options.scenario.set_name(a.name.empty() ? "imported " + (a.kineto.empty() ? a.nsys : a.kineto) : a.name);
  if (a.rank >= 0) options.rank = a.rank;
  options.cpu_ops = a.cpu_ops;
  options.flows = !a.no_flows;
  options.nvtx = !a.no_nvtx;
  traces::ProtobufTraceWriter writer(a.out);
  const traces::ImportStats stats = a.kineto.empty() ? traces::import_nsys(a.nsys, writer, options)
                                                     : traces::import_kineto(a.kineto, writer, options);
  std::cout << "imported " << (a.kineto.empty() ? a.nsys : a.kineto) << ": " << traces::describe(stats)
            << "\n"
            << "time 0 = " << stats.time_origin_ns << " ns on the profiler's clock; wrote " << a.out << " ("
            << writer.records_written() << " records)\n";
}

}  // namespace

void add_import_command(CLI::App& app) {
  auto args = std::make_shared<ImportArgs>();
  CLI::App* cmd = app.add_subcommand(
      "import", "Import a Kineto (PyTorch profiler) or Nsight Systems timeline as a trace (.pb)");
  cmd->add_option("--kineto", args->kineto, "Kineto / Chrome trace JSON (plain or .gz)");
  cmd->add_option("--nsys", args->nsys,
                  "Nsight Systems SQLite export (nsys export --type sqlite; plain or .gz)");
  cmd->add_option("--out", args->out, "trace to write (.pb)")->required();
  cmd->add_option("--rank", args->rank, "DCP rank of the profiled process (default: the trace's own, else 0)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--cpu-ops", args->cpu_ops, "also import CPU ops, runtime calls and annotations");
  cmd->add_flag("--no-flows", args->no_flows, "leave out Kineto's launch -> kernel flow arrows");
  cmd->add_flag("--no-nvtx", args->no_nvtx, "leave out NVTX ranges (Nsight)");
  cmd->add_option("--name", args->name, "section name recorded with the scenario");
  analysis::add_scenario_flags(*cmd, args->scenario, false);
  cmd->callback([args] { run_import(*args); });
}

}  // namespace dcpsim::cli
