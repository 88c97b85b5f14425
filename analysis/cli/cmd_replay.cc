// dcpsim replay: a request trace (Mooncake JSONL, Azure CSV) through continuous batching, every decode step
// timed on SimGrid for every requested strategy (analysis/replay.h); or a measured trace (.pb) whose own
// scenarios are re-simulated and compared with its phase medians (analysis/validate.h).
#include "commands.h"

#if DCPSIM_WITH_SIMGRID
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "dcpsim/analysis/baseline.h"
#include "dcpsim/analysis/consistency.h"
#include "dcpsim/analysis/io_inputs.h"
#include "dcpsim/analysis/layouts.h"
#include "dcpsim/analysis/memory_estimate.h"
#include "dcpsim/analysis/plot.h"
#include "dcpsim/analysis/replay.h"
#include "dcpsim/analysis/scenario_flags.h"
#include "dcpsim/analysis/step_figures.h"
#include "dcpsim/analysis/summary_json.h"
#include "dcpsim/analysis/validate.h"
#include "dcpsim/analysis/whole_model.h"
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
  analysis::WholeModelFlags whole;
  std::string strategies = "all";
  int max_rows = 256;
  double kv_capacity_gb = 0.0;
  std::int64_t steps = 0;
  double time_window = 0.0;
  std::string out, plot, summary, cdf;
  bool no_memo = false;
  int kv_block = 64;
  int jobs = default_jobs();
  int check_every = 50;
};

bool is_measured_trace(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[traces::kTraceMagicSize] = {};
  in.read(magic, sizeof magic);
  return in.gcount() == static_cast<std::streamsize>(sizeof magic) &&
         traces::is_trace_magic(std::string_view(magic, sizeof magic));
}

