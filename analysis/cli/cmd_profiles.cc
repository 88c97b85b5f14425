// dcpsim profiles: the built-in hardware profiles with their key numbers, or one profile in full (--show) in
// exactly the JSON format that --profile loads.
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "commands.h"
#include "dcpsim/analysis/whole_model.h"
#include "dcpsim/models/cost_kernels.h"
#include "dcpsim/models/model_preset.h"
#include "dcpsim/models/profile.h"

namespace dcpsim::cli {
namespace {

struct KvSetting {
  std::string model = "deepseek-v3";
  int tp = 8;
};

void print_table(const KvSetting& kv) {
  const models::ModelPreset model = models::load_model(kv.model);
  const models::RankGeometry g = models::rank_geometry(model, kv.tp, kv.tp);
  models::Scenario geometry;
  geometry.heads = g.heads;
  geometry.kv_heads = g.kv_heads;
  geometry.head_dim = g.head_dim;
  geometry.qk_dim = g.qk_dim;
  std::printf("%-12s %6s %5s %4s %13s %6s %13s %18s %18s %13s\n", "profile", "domain", "node", "SMs",
              "HBM TB/s", "HBM", "NVLink GB/s", "NCCL ring base us", "launch us", "KV tokens");
  std::printf("%-12s %6s %5s %4s %13s %6s %13s %18s %18s %13s\n", "", "GPUs", "GPUs", "", "spec/measured",
              "GB", "spec/measured", "LL/LL128/Simple", "eager/graph/pdl", "per GPU (*)");
  for (const std::string& name : models::builtin_profile_names()) {
    const models::HardwareProfile p = models::load_profile(name);
    const analysis::WholeModel whole(model, p, kv.tp, {});
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
    const std::string tokens = whole.kv_budget_bytes() > 0
                                   ? std::to_string(whole.kv_capacity_tokens(geometry))
                                   : std::string("no room");
    std::printf("%-12s %6.0f %5.0f %4.0f %13s %6.0f %13s %18s %18s %13s\n", name.c_str(),
                p.topology.gpus_per_nvlink_domain.si(), p.topology.gpus_per_node.si(), p.gpu.sm_count.si(),
                hbm, p.gpu.hbm_capacity.si() / 1e9, nvlink, nccl, launch, tokens.c_str());
  }
  std::printf(
      "\n(*) KV cache tokens one GPU holds for %s at TP %d (every one of its %d layers), over %.0f B per "
      "token per layer (--model, --tp); h200-sxm: %s\n",
      model.name.c_str(), kv.tp, model.layers(),
      models::kv_bytes_per_token(models::attention_shape(geometry)),
      analysis::WholeModel(model, models::load_profile("h200-sxm"), kv.tp, {}).kv_budget_basis().c_str());
  std::printf(
      "'dcpsim profiles --show NAME' prints a profile with every value's unit and source; "
      "'dcpsim profiles --models' the model presets.\n");
}

void print_models() {
  std::printf("%-16s %-5s %6s %6s %9s %7s %7s %9s %9s  %s\n", "model", "attn", "layers", "heads", "KV heads",
              "D", "D_qk", "params", "active", "config.json");
  for (const std::string& name : models::builtin_model_names()) {
    const models::ModelPreset m = models::load_model(name);
    const models::RankGeometry g = models::rank_geometry(m, 1, 1);
    const models::ParameterCounts p = models::parameter_counts(m);
    std::printf("%-16s %-5s %6d %6lld %9lld %7d %7d %8.1fB %8.1fB  %s\n", name.c_str(),
                m.mla() ? "MLA" : "GQA", m.layers(), static_cast<long long>(m.config.num_attention_heads),
                static_cast<long long>(m.mla() ? 1 : m.config.num_key_value_heads), g.head_dim, g.qk_dim,
                p.total() / 1e9, p.active_per_token() / 1e9, m.config_source.c_str());
  }
  std::printf(
      "\nParameters are counted from the config.json figures (each file in models/presets/ cites its model "
      "card);\nheads on a rank after the query all-gather = heads x DCP / TP.\n");
}

}  // namespace

void add_profiles_command(CLI::App& app) {
  CLI::App* sub =
      app.add_subcommand("profiles", "Built-in hardware profiles (and model presets) and their key numbers");
  auto show = std::make_shared<std::string>();
  auto kv = std::make_shared<KvSetting>();
  auto list_models = std::make_shared<bool>(false);
  sub->add_option("--show", *show,
                  "Print one profile (built-in name or JSON file) in the JSON format that --profile loads")
      ->type_name("NAME|FILE");
  sub->add_option("--model", kv->model, "model preset (or file) for the KV capacity column")
      ->capture_default_str();
  sub->add_option("--tp", kv->tp, "tensor parallel size for the KV capacity column (= DCP size)")
      ->check(CLI::Range(1, 1152))
      ->capture_default_str();
  sub->add_flag("--models", *list_models, "list the model presets with their figures and sources");
  sub->callback([show, kv, list_models] {
    if (*list_models) {
      print_models();
      return;
    }
    if (show->empty()) {
      print_table(*kv);
      return;
    }
    std::cout << models::to_json(models::load_profile(*show));
  });
}

}  // namespace dcpsim::cli
