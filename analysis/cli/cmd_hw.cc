// dcpsim hw: the hardware runner.
//   hw run      one DCP decode step on GPUs (or --emulate: N ranks on one GPU), timed, checked, traced
//   hw bench    one operation's timing against the device-copy bandwidth (cmd_hw_bench.cc)
//   hw devices  the visible GPUs and the CUDA/NCCL versions
//   hw sweep    the kernels over full grids of shapes, as a measured kernel table file (cmd_hw_sweep.cc)
//   hw calibrate  every table family, fit/PDL/held-out steps, fit and validation: a profile of this GPU
//                 (cmd_hw_calibrate.cc)
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "dcpsim/analysis/io_inputs.h"
#include "dcpsim/analysis/scenario_flags.h"
#include "dcpsim/error.h"
#include "dcpsim/hw/device.h"
#include "dcpsim/hw/runner.h"
#include "dcpsim/traces/output_file.h"
#include "dcpsim/traces/protobuf_writer.h"

namespace dcpsim::cli {
namespace {

struct HwRunFlags {
  analysis::ScenarioFlags scenario;
  bool emulate = false;
  bool mpi = false;
  std::string devices;
  int warmup = 5, reps = 20, check_rows = -1, padded_rows = 0;
  bool row_stamps = false;
  bool row_probe = false;
  bool row_combine_staged = false;
  bool row_early_tail = false;
  std::string out, json;
  std::uint64_t seed = 1;
  std::int64_t direct_timeout_ms = 2000;
  std::string timing = "auto";
  std::string attention = "auto";
};

std::vector<int> parse_devices(const std::string& s) {
  std::vector<int> d;
  if (s.empty()) return d;
  for (const auto& item : analysis::split_list(s, "devices")) {
    try {
      std::size_t used = 0;
      const int v = std::stoi(item, &used);
      if (used != item.size() || v < 0) throw std::invalid_argument(item);
      d.push_back(v);
    } catch (const std::exception&) {
      throw InputError("--devices '" + item + "' is not a device ordinal (0, 1, ...)");
    }
  }
  return d;
}

// The scenarios of --strategy (a comma list, or all), checked before any device is touched. `all`: every
// strategy hw run runs, less those this run cannot use (a one-line notice each: row-stream runs in emulation
// only, FlashInfer's fused merge needs NCCL windows on two or more GPUs). A strategy named that cannot run is
// an input error.
std::vector<models::Scenario> hardware_scenarios(const analysis::ScenarioFlags& flags, hw::ProcessMode mode) {
  std::vector<models::Scenario> out;
  for (models::Scenario& s : analysis::to_scenarios(flags)) {
    const std::string why = hw::strategy_unavailable(s.strategy, mode, s.dcp);
    if (why.empty()) {
      out.push_back(std::move(s));
    } else if (flags.strategy != "all") {
      throw InputError("--strategy " + std::string(models::to_string(s.strategy)) + ": " + why);
    } else {
      std::fprintf(stderr, "notice: --strategy all leaves out %s (%s)\n",
                   std::string(models::to_string(s.strategy)).c_str(), why.c_str());
    }
  }
  return out;
}

void print_result(const models::Scenario& s, const hw::RunResult& r) {
  std::printf("%s\n", s.label().c_str());
  std::printf("  %-4s %-16s %12s %12s %12s\n", "rank", "phase", "median_us", "min_us", "max_us");
  for (const auto& p : r.phases)
    std::printf("  %-4d %-16s %12.2f %12.2f %12.2f%s\n", p.rank, p.phase.c_str(), p.median_ns / 1e3,
                p.min_ns / 1e3, p.max_ns / 1e3, p.emulated ? "  (emulated)" : "");
  std::printf("  step %.2f us, merge %.2f us (timing: %s; whole step between two events %.2f us)\n  %s\n",
              r.step_median_ns / 1e3, r.merge_median_ns / 1e3, hw::timing_name(r.timing),
              r.outer_step_median_ns / 1e3, r.check.summary.c_str());
  for (const auto& [name, value] : r.figures) std::printf("  %s %.2f\n", name.c_str(), value);
}

nlohmann::json to_json(const models::Scenario& s, const hw::RunResult& r) {
  nlohmann::json j;
  j["scenario"] = s.label();
  j["step_median_ns"] = r.step_median_ns;
  j["merge_median_ns"] = r.merge_median_ns;
  j["outer_step_median_ns"] = r.outer_step_median_ns;
  j["timing"] = hw::timing_name(r.timing);
  if (!r.timing_note.empty()) j["timing_note"] = r.timing_note;
  for (const auto& [name, value] : r.figures) j["figures"][name] = value;
  j["check"] = {{"passed", r.check.passed},           {"rows", r.check.rows_checked},
                {"rel_l2", r.check.rel_l2},           {"max_abs", r.check.max_abs},
                {"worst_bound", r.check.worst_bound}, {"lse_max_abs", r.check.lse_max_abs}};
  for (const auto& it : r.row_probe) {
    nlohmann::json t;
    for (std::size_t k = 0; k < it.t_ns.size(); ++k) t[hw::kRowProbeStages[k]] = it.t_ns[k];
    j["row_probe"].push_back({{"rank", it.rank},
                              {"item", it.item},
                              {"row", it.row},
                              {"grid", hw::row_probe_grid(it)},
                              {"sm", it.sm},
                              {"warp", it.warp},
                              {"t_ns", t}});
  }
  for (const auto& p : r.phases)
    j["phases"].push_back({{"rank", p.rank},
                           {"phase", p.phase},
                           {"median_ns", p.median_ns},
                           {"min_ns", p.min_ns},
                           {"max_ns", p.max_ns},
                           {"emulated", p.emulated}});
  return j;
}

void write_json(const std::string& path, const nlohmann::json& j) {
  traces::write_file_atomically(path, j.dump(2) + "\n");
}

void run_command(const HwRunFlags& f, const std::vector<std::string>& argv) {
  hw::RunConfig base;
  base.mode = f.mpi       ? hw::ProcessMode::kMpi
              : f.emulate ? hw::ProcessMode::kEmulate
                          : hw::ProcessMode::kThreads;
  base.devices = parse_devices(f.devices);
  IoGuard io;
  analysis::guard_scenario_flags(io, f.scenario);
  io.output("--out", f.out).output("--json", f.json).check();
  const std::vector<models::Scenario> scenarios =
      hardware_scenarios(f.scenario, base.mode);  // before any device
  if (base.mode == hw::ProcessMode::kThreads && base.devices.empty()) {
    for (int i = 0; i < scenarios.front().dcp; ++i) base.devices.push_back(i);
  }
  base.warmup = f.warmup;
  base.reps = f.reps;
  base.check_rows = f.check_rows;
  base.row_stamps = f.row_stamps;
  base.row_probe = f.row_probe;
  base.row_combine_staged = f.row_combine_staged;
  base.row_early_tail = f.row_early_tail;
  base.seed = f.seed;
  base.padded_rows = f.padded_rows;
  base.direct_timeout_ms = f.direct_timeout_ms;
  base.timing = hw::parse_timing(f.timing);
  base.attention = hw::parse_attention_impl(f.attention);
  if (f.reps < 1 || f.warmup < 0) throw InputError("--reps must be >= 1 and --warmup >= 0");
  if (f.padded_rows < 0) throw InputError("--padded-rows must be >= 0");
  if (!f.mpi) require_gpu();
  hw::MpiWorld world;
  if (f.mpi) world = hw::mpi_init(nullptr, nullptr);
  const bool leader = world.rank == 0;

  std::unique_ptr<traces::ProtobufTraceWriter> writer;
  if (!f.out.empty() && leader) {
    writer = std::make_unique<traces::ProtobufTraceWriter>(f.out);
    const std::vector<int> devs = base.mode == hw::ProcessMode::kEmulate
                                      ? std::vector<int>{base.devices.empty() ? 0 : base.devices.front()}
                                      : base.devices;
    writer->on_header(hw::measured_header(base.mode, devs, argv));
  }
  nlohmann::json all = nlohmann::json::array();
  std::vector<std::string> failures;
  for (const models::Scenario& scenario : scenarios) {
    hw::RunConfig c = base;
    c.scenario = scenario;
    const hw::RunResult r = hw::run_step(c, writer.get());
    if (leader) print_result(c.scenario, r);
    all.push_back(to_json(c.scenario, r));
    if (!r.check.passed) failures.push_back(c.scenario.label() + ": " + r.check.summary);
  }
  if (writer) writer->finish();
  if (!f.json.empty() && leader) write_json(f.json, all);
  if (f.mpi) hw::mpi_finalize();
  if (!failures.empty())
    throw RuntimeError("merged output does not match the reference: " + failures.front());
}

void add_run(CLI::App& hw_cmd) {
  auto f = std::make_shared<HwRunFlags>();
  CLI::App* run =
      hw_cmd.add_subcommand("run", "Run one DCP decode step on GPUs, check it, write a measured trace");
  analysis::add_scenario_flags(*run, f->scenario,
                               false);  // --strategy also takes a list or all (hardware_scenarios)
  // The runner's kernels take fewer KV types than the simulator prices.
  run->get_option("--kv-dtype")
      ->description(
          "KV-cache element type: bf16, fp16, or fp8 (e4m3, one per-tensor scale, as vLLM's "
          "--kv-cache-dtype fp8; generated on the device in e4m3, the query and output bf16): fp8 runs on "
          "FlashInfer's FP8-KV kernels only, MLA (D_qk 576, D 512) on Hopper sm_90a and GQA decode (D 128) "
          "on sm_90/sm_100, and is refused elsewhere (--attention dcpsim, row-stream); default: the "
          "model's (bf16)");
  run->add_flag("--emulate", f->emulate,
                "N logical ranks on one GPU; collectives become device-local stand-ins");
  run->add_flag("--mpi", f->mpi, "one process per GPU under mpirun/srun (MPI builds)");
  run->add_option("--devices", f->devices, "device ordinals, one per rank (default 0..N-1; --emulate: one)");
  run->add_option("--warmup", f->warmup, "warm-up steps")->capture_default_str();
  run->add_option("--reps", f->reps, "measured steps")->capture_default_str();
  run->add_option("--check-rows", f->check_rows,
                  "rows checked against the fp64 reference (-1: all up to 16, else 4)")
      ->capture_default_str();
  run->add_flag("--row-stamps", f->row_stamps,
                "stamp %globaltimer where each row's LSE and output become ready (always on for row-stream)");
  run->add_flag("--row-probe", f->row_probe,
                "row-stream: stamp %globaltimer at each stage of each combine item of the last step (figures "
                "row_stream.probe.*; every item under row_probe in --json); other strategies ignore it");
  run->add_flag(
      "--row-combine-staged", f->row_combine_staged,
      "row-stream: the owners' combine through its shared-memory stages even where an item's partials "
      "fit the registers (the earlier kernel, for comparison)");
  run->add_flag("--row-early-tail", f->row_early_tail,
                "row-stream: also launch an early tail combine, released once the last attention launch's "
                "blocks have all begun, that merges each row's partials as they land (not yet measured on "
                "hardware: off by default)");
  run->add_option("--padded-rows", f->padded_rows, "CUDA-graph padding rows after the batch (masked)")
      ->capture_default_str();
  run->add_option("--direct-timeout-ms", f->direct_timeout_ms,
                  "direct and row-stream merges: how long an owner waits for a flag")
      ->capture_default_str();
  run->add_option(
         "--timing", f->timing,
         "phase timing: cupti (GPU timeline of every kernel, memcpy and memset), events (CUDA events "
         "around phases), step (only each rank's whole step), auto (cupti if it loads, else events)")
      ->capture_default_str();
  run->add_option("--attention", f->attention,
                  "local attention: flashinfer, dcpsim, or auto (FlashInfer where it runs the geometry; "
                  "always FlashInfer for --kv-dtype fp8)")
      ->capture_default_str();
  run->add_option("--out", f->out, "measured trace (.pb; a name ending in .gz is written gzip-compressed)");
  run->add_option("--json", f->json, "figures as JSON");
  run->add_option("--seed", f->seed, "input generator seed")->capture_default_str();
  // An empty argv makes the trace header read the process's own command line.
  run->callback([f] { run_command(*f, {}); });
}

void add_devices(CLI::App& hw_cmd) {
  CLI::App* d = hw_cmd.add_subcommand("devices", "List the visible GPUs and the CUDA/NCCL versions");
  d->callback([] {
    require_gpu();
    const int n = hw::device_count();
    const hw::SoftwareVersions v = hw::software_versions();
    std::printf("CUDA runtime %s, driver %s, NCCL %s; %d device(s)\n", v.cuda_runtime.c_str(),
                v.cuda_driver.c_str(), v.nccl.c_str(), n);
    std::printf("attention: %s\n", hw::built_with_flashinfer()
                                       ? "FlashInfer 0.7.2.post1 (MLA sm_90a, GQA decode) or dcpsim's kernel"
                                       : "dcpsim's kernel (built without FlashInfer)");
    for (int i = 0; i < n; ++i) {
      const hw::DeviceInfo info = hw::device_info(i);
      std::printf("  %d  %s  %s  %s  sm_%d%d  %d SMs  %.1f GiB  L2 %.0f MB\n", i, info.name.c_str(),
                  info.uuid.c_str(), info.pci_bus_id.c_str(), info.cc_major, info.cc_minor, info.sm_count,
                  info.memory_bytes / 1073741824.0, info.l2_bytes / 1e6);
    }
  });
}

}  // namespace

void require_gpu() {
  if (!hw::built_with_cuda()) throw RuntimeError(hw::kBuiltWithoutCuda);
  if (hw::device_count() == 0) {
    throw RuntimeError(
        "no CUDA device is visible: dcpsim hw needs an NVIDIA GPU and its driver (check nvidia-smi and "
        "CUDA_VISIBLE_DEVICES)");
  }
}

void add_hw_command(CLI::App& app, int argc, char** argv) {
  CLI::App* hw_cmd = app.add_subcommand("hw", "Run the real kernels and collectives on GPUs");
  hw_cmd->require_subcommand(1);
  add_run(*hw_cmd);
  add_hw_bench(*hw_cmd);
  add_devices(*hw_cmd);
  add_hw_sweep_command(*hw_cmd, argc, argv);
  add_hw_calibrate_command(*hw_cmd, argc, argv);
}

}  // namespace dcpsim::cli
