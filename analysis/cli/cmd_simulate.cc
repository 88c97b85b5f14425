// dcpsim simulate: one DCP decode step on SimGrid, for one strategy or several side by side. Prints a
// readable summary — one attention layer, its collectives with nccl-tests' algbw/busbw, the whole decode step
// and the memory of one GPU; optionally writes the trace (.pb and/or Chrome JSON) and a JSON summary. With
// every flag left at its default it simulates DeepSeek-V3's MLA step (128 heads, 512 latent + 64 rope, batch
// 64, 32k context, DCP 8 = TP 8, AG+RS, CUDA graph) on h200-sxm.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "commands.h"

#ifdef DCPSIM_WITH_SIMGRID
#include "dcpsim/analysis/baseline.h"
#include "dcpsim/analysis/io_inputs.h"
#include "dcpsim/analysis/layouts.h"
#include "dcpsim/analysis/scenario_flags.h"
#include "dcpsim/analysis/step_figures.h"
#include "dcpsim/analysis/summary_json.h"
#include "dcpsim/analysis/whole_model.h"
#include "dcpsim/error.h"
#include "dcpsim/models/profile.h"
#include "dcpsim/sim/report.h"
#include "dcpsim/sim/simulator.h"
#include "dcpsim/traces/chrome_writer.h"
#include "dcpsim/traces/output_file.h"
#include "dcpsim/traces/protobuf_writer.h"
#endif

