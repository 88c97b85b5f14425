// dcpsim replay: a request trace (Mooncake JSONL, Azure CSV) through continuous batching, every decode step
// simulated on SimGrid for every requested strategy (analysis/replay.h); or a measured trace (.pb) whose own
// scenarios are re-simulated and compared with its phase medians (analysis/validate.h).
#include "commands.h"

#if DCPSIM_WITH_SIMGRID
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "dcpsim/analysis/plot.h"
#include "dcpsim/analysis/replay.h"
#include "dcpsim/analysis/scenario_flags.h"
#include "dcpsim/analysis/validate.h"
#include "dcpsim/error.h"
#include "dcpsim/models/profile.h"
#include "dcpsim/sim/simulator.h"
#include "dcpsim/traces/output_file.h"
#include "dcpsim/traces/protobuf_writer.h"
#endif

namespace dcpsim::cli {

#if !DCPSIM_WITH_SIMGRID

void add_replay_command(CLI::App& app) {
  add_unavailable_command(app, "replay", "Replay a request trace through continuous batching",
                          "this dcpsim was built without SimGrid (DCPSIM_WITH_SIMGRID=OFF)");
}

#else

namespace {

struct ReplayArgs {
  std::string requests;
  std::string profile = "h200-sxm";
  analysis::ScenarioFlags geometry;
  std::string strategies = "all";
  int max_rows = 256;
  double kv_capacity_gb = 0.0;
  double weight_reserve_gib = 60.0;
  int layers = 61;
  std::int64_t steps = 0;
  double time_window = 0.0;
  std::string out;
  std::string plot;
  bool no_memo = false;
};

std::vector<models::Strategy> parse_strategies(const std::string& list) {
  std::vector<models::Strategy> out;
  const auto items = analysis::split_list(list, "strategies");
  if (items.size() == 1 && items[0] == "all") return models::all_strategies();
  for (const auto& s : items) out.push_back(models::parse_strategy(s));
  return out;
}

bool is_measured_trace(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[traces::kTraceMagicSize] = {};
  in.read(magic, sizeof magic);
  return in.gcount() == static_cast<std::streamsize>(sizeof magic) &&
         traces::is_trace_magic(std::string_view(magic, sizeof magic));
}

void replay_measured(const ReplayArgs& a, const models::HardwareProfile& profile) {
  const analysis::MeasuredTrace measured = analysis::load_measured(a.requests);
  const analysis::ValidationReport report =
      analysis::validate(profile, std::nullopt, analysis::all_sections({measured}));
  const std::string csv = analysis::validation_csv(report);
  analysis::write_with_plot("validate", {{a.out, csv}}, csv, a.plot);
  std::printf("replayed %zu measured section(s) of %s on %s: %zu figures compared\n", report.sections.size(),
              a.requests.c_str(), profile.name.c_str(), report.comparisons.size());
  std::printf("%-12s %6s %12s %12s\n", "figure", "n", "median |err|", "max |err|");
  for (const auto& s : report.per_figure) {
    std::printf("%-12s %6d %11.2f%% %11.2f%%\n", s.key.c_str(), s.count, 100 * s.median, 100 * s.max);
  }
}

analysis::ReplayConfig make_config(const ReplayArgs& a, const models::HardwareProfile& profile) {
  analysis::ReplayConfig c;
  c.strategies = parse_strategies(a.strategies);
  analysis::ScenarioFlags flags = a.geometry;
  flags.batch = "1";
  flags.context = "1";
  flags.strategy = std::string(models::to_string(c.strategies.front()));
  c.batcher.geometry = analysis::to_scenario(flags);
  c.batcher.max_rows = a.max_rows;
  c.batcher.max_steps = a.steps;
  c.batcher.time_window_s = a.time_window;
  // Without --kv-capacity-gb, as `dcpsim scan` counts it: HBM less a reserve for weights and activations.
  const double capacity_bytes = a.kv_capacity_gb > 0
                                    ? a.kv_capacity_gb * 1e9
                                    : profile.gpu.hbm_capacity.si() - a.weight_reserve_gib * 1073741824.0;
  c.batcher.kv_capacity_tokens = analysis::kv_capacity_tokens(c.batcher.geometry, capacity_bytes, a.layers);
  c.layers = a.layers;
  c.memoise = !a.no_memo;
  return c;
}

void replay_requests(const ReplayArgs& a, const models::HardwareProfile& profile) {
  const analysis::ReplayConfig config = make_config(a, profile);
  std::vector<analysis::Request> requests = analysis::read_requests(a.requests);
  std::fprintf(stderr, "replay: %zu requests from %s; KV capacity %lld tokens per GPU\n", requests.size(),
               a.requests.c_str(), static_cast<long long>(config.batcher.kv_capacity_tokens));
  const sim::Simulator simulator(profile);
  const auto timing = [&](const models::Scenario& s) {
    const sim::StepResult r = simulator.run(s);
    return analysis::StepTiming{r.step_latency_s, r.merge_latency_s};
  };
  const auto started = std::chrono::steady_clock::now();
  auto last_report = started;
  const auto progress = [&](const analysis::ReplayStep& step) {
    const auto now = std::chrono::steady_clock::now();
    if (now - last_report < std::chrono::seconds(2)) return;
    last_report = now;
    const double wall = std::chrono::duration<double>(now - started).count();
    std::fprintf(stderr,
                 "replay: step %lld at %.3f s simulated, %d rows, longest context %lld (%.0f steps/s)\n",
                 static_cast<long long>(step.step), step.time_s, step.rows,
                 static_cast<long long>(step.max_context), static_cast<double>(step.step + 1) / wall);
  };
  const analysis::ReplayResult result =
      analysis::replay_requests(std::move(requests), config, timing, progress);
  const std::string csv = analysis::steps_csv(result);
  analysis::write_with_plot("replay", {{a.out, csv}}, csv, a.plot);
  std::cout << analysis::replay_summary(result) << "steps: " << a.out << "\n";
  if (!a.plot.empty()) std::cout << "plot: " << a.plot << "\n";
}

void add_geometry_flags(CLI::App& cmd, analysis::ScenarioFlags& f) {
  cmd.add_option("--dcp", f.dcp, "DCP group size N")->capture_default_str();
  cmd.add_option("--heads", f.heads, "query heads per rank after the query all-gather (H)")
      ->capture_default_str();
  cmd.add_option("--head-dim", f.head_dim, "value head dim D (512 = MLA latent, 128 = GQA)")
      ->capture_default_str();
  cmd.add_option("--qk-dim", f.qk_dim,
                 "query/key dim D_qk (default: 576 for D=512 with one KV head, else D)");
  cmd.add_option("--kv-heads", f.kv_heads, "KV heads H_kv, dividing H (1 = MQA/MLA)")->capture_default_str();
  cmd.add_option("--interleave", f.interleave, "KV interleave size I")->capture_default_str();
  cmd.add_option("--launch", f.launch, "kernel launch mode: eager, graph, pdl")->capture_default_str();
  cmd.add_option("--lse-base", f.lse_base, "LSE base: e or 2")->capture_default_str();
  cmd.add_option("--kv-dtype", f.kv_dtype, "Q/K/V element type: bf16, fp16, fp32")->capture_default_str();
  cmd.add_option("--out-dtype", f.out_dtype, "output element type: bf16, fp16, fp32")->capture_default_str();
}

}  // namespace

void add_replay_command(CLI::App& app) {
  auto args = std::make_shared<ReplayArgs>();
  CLI::App* cmd = app.add_subcommand(
      "replay",
      "Replay a request trace through continuous batching, simulating every decode step per strategy");
  cmd->add_option("--requests", args->requests,
                  "request trace: Mooncake .jsonl or Azure .csv (optionally .gz); or a measured trace .pb to "
                  "re-simulate and compare")
      ->required();
  cmd->add_option("--profile", args->profile, "hardware profile: a built-in name or a JSON file")
      ->capture_default_str();
  add_geometry_flags(*cmd, args->geometry);
  cmd->add_option("--strategies", args->strategies,
                  "strategies to simulate on every step: all or a comma list; the first drives the clock")
      ->capture_default_str();
  cmd->add_option("--max-rows", args->max_rows, "rows (requests) per decode step")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  cmd->add_option("--kv-capacity-gb", args->kv_capacity_gb,
                  "KV cache per GPU in GB (1e9 B); default: the profile's HBM less --weight-reserve-gib")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--weight-reserve-gib", args->weight_reserve_gib,
                  "HBM kept for weights, activations and workspace (GiB), as in dcpsim scan")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--layers", args->layers, "attention layers per decode step (61: DeepSeek-V3)")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd->add_option("--steps", args->steps, "stop after this many steps (0: no limit)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--time-window", args->time_window,
                  "replay only requests arriving in the first SECONDS, and no step starting after (0: all)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--out", args->out, "per-step CSV (or, for a .pb, the comparison CSV)")->required();
  cmd->add_option("--plot", args->plot, "also draw the CSV into this PNG (needs python3 with matplotlib)");
  cmd->add_flag("--no-memo", args->no_memo, "simulate every step even when an identical batch was simulated");
  cmd->callback([args] {
    traces::check_output_paths({{"--requests", args->requests}, {"--profile", args->profile}},
                               {{"--out", args->out}, {"--plot", args->plot}});
    if (std::isnan(args->kv_capacity_gb) || args->kv_capacity_gb < 0 || std::isinf(args->kv_capacity_gb)) {
      throw InputError("--kv-capacity-gb must be a finite number >= 0 (0: from the profile)");
    }
    const models::HardwareProfile profile = models::load_profile(args->profile);
    if (is_measured_trace(args->requests)) {
      replay_measured(*args, profile);
    } else {
      replay_requests(*args, profile);
    }
  });
}

#endif  // DCPSIM_WITH_SIMGRID

}  // namespace dcpsim::cli
