// dcpsim profiles: the built-in hardware profiles with their key numbers, or one profile in full (--show) in
// exactly the JSON format that --profile loads.
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "commands.h"
#include "dcpsim/models/profile.h"

namespace dcpsim::cli {
namespace {

void print_table() {
  std::printf("%-12s %6s %5s %4s %13s %13s %18s %18s\n", "profile", "domain", "node", "SMs", "HBM TB/s",
              "NVLink GB/s", "NCCL ring base us", "launch us");
  std::printf("%-12s %6s %5s %4s %13s %13s %18s %18s\n", "", "GPUs", "GPUs", "", "spec/measured",
              "spec/measured", "LL/LL128/Simple", "eager/graph/pdl");
  for (const std::string& name : models::builtin_profile_names()) {
    const models::HardwareProfile p = models::load_profile(name);
    const auto& ring = p.nccl.ring;
    char hbm[32], nvlink[32], nccl[32], launch[32];
    std::snprintf(hbm, sizeof hbm, "%.2f/%.2f", p.gpu.hbm_bandwidth_spec.si() / 1e12,
                  p.gpu.hbm_bandwidth_measured.si() / 1e12);
    std::snprintf(nvlink, sizeof nvlink, "%.0f/%.0f", p.nvlink.bandwidth.si() / 1e9,
                  p.nvlink.measured_bandwidth.si() / 1e9);
    std::snprintf(nccl, sizeof nccl, "%.1f/%.1f/%.1f", ring[0].base_latency.si() * 1e6,
                  ring[1].base_latency.si() * 1e6, ring[2].base_latency.si() * 1e6);
    std::snprintf(launch, sizeof launch, "%.2f/%.2f/%.2f", p.launch.cpu_issue_eager.si() * 1e6,
                  p.launch.cpu_issue_graph.si() * 1e6, p.launch.cpu_issue_pdl.si() * 1e6);
    std::printf("%-12s %6.0f %5.0f %4.0f %13s %13s %18s %18s\n", name.c_str(),
                p.topology.gpus_per_nvlink_domain.si(), p.topology.gpus_per_node.si(), p.gpu.sm_count.si(),
                hbm, nvlink, nccl, launch);
  }
  std::printf("\n'dcpsim profiles --show NAME' prints a profile with every value's unit and source.\n");
}

}  // namespace

void add_profiles_command(CLI::App& app) {
  CLI::App* sub = app.add_subcommand("profiles", "Built-in hardware profiles and their key numbers");
  auto show = std::make_shared<std::string>();
  sub->add_option("--show", *show,
                  "Print one profile (built-in name or JSON file) in the JSON format that --profile loads")
      ->type_name("NAME|FILE");
  sub->callback([show] {
    if (show->empty()) {
      print_table();
      return;
    }
    std::cout << models::to_json(models::load_profile(*show));
  });
}

}  // namespace dcpsim::cli