void replay_measured(const ReplayArgs& a, const models::HardwareProfile& profile) {
  const analysis::MeasuredTrace measured = analysis::load_measured(a.requests);
  if (const std::string why = analysis::device_mismatch(profile, {measured}); !why.empty())
    std::fprintf(stderr, "warning: %s\n", why.c_str());
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

// "dcp8 h128 d512/576 kv1 graph": the geometry without the batch, which the trace decides.
std::string geometry_label(const models::Scenario& s) {
  return "dcp" + std::to_string(s.dcp) + " h" + std::to_string(s.heads) + " d" + std::to_string(s.head_dim) +
         "/" + std::to_string(s.qk_dim) + " kv" + std::to_string(s.kv_heads) +
         (s.interleave != 1 ? " i" + std::to_string(s.interleave) : "") + " " +
         std::string(models::to_string(s.launch));
}

// What the outputs say about the replay's setting (merged into the summary JSON).
nlohmann::json about(const ReplayArgs& a, const models::HardwareProfile& profile,
                     const analysis::WholeModel& m, const analysis::ReplayConfig& c,
                     const analysis::Layout& layout, const analysis::LayoutChoice& tp,
                     const std::vector<analysis::SkippedStrategy>& skipped) {
  nlohmann::json j = analysis::summary_document("replay", profile.name, analysis::model_label(a.geometry));
  j["layout"] = analysis::layout_json(layout, tp.rule);
  j["skipped"] = analysis::skipped_json(skipped);
  j.update(nlohmann::json{{"trace", a.requests},
                          {"dcp", c.batcher.geometry.dcp},
                          {"tp", m.tp()},
                          {"geometry", geometry_label(c.batcher.geometry)},
                          {"max_rows", c.batcher.max_rows},
                          {"kv_capacity_tokens_per_gpu", c.batcher.kv_capacity_tokens},
                          {"kv_budget", m.kv_budget_basis()},
                          {"non_attention", m.non_attention_basis()}});
  return j;
}

// Progress on stderr every two seconds: the share of requests done, the trace time reached and an ETA.
class Progress {
 public:
  void operator()(const analysis::ReplayProgress& p) {
    const auto now = std::chrono::steady_clock::now();
    if (now - last_ < std::chrono::seconds(2)) return;
    last_ = now;
    const double wall = std::chrono::duration<double>(now - start_).count();
    if (p.draining) {
      std::fprintf(stderr, "replay: schedule done in %.0f s; %lld simulations still running\n", wall,
                   static_cast<long long>(p.pending));
      return;
    }
    const double eta = p.fraction > 0.001 ? wall * (1.0 - p.fraction) / p.fraction : 0.0;
    std::fprintf(
        stderr,
        "replay: %5.1f%% of requests, %.0f s of trace, %lld steps, %lld compositions (%lld simulations "
        "queued), %.0f s elapsed, ETA %.0f s\n",
        100.0 * p.fraction, p.clock_s, static_cast<long long>(p.steps),
        static_cast<long long>(p.compositions), static_cast<long long>(p.pending), wall, eta);
  }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_ = start_;
};

void replay_requests(const ReplayArgs& a, const models::HardwareProfile& profile) {
  analysis::ReplayConfig c;
  const std::vector<models::Strategy> requested = analysis::parse_strategy_list(a.strategies, "strategy");
  analysis::ScenarioFlags flags = a.geometry;
  const analysis::LayoutQuery query = analysis::LayoutQuery::of(analysis::model_of(flags), profile,
                                                                a.whole.gpu_memory_utilization, a.whole.pp);
  const analysis::LayoutChoice tp = analysis::resolve_tp(flags, query);
  flags.batch = "1";
  flags.context = "1";
  flags.strategy = "ag-ar";  // the base scenario: ag-ar has no rule of its own on the heads
  const analysis::StrategyChoice choice =
      analysis::runnable_strategies(analysis::to_scenario(flags), requested);
  for (const models::Scenario& s : choice.run) c.strategies.push_back(s.strategy);
  c.batcher.geometry = choice.run.front();
  const analysis::Layout layout = analysis::evaluate_layout(
      query, analysis::tp_of(flags, c.batcher.geometry.dcp), c.batcher.geometry.dcp);
  if (!layout.valid) throw InputError(layout.invalid_reason);
  if (!layout.weights_fit)
    throw InputError("replay: the layout TP " + std::to_string(layout.tp) + " x DCP " +
                     std::to_string(layout.dcp) + " " + layout.fit_text() + " (give a larger --tp)");
  analysis::WholeModel model(query.model, profile, layout.tp, a.whole);
  c.batcher.max_rows = a.max_rows;
  c.batcher.max_steps = a.steps;
  c.batcher.time_window_s = a.time_window;
  c.batcher.kv_capacity_tokens =
      a.kv_capacity_gb > 0
          ? analysis::kv_capacity_tokens(c.batcher.geometry, a.kv_capacity_gb * 1e9, model.layers())
          : analysis::kv_capacity_tokens(c.batcher.geometry, model.kv_budget_bytes(), model.layers());
  c.layers = model.layers();
  c.non_attention = [&model](int rows) { return model.non_attention_s(rows); };
  c.memoise = !a.no_memo;
  c.bucket_tokens = a.kv_block;
  c.jobs = a.jobs;
  c.check_every = a.check_every;

  std::vector<analysis::Request> requests = analysis::read_requests(a.requests);
  std::fprintf(stderr, "replay: %zu requests from %s; model %s; KV capacity %lld tokens per GPU\n",
               requests.size(), a.requests.c_str(), analysis::model_label(a.geometry).c_str(),
               static_cast<long long>(c.batcher.kv_capacity_tokens));
  sim::SimOptions options;
  options.max_gpus = std::max(options.max_gpus, c.batcher.geometry.dcp);
  const sim::Simulator simulator(profile, options);
  analysis::anchor(model, a.whole, c.batcher.geometry.kv_dtype,
                   [&](const models::Scenario& s) { return simulator.run(s).step_latency_s; });
  simulator.prepare();  // the worker processes inherit built platforms
  const analysis::ScenarioTiming timing = [&](const models::Scenario& s) {
    return analysis::step_timing(simulator.run(model.attention_scenario(s)));
  };
  Progress progress;
  const analysis::ReplayResult result =
      analysis::replay_requests(std::move(requests), c, timing, std::ref(progress));

  const std::string summary = analysis::summary_json(
      result, about(a, profile, model, c, layout, tp, choice.skipped).dump(), 200, &layout);
  std::vector<std::pair<std::filesystem::path, std::string> > files = {{a.out, analysis::steps_csv(result)}};
  if (!a.summary.empty()) files.emplace_back(a.summary, summary);
  if (!a.cdf.empty()) files.emplace_back(a.cdf, analysis::cdf_csv(result));
  analysis::write_with_plot("replay", files, summary, a.plot);
  std::cout << "replay on " << profile.name << ", " << geometry_label(c.batcher.geometry) << "; model "
            << analysis::model_label(a.geometry) << ", TP " << model.tp() << "\n";
  std::cout << "layout: DCP " << layout.dcp << " in " << tp.rule << "\n";
  std::cout << analysis::skipped_text(choice.skipped, "");
  std::cout << "non-attention time: " << model.non_attention_basis() << "\n";
  std::cout << "KV budget per GPU: " << model.kv_budget_basis() << "\n";
  std::cout << analysis::replay_summary(result) << "steps: " << a.out
            << " (per step; step_us = the decode step, "
            << "layer_* = one attention layer)\n";
  if (!a.summary.empty()) std::cout << "summary: " << a.summary << "\n";
  if (!a.cdf.empty()) std::cout << "cdf: " << a.cdf << "\n";
  if (!a.plot.empty()) std::cout << "plot: " << a.plot << "\n";
}

void add_geometry_flags(CLI::App& cmd, analysis::ScenarioFlags& f) {
  // The scenario flags less those the trace decides (batch, contexts) and those replay takes as a list.
  analysis::add_scenario_flags(cmd, f, false);
  for (const char* name : {"--batch", "--context", "--contexts-file", "--strategy"})
    cmd.remove_option(cmd.get_option(name));
}

}  // namespace