namespace dcpsim::cli {

#ifdef DCPSIM_WITH_SIMGRID
namespace {

struct SimulateOptions {
  analysis::ScenarioFlags flags;
  analysis::WholeModelFlags whole;
  std::string profile = "h200-sxm";
  std::string out;
  std::string chrome;
  std::string json;
  std::string nccl_algo;
  std::string nccl_proto;
  int peers_in_flight = sim::SimOptions{}.peers_in_flight;
  std::string flows = "auto";
  bool include_research = false;
};

// What every output of one run says about its deployment: the layout, the rule that chose TP, the strategies
// run and those skipped (with why), and whether research strategies may be picked.
struct RunContext {
  analysis::Layout layout;
  analysis::LayoutChoice tp;
  std::vector<analysis::SkippedStrategy> skipped;
  bool include_research = false;
};

// What the figures of a strategy entry are (summary_json.h: every entry says its units).
nlohmann::json units() {
  return {{"*_us", "microseconds"},
          {"step_latency_us, attention_end_us, merge_latency_us, comm_us",
           "one attention layer: query all-gather, attention, merge (as simulated)"},
          {"merge_share, comm_share", "fractions of the attention layer's step"},
          {"decode_step.decode_step_us", "one decode step: layers x the attention layer + non_attention_us"},
          {"memory.*_bytes", "bytes (1e9 = 1 GB)"},
          {"memory.kv_capacity_tokens_*", "tokens of KV over every layer"}};
}

sim::SimOptions sim_options(const SimulateOptions& o, int dcp) {
  sim::SimOptions s;
  if (!o.nccl_algo.empty()) s.collective.algorithm = models::parse_algorithm(o.nccl_algo);
  if (!o.nccl_proto.empty()) s.collective.protocol = models::parse_protocol(o.nccl_proto);
  s.max_gpus = std::max(s.max_gpus, dcp);
  if (o.peers_in_flight < 1) {
    throw InputError("--peers-in-flight " + std::to_string(o.peers_in_flight) + " is not an integer >= 1");
  }
  s.peers_in_flight = o.peers_in_flight;
  s.flows = sim::parse_flow_grain(o.flows);
  return s;
}

std::string collectives_text(const sim::StepResult& r, const std::string& strategy_column) {
  std::string out;
  char line[256];
  for (const analysis::CollectiveBandwidth& b : analysis::collective_bandwidths(r)) {
    std::snprintf(line, sizeof line, "  %-14s %-14s %-15s %-12s %12.0f %10.3f %11.1f %11.1f\n",
                  strategy_column.c_str(), b.phase.c_str(), b.collective.c_str(), b.plan.c_str(),
                  b.size_bytes, b.time_s * 1e6, b.algbw_Bps / 1e9, b.busbw_Bps / 1e9);
    out += line;
  }
  return out;
}

const char* kCollectivesHeader = "  %-14s %-14s %-15s %-12s %12s %10s %11s %11s\n";

std::string whole_step_text(const analysis::WholeModel& m, const sim::StepResult& r) {
  char line[1536];
  const int rows = m.requests(r.scenario);
  const double step = m.decode_step_s(r.step_latency_s, rows);
  std::snprintf(line, sizeof line,
                "  decode step (%d layers + non-attention): %.3f ms = %d x %.3f us + %.1f us\n"
                "    TPOT %.3f ms, %.0f tokens/s (%.1f per request); non-attention time: %s\n",
                m.layers(), step * 1e3, m.layers(), r.step_latency_s * 1e6, m.non_attention_s(rows) * 1e6,
                m.tpot_s(step) * 1e3, m.tokens_per_s(step, rows), 1.0 / m.tpot_s(step),
                m.non_attention_basis().c_str());
  std::string out = line;
  if (m.pp() > 1) {
    std::snprintf(
        line, sizeof line,
        "    pipeline: PP %d, %d micro-batches of %d requests in flight (%d in all); the step includes "
        "%.1f us of stage sends\n",
        m.pp(), m.pp(), rows, rows * m.pp(), m.stage_sends_s(rows) * 1e6);
    out += line;
  }
  return out;
}

std::string memory_text(const analysis::WholeModel& m, const models::Scenario& s,
                        std::int64_t busiest_tokens) {
  const std::int64_t capacity = m.kv_capacity_tokens(s);
  char line[512];
  std::snprintf(
      line, sizeof line,
      "  memory per GPU: HBM %s, weights %s, KV budget %s (%s)\n"
      "    KV capacity %lld tokens per GPU (%d layers), %lld in the DCP group; this batch's busiest rank "
      "holds %lld: %s\n",
      analysis::gigabytes(m.hbm_bytes()).c_str(), analysis::gigabytes(m.weight_bytes_per_gpu()).c_str(),
      analysis::gigabytes(std::max(0.0, m.kv_budget_bytes())).c_str(), m.kv_budget_basis().c_str(),
      static_cast<long long>(capacity), m.stage_layers(), static_cast<long long>(capacity * s.dcp),
      static_cast<long long>(busiest_tokens), busiest_tokens <= capacity ? "fits" : "does NOT fit");
  return line;
}

// The KV tokens the busiest rank stores (its attention reads k + 1 times that with --spec-attention rows).
std::int64_t busiest_tokens(const sim::StepResult& r, const analysis::WholeModel& m) {
  std::int64_t tokens = 0;
  for (const sim::RankTimeline& t : r.ranks) tokens = std::max(tokens, t.kv_tokens);
  return m.stored_of_read(tokens);
}

nlohmann::json json_of(const sim::StepResult& r, const analysis::WholeModel& m, const std::string& model) {
  nlohmann::json j = sim::summary_json(r);
  const double comm = analysis::communication_s(r);
  j["comm_us"] = comm * 1e6;
  j["comm_share"] = comm / r.step_latency_s;
  j["merge_share"] = r.merge_latency_s / r.step_latency_s;
  for (const analysis::CollectiveBandwidth& b : analysis::collective_bandwidths(r)) {
    j["collective_bandwidths"].push_back({{"phase", b.phase},
                                          {"collective", b.collective},
                                          {"plan", b.plan},
                                          {"size_bytes", b.size_bytes},
                                          {"time_us", b.time_s * 1e6},
                                          {"algbw_GBps", b.algbw_Bps / 1e9},
                                          {"busbw_GBps", b.busbw_Bps / 1e9}});
  }
  const int rows = m.requests(r.scenario);
  j["decode_step"] = {{"model", model},
                      {"tp", m.tp()},
                      {"pp", m.pp()},
                      {"stage_sends_us", m.stage_sends_s(rows) * 1e6},
                      {"layers", m.layers()},
                      {"non_attention_us", m.non_attention_s(rows) * 1e6},
                      {"non_attention_basis", m.non_attention_basis()},
                      {"decode_step_us", m.decode_step_s(r.step_latency_s, rows) * 1e6},
                      {"tpot_us", m.tpot_s(m.decode_step_s(r.step_latency_s, rows)) * 1e6},
                      {"tokens_per_s", m.tokens_per_s(m.decode_step_s(r.step_latency_s, rows), rows)},
                      {"spec_tokens", m.spec_tokens()},
                      {"spec_attention", m.spec_rows() ? "rows" : "heads"},
                      {"requests", rows},
                      {"accept_length", m.accept_length()}};
  const std::int64_t capacity = m.kv_capacity_tokens(r.scenario);
  j["memory"] = {{"hbm_bytes", m.hbm_bytes()},
                 {"weight_bytes_per_gpu", m.weight_bytes_per_gpu()},
                 {"kv_budget_bytes", m.kv_budget_bytes()},
                 {"kv_budget_basis", m.kv_budget_basis()},
                 {"kv_capacity_tokens_per_gpu", capacity},
                 {"kv_capacity_tokens_group", capacity * r.scenario.dcp},
                 {"kv_fits", busiest_tokens(r, m) <= capacity}};
  return j;
}

// The deployment lines every output starts with: the layout and its rule, whether its weights fit.
std::string layout_text(const RunContext& c) {
  std::string out = "  layout: DCP " + std::to_string(c.layout.dcp) + " in " + c.tp.rule + "\n";
  if (!c.layout.weights_fit) {
    out += "  this layout DOES NOT FIT (" + c.layout.fit_text() +
           "): its figures are shown for reference and never ranked\n";
  }
  return out;
}

std::string strategy_line(models::Strategy s) {
  const analysis::StrategyInfo& info = analysis::strategy_info(s);
  return "  " + std::string(models::to_string(s)) + " (" + std::string(analysis::to_string(info.tier)) +
         "): " + analysis::engine_text(s) + "\n";
}

void print_one(const sim::StepResult& r, const analysis::WholeModel& m, const std::string& model_line,
               const RunContext& c) {
  std::string text = sim::format_summary(r);
  text.insert(text.find('\n') + 1, model_line + layout_text(c) + strategy_line(r.scenario.strategy));
  std::cout << text;
  const double comm = analysis::communication_s(r);
  char line[256];
  std::snprintf(
      line, sizeof line,
      "  per layer: merge share %.1f %% (after attention), communication share %.1f %% (%.3f us, query "
      "all-gather included)\n",
      100 * r.merge_latency_s / r.step_latency_s, 100 * comm / r.step_latency_s, comm * 1e6);
  std::cout << "\n" << line;
  if (!r.collectives.empty()) {
    std::printf(
        "\n  collectives as nccl-tests reports them (size: nccl-tests' size; time: longest over ranks)\n");
    std::printf(kCollectivesHeader, "", "phase", "collective", "plan", "size B", "time us", "algbw GB/s",
                "busbw GB/s");
    std::cout << collectives_text(r, "");
  }
  std::cout << "\n" << whole_step_text(m, r) << memory_text(m, r.scenario, busiest_tokens(r, m));
}

// "fastest" among the strategies a pick may choose, and a research strategy that beat it.
void print_fastest(const std::vector<sim::StepResult>& results, const RunContext& c) {
  if (!c.layout.weights_fit) {
    std::printf("  fastest: none ranked (the layout does not fit)\n");
    return;
  }
  std::vector<models::Strategy> strategies;
  std::vector<double> times;
  for (const sim::StepResult& r : results) {
    strategies.push_back(r.scenario.strategy);
    times.push_back(r.step_latency_s);
  }
  const auto pick = analysis::pick_fastest(strategies, times, c.include_research);
  const auto any = analysis::pick_fastest(strategies, times, true);
  if (!pick) {
    std::printf("  fastest: none ranked (only research strategies ran; --include-research ranks them)\n");
    return;
  }
  const models::Strategy best = strategies[*pick];
  std::printf("  fastest%s: %s (%s)\n", c.include_research ? " (research included)" : " production strategy",
              std::string(models::to_string(best)).c_str(), analysis::engine_text(best).c_str());
  if (any && *any != *pick) {
    std::printf(
        "  %s is %.1f %% faster per layer but is a research strategy (%s); --include-research ranks it\n",
        std::string(models::to_string(strategies[*any])).c_str(), 100 * (1 - times[*any] / times[*pick]),
        analysis::engine_text(strategies[*any]).c_str());
  }
}

void print_side_by_side(const std::vector<sim::StepResult>& results, const analysis::WholeModel& m,
                        const std::string& model_line, const RunContext& c) {
  const sim::StepResult& first = results.front();
  models::Scenario s = first.scenario;
  std::string label = s.label();
  label = label.substr(0, label.rfind(' ', label.rfind(' ') - 1));  // without strategy and launch
  std::printf("dcpsim simulate: %s, %s %s, %zu strateg%s side by side\n", first.profile.c_str(),
              label.c_str(), std::string(models::to_string(s.launch)).c_str(), results.size(),
              results.size() == 1 ? "y" : "ies");
  std::cout << model_line << layout_text(c);
  std::printf("  %-14s %14s %13s %9s %8s %9s %7s %13s %15s  %s\n", "strategy", "layer step us",
              "attention us", "merge us", "merge %", "comm us", "comm %", "q-gather us", "decode step ms",
              "tier");
  for (const sim::StepResult& r : results) {
    const double comm = analysis::communication_s(r);
    std::printf("  %-14s %14.3f %13.3f %9.3f %7.1f%% %9.3f %6.1f%% %13.3f %15.3f  %s\n",
                std::string(models::to_string(r.scenario.strategy)).c_str(), r.step_latency_s * 1e6,
                r.attention_end_s * 1e6, r.merge_latency_s * 1e6, 100 * r.merge_latency_s / r.step_latency_s,
                comm * 1e6, 100 * comm / r.step_latency_s,
                analysis::phase_longest_s(r, sim::kPhaseQueryGather) * 1e6,
                m.decode_step_s(r.step_latency_s, m.requests(r.scenario)) * 1e3,
                std::string(analysis::to_string(analysis::strategy_info(r.scenario.strategy).tier)).c_str());
  }
  print_fastest(results, c);
  std::cout << analysis::skipped_text(c.skipped, "  ");
  std::printf("\n  what each strategy is in the serving engines\n");
  for (const sim::StepResult& r : results) std::cout << strategy_line(r.scenario.strategy);
  std::printf(
      "\n  collectives as nccl-tests reports them (size: nccl-tests' size; time: longest over ranks)\n");
  std::printf(kCollectivesHeader, "strategy", "phase", "collective", "plan", "size B", "time us",
              "algbw GB/s", "busbw GB/s");
  for (const sim::StepResult& r : results)
    std::cout << collectives_text(r, std::string(models::to_string(r.scenario.strategy)));
  std::cout << "\n" << whole_step_text(m, first) << memory_text(m, s, busiest_tokens(first, m));
}

// The summary JSON (summary_json.h): one shape for one strategy or several.
std::string summary_text(const std::vector<sim::StepResult>& results, const analysis::WholeModel& m,
                         const std::string& model_name, const std::string& profile, const RunContext& c) {
  nlohmann::json doc = analysis::summary_document("simulate", profile, model_name);
  doc["layout"] = analysis::layout_json(c.layout, c.tp.rule);
  doc["strategies"] = nlohmann::json::array();
  std::vector<models::Strategy> strategies;
  std::vector<double> times;
  for (const sim::StepResult& r : results) {
    nlohmann::json entry = analysis::strategy_entry(r.scenario.strategy, c.layout, units());
    entry.update(json_of(r, m, model_name));
    doc["strategies"].push_back(std::move(entry));
    strategies.push_back(r.scenario.strategy);
    times.push_back(r.step_latency_s);
  }
  doc["skipped"] = analysis::skipped_json(c.skipped);
  doc["fastest"] = c.layout.weights_fit ? analysis::fastest_json(strategies, times, c.include_research)
                                        : nlohmann::json(nullptr);
  return doc.dump(2) + "\n";
}

void run_simulate(const SimulateOptions& o) {
  IoGuard io;
  analysis::guard_profile(io, "--profile", o.profile);
  analysis::guard_scenario_flags(io, o.flags);
  analysis::guard_baseline_traces(io, o.whole);
  io.output("--out", o.out).output("--chrome", o.chrome).output("--json", o.json).check();
  const models::HardwareProfile profile = models::load_profile(o.profile);
  analysis::ScenarioFlags flags = o.flags;
  std::optional<models::ModelPreset> deployed = analysis::model_of(flags);
  if (deployed && !o.whole.weight_dtype.empty())
    deployed = deployed->with_weight_dtype(models::parse_weight_dtype(o.whole.weight_dtype));
  const analysis::LayoutQuery query =
      analysis::LayoutQuery::of(deployed, profile, o.whole.gpu_memory_utilization, o.whole.pp);
  RunContext c;
  c.tp = analysis::resolve_tp(flags, query);
  c.include_research = o.include_research;
  const std::vector<models::Strategy> requested = analysis::parse_strategy_list(flags.strategy, "strategy");
  flags.strategy = "ag-ar";  // the base scenario: ag-ar has no rule of its own on the heads
  const models::Scenario base = analysis::to_scenario(flags);
  analysis::StrategyChoice choice = analysis::runnable_strategies(base, requested);
  c.skipped = choice.skipped;
  const int dcp = base.dcp;
  const int tp = analysis::tp_of(flags, dcp);
  c.layout = analysis::evaluate_layout(query, tp, dcp);
  if (!c.layout.valid) throw InputError(c.layout.invalid_reason);
  analysis::WholeModel model(query.model, profile, tp, o.whole);
  const sim::Simulator simulator(profile, sim_options(o, dcp));
  analysis::anchor(model, o.whole, base.kv_dtype,
                   [&](const models::Scenario& s) { return simulator.run(s).step_latency_s; });

  std::optional<traces::ProtobufTraceWriter> pb;
  std::optional<traces::ChromeTraceWriter> chrome;
  std::vector<traces::TraceSink*> sinks;
  if (!o.out.empty()) sinks.push_back(&pb.emplace(o.out));
  if (!o.chrome.empty()) sinks.push_back(&chrome.emplace(o.chrome));
  traces::TeeTraceSink tee(sinks);
  if (!sinks.empty()) tee.on_header(sim::sim_trace_header(profile));

  std::vector<sim::StepResult> results;
  for (const models::Scenario& s : choice.run)
    results.push_back(simulator.run(model.attention_scenario(s), sinks.empty() ? nullptr : &tee));
  if (!sinks.empty()) tee.finish();
  const std::string model_name = analysis::model_label(o.flags);
  if (!o.json.empty())
    traces::write_file_atomically(o.json, summary_text(results, model, model_name, profile.name, c));

  char model_line[256];
  std::snprintf(model_line, sizeof model_line,
                "  model %s, TP %d: %d query heads per rank after the query all-gather%s\n",
                model_name.c_str(), model.tp(), base.heads,
                model.model() && o.flags.heads.empty() ? " (the model's heads x DCP / TP)" : "");
  if (results.size() == 1 && c.skipped.empty()) {
    print_one(results.front(), model, model_line, c);
  } else {
    print_side_by_side(results, model, model_line, c);
  }
  if (!o.out.empty()) std::cout << "  trace: " << o.out << "\n";
  if (!o.chrome.empty()) std::cout << "  chrome trace: " << o.chrome << "\n";
  if (!o.json.empty()) std::cout << "  summary: " << o.json << "\n";
}

}  // namespace

void add_simulate_command(CLI::App& app) {
  auto opts = std::make_shared<SimulateOptions>();
  CLI::App* cmd = app.add_subcommand("simulate", "Simulate one DCP decode step on SimGrid");
  cmd->footer(
      "Figures are per attention layer (query all-gather, attention, merge) unless they say 'decode step' "
      "(every "
      "layer plus the non-attention time: --model's roofline estimate or --non-attention-us). --strategy all "
      "(or "
      "a list) runs every strategy that can run the scenario side by side and lists the others with the rule "
      "that excluded them; 'fastest' picks among production strategies (what serving engines ship) unless "
      "--include-research. --tp defaults to the smallest multiple of --dcp whose weights fit a GPU.");
  analysis::add_scenario_flags(*cmd, opts->flags, false);
  analysis::add_whole_model_flags(*cmd, opts->whole);
  cmd->add_option("--profile", opts->profile, "hardware profile: a built-in name or a JSON file")
      ->capture_default_str();
  cmd->add_option("--out", opts->out,
                  "write the trace (dcpsim.trace.v1 .pb; a name ending in .gz is written gzip-compressed)");
  cmd->add_option("--chrome", opts->chrome, "write the trace as Chrome/Perfetto JSON");
  cmd->add_option("--json", opts->json, "write the summary as JSON");
  cmd->add_option("--nccl-algo", opts->nccl_algo, "force NCCL's algorithm: ring, tree, nvls, p2p");
  cmd->add_option("--nccl-proto", opts->nccl_proto, "force NCCL's protocol: ll, ll128, simple");
  cmd->add_option("--peers-in-flight", opts->peers_in_flight,
                  "transfers a rank keeps in flight to different peers (all-to-all, direct, row-stream)")
      ->capture_default_str();
  cmd->add_option("--flows", opts->flows,
                  "all-pairs sends as SimGrid flows: pair (one per peer), bundle (one per window of peers; "
                  "equal when ranks start together, far faster), auto (bundle above " +
                      std::to_string(sim::kBundleAboveRanks) + " ranks)")
      ->capture_default_str();
  cmd->add_flag("--include-research", opts->include_research,
                "let 'fastest' pick research strategies (row-stream) too; they are always shown");
  cmd->callback([opts] { run_simulate(*opts); });
}

#else

void add_simulate_command(CLI::App& app) {
  add_unavailable_command(app, "simulate", "Simulate one DCP decode step on SimGrid",
                          "built without SimGrid");
}

#endif

}  // namespace dcpsim::cli
