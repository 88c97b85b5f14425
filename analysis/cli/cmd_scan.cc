// dcpsim scan: a grid of scenarios (comma lists of the scenario flags) simulated on SimGrid into one CSV.
#include <iostream>
#include <memory>
#include <string>
#include <tuple>

#include "commands.h"

#ifdef DCPSIM_WITH_SIMGRID
#include <filesystem>
#include <fstream>
#include <iterator>

#include "dcpsim/analysis/baseline.h"
#include "dcpsim/analysis/io_inputs.h"
#include "dcpsim/analysis/plot.h"
#include "dcpsim/analysis/scan.h"
#include "dcpsim/error.h"
#include "dcpsim/interrupt.h"
#include "dcpsim/models/profile.h"
#include "dcpsim/traces/output_file.h"
#endif

namespace dcpsim::cli {

#ifdef DCPSIM_WITH_SIMGRID
namespace {

struct ScanCommand {
  analysis::ScanOptions options;
  std::string out;
  std::string shard;
  std::string nccl_algo;
  std::string nccl_proto;
  std::string plot;
  std::string json;
  std::string at;  // the plot's slice (analysis/plot.h check_scan_slice)
  bool no_header = false;
  bool best = false;
  bool list_skipped = false;
  bool include_research = false;
};

void check_plot(const ScanCommand& c) {
  if (!c.at.empty() && c.plot.empty())
    throw InputError("--at chooses the slice --plot draws: add --plot PNG");
  if (c.plot.empty()) return;
  analysis::check_scan_slice(c.at);
  if (c.options.shard_count > 1 || c.no_header) {
    throw InputError(
        "--plot draws a whole grid with its header: drop --shard/--no-header, or draw the "
        "concatenated shards with `python3 scripts/plot.py scan SCAN.csv SCAN.png`");
  }
}

// With --plot, the grid goes to a temporary CSV first, so that the CSV and the plot appear together or not at
// all.
analysis::ScanReport scan_with_plot(const ScanCommand& c) {
  const std::filesystem::path out(c.out);
  const std::filesystem::path temp = interrupt::temp_name_beside(out, ".scan.csv");
  const interrupt::TrackedFile tracked(temp);
  std::error_code ec;
  try {
    const analysis::ScanReport report = analysis::run_scan(c.options, temp, std::cerr, c.list_skipped);
    std::ifstream in(temp, std::ios::binary);
    const std::string csv((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::filesystem::remove(temp, ec);
    std::vector<std::string> options = {"--name", out.filename().string()};
    if (!c.at.empty()) options.insert(options.end(), {"--at", c.at});
    analysis::write_with_plot("scan", {{out, csv}}, csv, c.plot, options);
    return report;
  } catch (...) {
    std::filesystem::remove(temp, ec);
    throw;
  }
}

void run_scan_command(ScanCommand& c) {
  if (!c.shard.empty())
    std::tie(c.options.shard_index, c.options.shard_count) = analysis::parse_shard(c.shard);
  if (!c.nccl_algo.empty()) c.options.nccl_algo = models::parse_algorithm(c.nccl_algo);
  if (!c.nccl_proto.empty()) c.options.nccl_proto = models::parse_protocol(c.nccl_proto);
  c.options.header = !c.no_header;
  check_plot(c);
  IoGuard io;
  analysis::guard_profile(io, "--profile", c.options.profile);
  analysis::guard_scenario_flags(io, c.options.flags);
  analysis::guard_baseline_traces(io, c.options.whole);
  io.output("--out", c.out).output("--plot", c.plot).output("--json", c.json).check();
  if (c.options.jobs < 1 || c.options.jobs > 1024) {
    throw InputError("--jobs " + std::to_string(c.options.jobs) + " is not an integer in [1, 1024]");
  }
  c.options.plot_at = c.at;
  const analysis::ScanReport report =
      c.plot.empty() ? analysis::run_scan(c.options, c.out, std::cerr, c.list_skipped) : scan_with_plot(c);
  std::cerr << "scan: wrote " << report.scenarios << " rows to " << c.out << " in " << report.wall_s << " s";
  if (!report.skipped.empty()) std::cerr << " (" << report.skipped.size() << " combinations skipped)";
  std::cerr << "\n";
  if (!c.plot.empty()) std::cerr << "scan: plot " << c.plot << "\n";
  if (c.options.header && c.options.shard_index == 0 && report.scenarios > 0) {
    std::ifstream in(c.out, std::ios::binary);
    const std::string csv((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    analysis::ScanSummaryOptions summary;
    summary.best_only = c.best;
    summary.include_research = c.include_research;
    summary.by_heads = !c.options.flags.heads.empty() || !analysis::model_of(c.options.flags);
    summary.by_tp = report.tp.tp.size() > 1;
    std::cout << "layout: " << report.tp.rule << "\n";
    std::cout << analysis::scan_summary(csv, summary);
    if (!c.json.empty()) {
      traces::write_file_atomically(c.json,
                                    analysis::scan_summary_json(csv, summary, report.tp, c.options.profile,
                                                                analysis::model_label(c.options.flags)));
      std::cout << "summary: " << c.json << "\n";
    }
  }
}

}  // namespace

void add_scan_command(CLI::App& app) {
  auto c = std::make_shared<ScanCommand>();
  analysis::ScanOptions& o = c->options;
  CLI::App* cmd = app.add_subcommand("scan", "Simulate a grid of scenarios into CSV");
  cmd->footer(
      "Every combination of the comma lists, in the order dcp, heads, head-dim, kv-heads, batch, context, "
      "strategy, launch (the last varies fastest); invalid combinations are skipped and reported on stderr.\n"
      "--shard i/n keeps the i-th of n contiguous slices; only shard 0 writes the header line, so "
      "concatenating "
      "shards 0..n-1 gives exactly the unsharded CSV. --no-header writes no header at all.\n"
      "Model: --model (default deepseek-v3 unless geometry flags are given) and --tp (default: the smallest "
      "multiple of the largest --dcp whose weights fit a GPU, one TP for every size; vLLM needs TP >= DCP "
      "and "
      "TP % DCP == 0) set the heads per rank, the weights per GPU and the non-attention time; KV capacity "
      "per "
      "GPU = KV budget / (KV bytes per token per layer x layers). A layout whose weights do not fit says "
      "'does "
      "not fit' and is never ranked.\n"
      "stdout: per geometry, batch and context, the best production strategy at each DCP size with the best "
      "size marked '*' (--best: only that line); a faster research strategy is shown beside, marked (r), and "
      "ranked only with --include-research.");
  o.flags.strategy = "all";
  analysis::add_scenario_flags(*cmd, o.flags, true);
  cmd->add_option("--profile", o.profile, "hardware profile: a built-in name or a JSON file")
      ->capture_default_str();
  cmd->add_option("--out", c->out, "CSV file to write")->required();
  o.jobs = default_jobs();
  cmd->add_option("--jobs", o.jobs, "worker processes (default: the machine's cores)")->capture_default_str();
  cmd->add_option("--shard", c->shard, "i/n: simulate only the i-th of n contiguous slices of the grid");
  cmd->add_flag("--no-header", c->no_header, "do not write the CSV header line");
  cmd->add_option(
      "--at", c->at,
      "the slice --plot draws, e.g. batch=64,context=128k (default: the slice with most points among the "
      "values you varied; the plot's title names it); checked against the scan before it runs");
  cmd->add_option(
      "--json", c->json,
      "also write the answer as JSON (dcpsim-summary/1: per strategy its points, and the best pick)");
  cmd->add_option("--plot", c->plot,
                  "also draw the CSV into this PNG: latency vs DCP size, geometry heatmap, Pareto front "
                  "(needs python3 with matplotlib)");
  analysis::add_whole_model_flags(*cmd, o.whole);
  cmd->add_flag("--best", c->best,
                "print only the best DCP size and strategy per geometry, batch and context");
  cmd->add_flag("--include-research", c->include_research,
                "let the best picks choose research strategies (row-stream) too; they are always shown");
  cmd->add_flag("--list-skipped", c->list_skipped, "list every skipped combination with its reason (stderr)");
  cmd->add_option("--nccl-algo", c->nccl_algo, "force NCCL's algorithm: ring, tree, nvls, p2p");
  cmd->add_option("--nccl-proto", c->nccl_proto, "force NCCL's protocol: ll, ll128, simple");
  cmd->add_option("--peers-in-flight", o.peers_in_flight,
                  "transfers a rank keeps in flight to different peers (all-to-all, direct, row-stream)")
      ->capture_default_str();
  cmd->add_option("--flows", o.flows,
                  "all-pairs sends as SimGrid flows: pair (one per peer), bundle (one per window of peers; "
                  "equal when ranks start together, far faster), auto (bundle above 16 ranks)")
      ->capture_default_str();
  cmd->add_option("--chunk", o.chunk_size, "scenarios per worker process (0: automatic)")
      ->capture_default_str();
  cmd->callback([c] { run_scan_command(*c); });
}

#else

void add_scan_command(CLI::App& app) {
  add_unavailable_command(app, "scan", "Simulate a grid of scenarios into CSV", "built without SimGrid");
}

#endif

}  // namespace dcpsim::cli
