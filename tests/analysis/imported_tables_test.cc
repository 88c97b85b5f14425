// Tables from a user's own engine: PyTorch profiler (Kineto) traces of one rank's share of a DCP step,
// written as a torch/Triton user would (attention through SDPA's flash backend, vLLM's Triton correction), at
// one DCP size, one context and three batch sizes. Import names each kernel's implementation; `tables` keys
// the tables by it and fits each implementation's model (floor + bytes / bandwidth), which prices other batch
// sizes, DCP sizes, contexts and head counts; `validate` names what priced each kernel and warns, once per
// kernel, where the profile has no table for the implementation the trace ran. The traces follow a known law
// here, so what the model recovers and predicts can be checked exactly.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "dcpsim/analysis/measured.h"
#include "dcpsim/analysis/table_builder.h"
#include "dcpsim/analysis/validate.h"
#include "dcpsim/error.h"
#include "dcpsim/models/cost_kernels.h"
#include "dcpsim/models/scenario_proto.h"
#include "dcpsim/models/sharding.h"
#include "dcpsim/traces/import_kineto.h"
#include "dcpsim/traces/protobuf_writer.h"

namespace dcpsim::analysis {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;

// The implementations' laws: what the synthetic traces' kernels take.
constexpr double kAttentionFloor = 7e-6, kAttentionBandwidth = 2.4e12;
constexpr double kCorrectionFloor = 2.6e-6, kCorrectionBandwidth = 1.3e12;

// Llama-3.1-70B-like heads on a rank (64 heads, 8 KV heads, TP 8): H = 8 N, H_kv = N.
models::Scenario step(int n, int rows, std::int64_t context) {
  models::Scenario s;
  s.dcp = n;
  s.heads = 8 * n;
  s.kv_heads = n;
  s.head_dim = s.qk_dim = 128;
  s.contexts = models::uniform_contexts(rows, context);
  s.strategy = models::Strategy::kAgAr;
  s.launch = models::LaunchMode::kEager;
  return s;
}

double attention_law(const models::Scenario& s, int rank) {
  std::vector<std::int64_t> local;
  for (std::int64_t c : s.contexts) local.push_back(models::local_length(c, rank, s.dcp, s.interleave));
  return kAttentionFloor +
         models::attention_io_bytes(models::attention_shape(s), local) / kAttentionBandwidth;
}

double correction_law(const models::Scenario& s) {
  return kCorrectionFloor + models::correction_bytes(models::merge_shape(s)) / kCorrectionBandwidth;
}

json torch_kernel(const std::string& name, double ts_us, double dur_us) {
  return {{"ph", "X"},     {"cat", "kernel"}, {"name", name}, {"ts", ts_us},
          {"dur", dur_us}, {"pid", 0},        {"tid", 7},     {"args", {{"device", 0}, {"stream", 7}}}};
}

class ImportedTables : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("dcpsim-imported-tables-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Rank 0's share of `reps` steps of `s` under torch.profiler, imported into a trace; returns its path.
  fs::path trace(const models::Scenario& s, int reps = 8) {
    json events = json::array();
    const double att = attention_law(s, 0) * 1e6, cor = correction_law(s) * 1e6;
    for (int r = 0; r < reps; ++r) {
      const double t = 400.0 * r, wobble = 1.0 + 0.004 * ((r % 3) - 1);  // +-0.4%, median exact
      events.push_back(torch_kernel(
          "void pytorch_flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, "
          "false, "
          "cutlass::bfloat16_t>, false, false, false, false, true, true, false, false>(Flash_fwd_params)",
          t, 0.8 * att * wobble));
      events.push_back(
          torch_kernel("void pytorch_flash::flash_fwd_splitkv_combine_kernel<Flash_fwd_kernel_traits<128, "
                       "64, 128, 4, false, false, cutlass::bfloat16_t>, 4, 3, true>(Flash_fwd_params)",
                       t + 0.85 * att * wobble, 0.15 * att * wobble));
      events.push_back(
          torch_kernel("at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>",
                       t + att * wobble + 5, 2));
      events.push_back(torch_kernel("_correct_attn_cp_out_kernel", t + att * wobble + 20, cor * wobble));
    }
    const json doc = {
        {"traceEvents", events},
        {"distributedInfo", {{"rank", 0}}},
        {"deviceProperties", {{{"id", 0}, {"name", "NVIDIA H100 80GB HBM3"}, {"numSms", 132}}}}};
    const std::string name = "n" + std::to_string(s.dcp) + "_b" + std::to_string(s.rows()) + "_ctx" +
                             std::to_string(s.contexts.front());
    std::ofstream(dir_ / (name + ".json")) << doc.dump();
    traces::ImportOptions o;
    o.scenario = models::to_proto(s);
    o.rank = 0;
    traces::ProtobufTraceWriter w(dir_ / (name + ".pb"));
    const traces::ImportStats stats = traces::import_kineto(dir_ / (name + ".json"), w, o);
    EXPECT_EQ(stats.implementations.at("attention"), "torch-flash");
    EXPECT_EQ(stats.implementations.at("correction"), "vllm-triton");
    return dir_ / (name + ".pb");
  }

  // The fit traces: DCP 4, 32k context, batches 8, 16 and 32.
  models::KernelTables fit_tables() {
    std::vector<MeasuredTrace> traces;
    for (int b : {8, 16, 32}) traces.push_back(load_measured(trace(step(4, b, 32768))));
    TableBuildOptions o;
    o.date = "2026-12-06";
    return build_kernel_tables(traces, o).tables;
  }

  models::HardwareProfile profile_with(const models::KernelTables& t) {
    models::HardwareProfile p = models::load_profile("h100-sxm");
    p.tables = {t};
    return p;
  }

  fs::path dir_;
};

TEST_F(ImportedTables, KernelsAreKeyedByTheirImplementationAndItsModelRecoversTheLaw) {
  const models::KernelTables t = fit_tables();
  EXPECT_EQ(t.provenance.device, "NVIDIA H100 80GB HBM3");
  std::map<std::string, const models::KernelTable*> by_key;
  for (const models::KernelTable& k : t.tables) by_key[k.key] = &k;
  ASSERT_TRUE(by_key.count("gqa qk128 d128 g8 bf16 torch-flash"));
  ASSERT_TRUE(by_key.count("d128 bf16 vllm-triton"));
  const models::KernelTable& att = *by_key["gqa qk128 d128 g8 bf16 torch-flash"];
  const models::KernelTable& cor = *by_key["d128 bf16 vllm-triton"];
  EXPECT_EQ(att.points.size(), 3u);
  ASSERT_TRUE(att.model && cor.model);
  EXPECT_NEAR(att.model->floor_ns, kAttentionFloor * 1e9, 50.0);
  EXPECT_NEAR(att.model->bandwidth / kAttentionBandwidth, 1.0, 0.005);
  EXPECT_NEAR(cor.model->floor_ns, kCorrectionFloor * 1e9, 20.0);
  EXPECT_NEAR(cor.model->bandwidth / kCorrectionBandwidth, 1.0, 0.005);
  // The model survives the file.
  const models::KernelTables again = models::parse_kernel_tables(models::kernel_tables_json(t), "t.json");
  EXPECT_EQ(again, t);
  EXPECT_THAT(models::describe_kernel_tables(t), HasSubstr("model: "));
}

TEST_F(ImportedTables, TheModelPredictsOtherBatchesDcpSizesContextsAndHeadCounts) {
  const models::HardwareProfile p = profile_with(fit_tables());
  // Batches between and beyond the three measured, DCP 2 and 8 (other head counts: H = 8 N), contexts 2-4x
  // longer per rank.
  for (const models::Scenario& s :
       {step(4, 12, 32768), step(4, 96, 32768), step(2, 16, 32768), step(8, 16, 32768), step(4, 16, 65536),
        step(4, 16, 131072), step(2, 24, 65536), step(8, 64, 262144)}) {
    std::vector<std::int64_t> local;
    for (std::int64_t c : s.contexts) local.push_back(models::local_length(c, 0, s.dcp, 1));
    models::AttentionShape a = models::attention_shape(s);
    a.impl = "torch-flash";
    const models::AttentionTiming t = models::decode_attention_time(p, a, local);
    EXPECT_EQ(t.source, models::FigureSource::kTable) << s.label();
    EXPECT_TRUE(t.table_one_launch);  // the phase as the engine ran it: no combine kernel added
    EXPECT_NEAR((t.kernel_end_s + t.combine_s) / attention_law(s, 0), 1.0, 0.01) << s.label();
    models::MergeShape m = models::merge_shape(s);
    m.impl = "vllm-triton";
    const models::KernelPrice c = models::merge_kernel_price(p, models::MemoryKernel::kCorrection, m);
    EXPECT_NEAR(c.seconds / correction_law(s), 1.0, 0.01) << s.label();
  }
}

#if DCPSIM_WITH_SIMGRID
TEST_F(ImportedTables, ValidateNamesTheImplementationsAndWarnsOncePerKernelWithoutItsTable) {
  const models::KernelTables tables = fit_tables();
  std::vector<MeasuredTrace> held;
  for (const models::Scenario& s : {step(2, 24, 65536), step(8, 12, 131072)})
    held.push_back(load_measured(trace(s)));
  const std::vector<MeasuredSection> sections = all_sections(held);
  const ValidationReport own = validate(profile_with(tables), std::nullopt, sections);
  EXPECT_LT(own.median_error, 0.01);
  ASSERT_EQ(own.implementations.size(), 2u);
  EXPECT_EQ(describe(own.implementations[0]),
            "attention: ran torch-flash (2 sections), priced from its table and model");
  EXPECT_EQ(describe(own.implementations[1]),
            "correction: ran vllm-triton (2 sections), priced from its table and model");
  for (const std::string& w : own.warnings) EXPECT_THAT(w, ::testing::Not(HasSubstr("no attention table")));
  // The built-in profile prices dcpsim's kernels: one warning per kernel, naming what the trace ran.
  const ValidationReport builtin = validate(models::load_profile("h100-sxm"), std::nullopt, sections);
  int attention = 0, correction = 0;
  for (const std::string& w : builtin.warnings) {
    attention +=
        w.find("attention: the trace ran torch-flash, which the profile has no attention table") == 0;
    correction += w.find("correction: the trace ran vllm-triton") == 0;
  }
  EXPECT_EQ(attention, 1);
  EXPECT_EQ(correction, 1);
  EXPECT_GT(builtin.median_error, 0.05);  // another kernel's price
}

// The real thing (traces/measured/h100-torch-dcp: the torch/Triton step on one H100 over the grid committed
// in docs/validation/torch_dcp/grid.json before any trace was taken): tables and models from the three fit
// traces predict the 16 held-out points within the 5% median the issue asks for (3.96% when written).
TEST_F(ImportedTables, TorchDcpStepOnOneH100PredictsItsHeldOutPoints) {
  const fs::path data = fs::path(DCPSIM_SOURCE_DIR) / "traces/measured/h100-torch-dcp";
  std::ifstream in(fs::path(DCPSIM_SOURCE_DIR) / "docs/validation/torch_dcp/grid.json");
  const json grid = json::parse(in);
  const auto import = [&](const json& point) {
    models::Scenario s =
        step(point["dcp"].get<int>(), point["batch"].get<int>(), point["context"].get<std::int64_t>());
    s.heads = s.kv_heads = point["heads"].get<int>();  // MHA
    s.strategy = models::Strategy::kAgRs;
    traces::ImportOptions o;
    o.scenario = models::to_proto(s);
    const fs::path out = dir_ / (point["id"].get<std::string>() + ".pb");
    traces::ProtobufTraceWriter w(out);
    traces::import_kineto(data / (point["id"].get<std::string>() + ".json.gz"), w, o);
    return load_measured(out);
  };
  std::vector<MeasuredTrace> fit, held;
  for (const json& p : grid["fit"]) fit.push_back(import(p));
  for (const json& p : grid["heldout"]) held.push_back(import(p));
  const models::KernelTables tables = build_kernel_tables(fit, {}).tables;
  const ValidationReport r = validate(profile_with(tables), std::nullopt, all_sections(held));
  EXPECT_EQ(r.sections.size(), 16u);
  EXPECT_LT(r.median_error, 0.05);
  for (const ImplementationUse& u : r.implementations) EXPECT_TRUE(u.own) << describe(u);
}
#endif

TEST(ImportPhaseRules, ImplementationsOfTheBuiltInRulesAndAUserFile) {
  const auto find = [](const std::string& name) {
    for (const traces::KernelPhaseRule& r : traces::builtin_kernel_phases())
      if (name.find(r.contains) != std::string::npos) return r.implementation;
    return std::string("?");
  };
  EXPECT_EQ(find("void pytorch_flash::flash_fwd_splitkv_kernel<...>"), "torch-flash");
  EXPECT_EQ(find("flash_fwd_splitkv_mla_kernel<...>"), "flashmla");
  EXPECT_EQ(find("void flash::flash_fwd_splitkv_kernel<...>"), "fa2");
  EXPECT_EQ(find("cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<...>>>"), "fa3");
  EXPECT_EQ(find("flashinfer::mla::hopper::BatchMLAPageAttentionHopperKernel<...>"), "flashinfer");
  EXPECT_EQ(find("_correct_attn_cp_out_kernel"), "vllm-triton");
  const fs::path dir = fs::temp_directory_path() / ("dcpsim-rules-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "r.json") << R"({"my_attn": {"phase": "attention", "implementation": "mine"},
                                     "my_fix": "correction"})";
  const auto rules = traces::read_phase_rules(dir / "r.json");
  ASSERT_EQ(rules.size(), 2u);
  EXPECT_EQ(rules[0].implementation, "mine");
  EXPECT_EQ(rules[1].implementation, "");
  std::ofstream(dir / "r.json") << R"({"my_attn": {"phase": "attention", "impl": "mine"}})";
  EXPECT_THROW(traces::read_phase_rules(dir / "r.json"), dcpsim::InputError);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dcpsim::analysis