void add_replay_command(CLI::App& app) {
  auto args = std::make_shared<ReplayArgs>();
  CLI::App* cmd = app.add_subcommand(
      "replay", "Replay a request trace through continuous batching, timing every decode step per strategy");
  cmd->footer(
      "Whole-model steps: the clock advances by the first strategy's decode step = layers x one simulated "
      "attention layer + the non-attention time (an estimate from --model, or --non-attention-us). Steps "
      "reuse "
      "the timing of a batch of the same requests while every row stays within --kv-block/2 tokens of the "
      "context it was timed at; the summary reports that error on sampled steps (--check-every).");
  cmd->add_option("--requests", args->requests,
                  "request trace: Mooncake .jsonl or Azure .csv (optionally .gz); or a measured trace .pb to "
                  "re-simulate and compare")
      ->required();
  cmd->add_option("--profile", args->profile, "hardware profile: a built-in name or a JSON file")
      ->capture_default_str();
  add_geometry_flags(*cmd, args->geometry);
  analysis::add_whole_model_flags(*cmd, args->whole);
  cmd->add_option(
         "--strategy", args->strategies,
         "strategies timed on every step (" + analysis::strategy_help() +
             "); those that cannot run the layout are skipped with the rule; the first drives the clock")
      ->capture_default_str();
  cmd->add_option("--strategies", args->strategies)->group("");  // the old spelling
  cmd->add_option("--max-rows", args->max_rows, "rows (requests) per decode step")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  cmd->add_option("--kv-capacity-gb", args->kv_capacity_gb,
                  "KV cache per GPU in GB (1e9 B); default: the KV budget of the model on the profile")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--steps", args->steps, "stop after this many steps (0: no limit)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--time-window", args->time_window,
                  "replay only requests arriving in the first SECONDS, and no step starting after (0: all)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option(
         "--kv-block", args->kv_block,
         "KV block size in tokens: a batch is re-timed every KV-BLOCK steps at its mid-block contexts "
         "(1: every step at its exact contexts)")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  cmd->add_option("--check-every", args->check_every,
                  "also time the exact contexts of every n-th new composition and report the bucketing error "
                  "(0: never)")
      ->check(CLI::Range(0, 1 << 30))
      ->capture_default_str();
  cmd->add_option(
         "--jobs", args->jobs,
         "processes timing steps: this one and JOBS - 1 forked workers (default: the machine's cores)")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  cmd->add_option("--out", args->out, "per-step CSV (or, for a .pb, the comparison CSV)")->required();
  cmd->add_option("--summary", args->summary,
                  "compact JSON: percentiles, CDF and time bands per strategy (what --plot draws)");
  cmd->add_option("--cdf", args->cdf, "CDF CSV of the decode step, layer step and layer merge per strategy");
  cmd->add_option(
      "--plot", args->plot,
      "also draw the replay into this PNG: percentile bands over time and CDFs (needs python3 with "
      "matplotlib)");
  cmd->add_flag("--no-memo", args->no_memo, "time every step (no reuse of any kind; very slow)");
  cmd->callback([args] {
    IoGuard io;
    io.input("--requests", args->requests);
    analysis::guard_profile(io, "--profile", args->profile);
    analysis::guard_scenario_flags(io, args->geometry);
    analysis::guard_baseline_traces(io, args->whole);
    io.output("--out", args->out).output("--plot", args->plot).output("--summary", args->summary);
    io.output("--cdf", args->cdf).check();
    namespace est = analysis::memory_estimate;
    const double bytes = est::expanded_bytes(args->requests);
    est::require_for_input(
        "replay", is_measured_trace(args->requests) ? est::kMeasuredTrace : est::kRequestTrace, bytes);
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
