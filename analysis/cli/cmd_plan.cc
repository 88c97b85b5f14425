// `dcpsim plan`: which TP x DCP layout and merge for a model on G GPUs, under an SLO (analysis/plan.h).
#include <filesystem>
#include <iostream>
#include <memory>

#include "commands.h"
#include "dcpsim/analysis/baseline.h"
#include "dcpsim/analysis/io_inputs.h"
#include "dcpsim/analysis/plan.h"
#include "dcpsim/analysis/plot.h"
#include "dcpsim/analysis/scenario_flags.h"
#include "dcpsim/error.h"
#include "dcpsim/io_guard.h"

namespace dcpsim::cli {

#ifdef DCPSIM_WITH_SIMGRID
namespace {

struct PlanArgs {
  analysis::PlanOptions plan;
  std::string out, plot;
};

void run(const PlanArgs& a) {
  if (a.plot.empty() == false && a.out.empty()) throw InputError("--plot needs --out (the CSV it draws)");
  const analysis::PlanResult r = analysis::run_plan(a.plan);
  if (!a.out.empty()) {
    analysis::write_with_plot("plan", {{a.out, analysis::plan_csv(r)}}, analysis::plan_csv(r), a.plot);
  }
  std::cout << analysis::plan_table(r);
  if (!a.out.empty())
    std::cout << "  points: " << a.out << (a.plot.empty() ? "" : ", plot: " + a.plot) << "\n";
  std::fprintf(stderr, "plan: %zu points over %zu layouts in %.2f s\n", r.points.size(), r.layouts.size(),
               r.wall_s);
}

}  // namespace

void add_plan_command(CLI::App& app) {
  auto a = std::make_shared<PlanArgs>();
  CLI::App* cmd = app.add_subcommand(
      "plan",
      "Which TP x DCP layout and merge for a model on G GPUs: KV-limited concurrency, TPOT and tokens/s "
      "per GPU over a concurrency sweep, the Pareto front, the best layout under an SLO");
  cmd->footer(
      "Every layout TP x DCP with TP dividing --gpus (G / TP replicas) and DCP dividing TP; per point the "
      "decode step of the whole model (simulated attention layer + non-attention ops, see simulate), TPOT = "
      "step / --accept-length, tokens/s per GPU = concurrency x accept length / step / TP. Research "
      "strategies "
      "(row-stream) are shown apart and never picked.");
  auto& o = a->plan;
  cmd->add_option("--model", o.model, "model preset or dcpsim-model/1 JSON file")->capture_default_str();
  cmd->add_option("--profile", o.profile, "hardware profile")->capture_default_str();
  cmd->add_option("--gpus", o.gpus, "GPUs to deploy on (one NVLink domain or more)")->capture_default_str();
  cmd->add_option("--context", o.context, "context length of every request (4096, 32k, 1m)")
      ->capture_default_str();
  cmd->add_option(
      "--requests", o.requests,
      "a request trace (Mooncake JSONL[.gz], Azure CSV): requests decode at input + output/2 tokens");
  cmd->add_option(
         "--concurrency", o.concurrency,
         "requests per replica to try (list or range); each layout also tries its KV-limited maximum")
      ->capture_default_str();
  cmd->add_option(
         "--pipeline-parallel-size,--pp", o.pp,
         "pipeline stages to consider (a list, e.g. 1,2): a replica is TP x PP GPUs, PP micro-batches "
         "in flight")
      ->capture_default_str();
  cmd->add_option("--kv-dtype", o.kv_dtype, "KV-cache type: bf16, fp16, fp8 (default: the model's)");
  cmd->add_option("--strategy", o.strategies, "merge strategies for DCP > 1: a list or all")
      ->capture_default_str();
  cmd->add_option("--launch", o.launch, "kernel launch mode: eager, graph, pdl")->capture_default_str();
  cmd->add_option("--slo-tpot-ms", o.slo_tpot_ms, "the SLO: TPOT at most this many ms (0: none)");
  cmd->add_option("--slo-tokens-per-user", o.slo_user_tps,
                  "the SLO: at least this many tokens/s per request");
  cmd->add_option("--out", a->out, "write every point as CSV");
  cmd->add_option("--plot", a->plot,
                  "draw the Pareto fronts (tokens/s per GPU vs per user) as PNG (needs --out)");
  analysis::add_whole_model_flags(*cmd, o.whole, false);
  cmd->callback([a] {
    IoGuard io;
    analysis::guard_profile(io, "--profile", a->plan.profile);
    analysis::guard_model(io, "--model", a->plan.model);
    analysis::guard_baseline_traces(io, a->plan.whole);
    io.input("--requests", a->plan.requests).output("--out", a->out).output("--plot", a->plot).check();
    run(*a);
  });
}

#else

void add_plan_command(CLI::App& app) {
  add_unavailable_command(app, "plan", "Which TP x DCP layout and merge for a model on G GPUs",
                          "built without SimGrid");
}

#endif  // DCPSIM_WITH_SIMGRID

}  // namespace dcpsim::cli
