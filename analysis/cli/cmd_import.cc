// dcpsim import: a profiler timeline (Kineto/Chrome JSON or an Nsight Systems SQLite export) into a measured
// trace (.pb) of the dcpsim.trace.v1 schema (traces/import_kineto.h, traces/import_nsys.h), with a phase
// summary per DCP step phase its kernels belong to (traces/import_phases.h). A profiler does not know which
// DCP scenario it watched, so the user states it — the scenario flags or a --scenario JSON file — and nothing
// is assumed: without them import says in one line what is missing.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "cmd_import_nccl.h"
#include "commands.h"
#include "dcpsim/analysis/io_inputs.h"
#include "dcpsim/analysis/memory_estimate.h"
#include "dcpsim/analysis/scenario_flags.h"
#include "dcpsim/error.h"
#include "dcpsim/json_limits.h"
#include "dcpsim/models/scenario_proto.h"
#include "dcpsim/traces/import_kineto.h"
#include "dcpsim/traces/import_nsys.h"
#include "dcpsim/traces/import_phases.h"
#include "dcpsim/traces/output_file.h"
#include "dcpsim/traces/protobuf_writer.h"

namespace dcpsim::cli {
namespace {

struct ImportArgs {
  std::string kineto;
  std::string nsys;
  std::string out;
  analysis::ScenarioFlags scenario;
  std::string scenario_file;
  std::string phase_map;
  std::vector<std::string> given;  // scenario flags given on the command line
  int rank = -1;
  bool cpu_ops = false;
  bool no_flows = false;
  bool no_nvtx = false;
  std::string name;
  NcclImportArgs nccl;  // --nccl-tests: a communication table instead of a trace
};

// The scenario flags a profile cannot be read without: the group, the geometry and the load, and the
// strategy whose phases it ran.
const std::vector<std::pair<std::string, std::string>>& required_flags() {
  static const std::vector<std::pair<std::string, std::string>> flags = {
      {"--dcp", "dcp"},     {"--heads", "heads"},     {"--head-dim", "head_dim"}, {"--kv-heads", "kv_heads"},
      {"--batch", "batch"}, {"--context", "context"}, {"--strategy", "strategy"}};
  return flags;
}

// A --scenario file: a JSON object with the scenario flags' names as keys ("dcp", "heads", "head_dim",
// "qk_dim", "kv_heads", "batch", "context" or "contexts" [one per row], "strategy", "launch", "interleave",
// "lse_base", "kv_dtype", "out_dtype"), numbers or strings as the flags take them.
struct ScenarioFile {
  analysis::ScenarioFlags flags;
  std::vector<std::int64_t> contexts;  // "contexts": one per row (overrides batch and context)
};

ScenarioFile scenario_from_file(const std::string& path, const analysis::ScenarioFlags& defaults) {
  std::ifstream in(path);
  if (!in) throw InputError("--scenario '" + path + "' cannot be opened");
  const auto doc = parse_json_checked(in, path);
  if (!doc.is_object()) throw InputError(path + ": a scenario is a JSON object of the scenario flags");
  ScenarioFile out{defaults, {}};
  analysis::ScenarioFlags& f = out.flags;
  f.contexts_file.clear();
  std::map<std::string, std::string*> fields = {{"dcp", &f.dcp},
                                                {"heads", &f.heads},
                                                {"head_dim", &f.head_dim},
                                                {"qk_dim", &f.qk_dim},
                                                {"kv_heads", &f.kv_heads},
                                                {"batch", &f.batch},
                                                {"context", &f.context},
                                                {"strategy", &f.strategy},
                                                {"launch", &f.launch},
                                                {"interleave", &f.interleave},
                                                {"lse_base", &f.lse_base},
                                                {"kv_dtype", &f.kv_dtype},
                                                {"out_dtype", &f.out_dtype}};
  for (const auto& [key, value] : doc.items()) {
    if (key == "contexts") {
      if (!value.is_array() || value.empty())
        throw InputError(path + ": contexts: expected a list of lengths");
      for (std::size_t i = 0; i < value.size(); ++i) {
        if (!value[i].is_number_integer() || value[i].get<std::int64_t>() < 0) {
          throw InputError(path + ": contexts[" + std::to_string(i) + "]: expected a context length");
        }
        out.contexts.push_back(value[i].get<std::int64_t>());
      }
      continue;
    }
    const auto it = fields.find(key);
    if (it == fields.end()) {
      std::string known = "contexts";
      for (const auto& [name, field] : fields) known += ", " + name;
      throw InputError(path + ": " + key + ": not a scenario field (one of " + known + ")");
    }
    if (value.is_string()) {
      *it->second = value.get<std::string>();
    } else if (value.is_number_integer()) {
      *it->second = std::to_string(value.get<std::int64_t>());
    } else {
      throw InputError(path + ": " + key + ": expected a number or a string, got " +
                       std::string(value.type_name()));
    }
  }
  std::string missing;
  for (const auto& [flag, key] : required_flags()) {
    const bool rows = key == "batch" || key == "context";
    if (!doc.contains(key) && !(rows && !out.contexts.empty()))
      missing += (missing.empty() ? "" : ", ") + key;
  }
  if (!missing.empty()) throw InputError(path + ": the scenario does not say " + missing);
  if (!out.contexts.empty()) {
    f.batch = std::to_string(out.contexts.size());
    f.context = std::to_string(out.contexts.front());
  }
  return out;
}

void run_import(const ImportArgs& a) {
  if (!a.nccl.files.empty()) {
    if (!a.kineto.empty() || !a.nsys.empty())
      throw InputError("--nccl-tests makes a communication table; it takes no --kineto or --nsys");
    if (!a.given.empty() || !a.scenario_file.empty())
      throw InputError("--nccl-tests logs need no scenario; drop " +
                       (a.given.empty() ? "--scenario" : a.given.front()));
    NcclImportArgs n = a.nccl;
    n.out = a.out;
    run_nccl_tests_import(n);
    return;
  }
  if (a.kineto.empty() == a.nsys.empty()) {
    throw InputError("dcpsim import needs exactly one of --kineto FILE, --nsys FILE or --nccl-tests LOG...");
  }
  analysis::ScenarioFlags flags = a.scenario;
  if (!a.scenario_file.empty()) {
    if (!a.given.empty()) {
      throw InputError("--scenario " + a.scenario_file + " states the scenario; drop " + a.given.front());
    }
  } else {
    std::string missing;
    for (const auto& [flag, key] : required_flags()) {
      const bool rows = flag == "--batch" || flag == "--context";
      const bool given = std::find(a.given.begin(), a.given.end(), flag) != a.given.end() ||
                         (rows && !a.scenario.contexts_file.empty());
      if (!given) missing += (missing.empty() ? "" : " ") + flag;
    }
    if (!missing.empty()) {
      throw InputError("dcpsim import needs the scenario the profile ran; missing " + missing +
                       " (or give them all in --scenario FILE)");
    }
  }
  IoGuard io;
  io.input("--kineto", a.kineto).input("--nsys", a.nsys).input("--scenario", a.scenario_file);
  io.input("--phase-map", a.phase_map);
  analysis::guard_scenario_flags(io, a.scenario);
  io.output("--out", a.out).check();
  namespace est = analysis::memory_estimate;
  if (!a.kineto.empty()) est::require_for_kineto(a.kineto);
  if (!a.nsys.empty()) {
    const double bytes = est::expanded_bytes(a.nsys);
    const bool gz = bytes > static_cast<double>(std::filesystem::file_size(a.nsys));
    est::require_for_input("import", gz ? est::kNsysGzip : est::kNsysPlain, bytes);
  }
  traces::ImportOptions options;
  if (!a.phase_map.empty()) options.phase_rules = traces::read_phase_rules(a.phase_map);
  if (!a.scenario_file.empty()) {
    const ScenarioFile file = scenario_from_file(a.scenario_file, a.scenario);
    try {
      models::Scenario sc = analysis::to_scenario(file.flags);
      if (!file.contexts.empty()) {
        sc.contexts = file.contexts;
        sc.validate();
      }
      options.scenario = models::to_proto(sc);
    } catch (const InputError& e) {
      throw InputError(a.scenario_file + ": " + e.what());
    }
  } else {
    options.scenario = models::to_proto(analysis::to_scenario(flags));
  }
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
            << traces::describe_phases(stats) << "\n"
            << "time 0 = " << stats.time_origin_ns << " ns on the profiler's clock; wrote " << a.out << " ("
            << writer.records_written() << " records)\n";
}

}  // namespace

void add_import_command(CLI::App& app) {
  auto args = std::make_shared<ImportArgs>();
  CLI::App* cmd = app.add_subcommand(
      "import",
      "Import a Kineto (PyTorch profiler) or Nsight Systems timeline as a trace (.pb), or nccl-tests logs as "
      "a communication table");
  cmd->add_option("--kineto", args->kineto, "Kineto / Chrome trace JSON (plain or .gz)");
  cmd->add_option("--nsys", args->nsys,
                  "Nsight Systems SQLite export (nsys export --type sqlite; plain or .gz)");
  cmd->add_option("--out", args->out, "trace to write (.pb); with --nccl-tests the table to write (.json)")
      ->required();
  cmd->add_option(
         "--nccl-tests", args->nccl.files,
         "nccl-tests output (as its binaries print it, plain or under mpirun/srun, its -J JSON, or a "
         "CSV with op,gpus,size_bytes,time_us columns): one or more files into one table")
      ->expected(1, -1);
  cmd->add_option("--op", args->nccl.op,
                  "with --nccl-tests: the collective, for logs that do not name it (nccl-tests before 2.17)");
  cmd->add_option("--gpus", args->nccl.gpus,
                  "with --nccl-tests: the group size, for logs without a device list")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--where", args->nccl.where,
                  "with a --nccl-tests CSV: keep rows whose COLUMN is one of the values (COLUMN=V1|V2)");
  cmd->add_option(
      "--system", args->nccl.system,
      "with --nccl-tests: what the GPUs sat in, for the provenance (\"HGX H100 8-GPU, NVSwitch\")");
  cmd->add_option("--date", args->nccl.date,
                  "with --nccl-tests: date in the provenance (default: today, UTC)");
  cmd->add_option("--rank", args->rank, "DCP rank of the profiled process (default: the trace's own, else 0)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--cpu-ops", args->cpu_ops, "also import CPU ops, runtime calls and annotations");
  cmd->add_flag("--no-flows", args->no_flows, "leave out Kineto's launch -> kernel flow arrows");
  cmd->add_flag("--no-nvtx", args->no_nvtx, "leave out NVTX ranges (Nsight)");
  cmd->add_option("--name", args->name, "section name recorded with the scenario");
  cmd->add_option("--scenario", args->scenario_file,
                  "JSON file stating the profiled scenario (keys: the scenario flags' names, e.g. "
                  "{\"dcp\": 8, \"heads\": 128, \"head_dim\": 512, \"kv_heads\": 1, \"batch\": 64, "
                  "\"context\": \"32k\", \"strategy\": \"ag-rs\"}) instead of the flags");
  cmd->add_option("--phase-map", args->phase_map,
                  "JSON {\"kernel name text\": \"phase\"} rules tried before the built-in kernel table "
                  "(phase \"none\": no DCP phase)");
  analysis::add_scenario_flags(*cmd, args->scenario, false);
  cmd->footer(
      "The scenario is required: --dcp --heads --head-dim --kv-heads --batch --context (or --contexts-file) "
      "--strategy, or --scenario FILE.\nKernels become step phases (phase summaries for validate, calibrate "
      "and tables) by the --phase-map rules, NCCL collectives by operation and size against the scenario, "
      "then this table (text in the kernel name -> phase):\n" +
      [] {
        std::string t;
        for (const auto& r : traces::builtin_kernel_phases())
          t += "  " + r.contains + " -> " + r.phase + "  (" + r.source + ")\n";
        return t;
      }());
  cmd->callback([args, cmd] {
    args->nccl.command = "dcpsim import";
    for (const std::string& f : args->nccl.files) args->nccl.command += " --nccl-tests " + f;
    for (const std::string& w : args->nccl.where) args->nccl.command += " --where " + w;
    if (!args->nccl.op.empty()) args->nccl.command += " --op " + args->nccl.op;
    args->nccl.command += " --out " + args->out;
    args->given.clear();
    for (const char* flag : {"--dcp", "--heads", "--head-dim", "--qk-dim", "--kv-heads", "--batch",
                             "--context", "--contexts-file", "--strategy", "--launch", "--interleave",
                             "--lse-base", "--kv-dtype", "--out-dtype"}) {
      if (cmd->count(flag) > 0) args->given.push_back(flag);
    }
    run_import(*args);
  });
}

}  // namespace dcpsim::cli
