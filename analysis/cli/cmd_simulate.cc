// dcpsim simulate: one DCP decode step on SimGrid. Prints a readable summary; optionally writes the trace
// (.pb and/or Chrome JSON) and a JSON summary. With every flag left at its default it simulates an MLA step
// (128 heads, 512 latent + 64 rope, batch 64, 32k context, DCP 8, AG+RS, CUDA graph) on h200-sxm.
#include <algorithm>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "commands.h"

#ifdef DCPSIM_WITH_SIMGRID
#include "dcpsim/analysis/scenario_flags.h"
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
  std::string profile = "h200-sxm";
  std::string out;
  std::string chrome;
  std::string json;
  std::string nccl_algo;
  std::string nccl_proto;
  int peers_in_flight = sim::SimOptions{}.peers_in_flight;
  std::string flows = "auto";
};

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

void run_simulate(const SimulateOptions& o) {
  traces::check_output_paths({{"--profile", o.profile}, {"--contexts-file", o.flags.contexts_file}},
                             {{"--out", o.out}, {"--chrome", o.chrome}, {"--json", o.json}});
  const models::Scenario scenario = analysis::to_scenario(o.flags);
  const models::HardwareProfile profile = models::load_profile(o.profile);
  const sim::Simulator simulator(profile, sim_options(o, scenario.dcp));

  std::optional<traces::ProtobufTraceWriter> pb;
  std::optional<traces::ChromeTraceWriter> chrome;
  std::vector<traces::TraceSink*> sinks;
  if (!o.out.empty()) sinks.push_back(&pb.emplace(o.out));
  if (!o.chrome.empty()) sinks.push_back(&chrome.emplace(o.chrome));
  traces::TeeTraceSink tee(sinks);
  if (!sinks.empty()) tee.on_header(sim::sim_trace_header(profile));

  const sim::StepResult result = simulator.run(scenario, sinks.empty() ? nullptr : &tee);
  if (!sinks.empty()) tee.finish();
  if (!o.json.empty()) traces::write_file_atomically(o.json, sim::summary_json(result).dump(2) + "\n");

  std::cout << sim::format_summary(result);
  if (!o.out.empty()) std::cout << "  trace: " << o.out << "\n";
  if (!o.chrome.empty()) std::cout << "  chrome trace: " << o.chrome << "\n";
  if (!o.json.empty()) std::cout << "  summary: " << o.json << "\n";
}

}  // namespace

void add_simulate_command(CLI::App& app) {
  auto opts = std::make_shared<SimulateOptions>();
  CLI::App* cmd = app.add_subcommand("simulate", "Simulate one DCP decode step on SimGrid");
  analysis::add_scenario_flags(*cmd, opts->flags, false);
  cmd->add_option("--profile", opts->profile, "hardware profile: a built-in name or a JSON file")
      ->capture_default_str();
  cmd->add_option("--out", opts->out, "write the trace (dcpsim.trace.v1 .pb)");
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
  cmd->callback([opts] { run_simulate(*opts); });
}

#else

void add_simulate_command(CLI::App& app) {
  add_unavailable_command(app, "simulate", "Simulate one DCP decode step on SimGrid",
                          "built without SimGrid");
}

#endif

}  // namespace dcpsim::cli
