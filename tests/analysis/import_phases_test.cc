// A user's own decode profile (a Kineto timeline shaped like vLLM's DCP decode: FlashInfer MLA attention with
// its split-KV merge, NCCL all-gathers of queries and LSEs, vLLM's correction kernel, a reduce-scatter, and
// the model's other kernels and tensor-parallel all-reduce) imports with phase summaries per step phase, so
// that calibrate and validate read it (traces/import_phases.h).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "dcpsim/analysis/measured.h"
#include "dcpsim/error.h"
#include "dcpsim/traces/import_kineto.h"
#include "dcpsim/traces/protobuf_writer.h"
#include "dcpsim/traces/trace_collector.h"

namespace dcpsim::analysis {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// dcp 2, 16 heads, 512 latent + 64 rope, 4 rows, ag-rs: the collectives' buffers as the scenario implies.
traces::v1::Scenario scenario() {
  traces::v1::Scenario s;
  s.set_dcp(2);
  s.set_heads(16);
  s.set_kv_heads(1);
  s.set_head_dim(512);
  s.set_qk_dim(576);
  s.set_interleave(1);
  s.set_kv_dtype(traces::v1::DTYPE_BF16);
  s.set_out_dtype(traces::v1::DTYPE_BF16);
  s.set_lse_base(traces::v1::LSE_BASE_E);
  for (int b = 0; b < 4; ++b) s.add_contexts(4096);
  s.set_strategy(traces::v1::STRATEGY_AG_RS);
  s.set_launch_mode(traces::v1::LAUNCH_MODE_GRAPH);
  s.set_name("vllm decode");
  return s;
}

json kernel(const std::string& name, double ts, double dur, int stream = 7) {
  return {{"ph", "X"},  {"cat", "kernel"}, {"name", name},  {"ts", ts},
          {"dur", dur}, {"pid", 0},        {"tid", stream}, {"args", {{"device", 0}, {"stream", stream}}}};
}
json nccl(const std::string& op, const std::string& name, double ts, double dur, long nelems,
          const std::string& dtype) {
  json k = kernel(name, ts, dur, 20);
  k["args"]["Collective name"] = op;
  k["args"]["In msg nelems"] = nelems;
  k["args"]["Out msg nelems"] = nelems;
  k["args"]["dtype"] = dtype;
  return k;
}

// `layers` decode layers, each 100 us apart.
fs::path profile(const fs::path& dir, int layers) {
  json events = json::array();
  for (int l = 0; l < layers; ++l) {
    const double t = 100.0 * l;
    // query all-gather: 2 ranks x 4 rows x 8 heads x 576 x bf16 = 73728 B
    events.push_back(nccl("allgather", "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", t,
                          5, 36864, "BFloat16"));
    events.push_back(
        kernel("void flashinfer::mla::BatchMLAPagedAttentionKernel<KTraits>(Params)", t + 6, 20));
    events.push_back(kernel("void flashinfer::MergeStatesKernel<8u, 16u, 8u, 4u, bf16>(...)", t + 26, 2 + l));
    // LSE all-gather: 2 x 4 rows x 16 heads x fp32 = 512 B
    events.push_back(nccl("allgather", "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
                          t + 30, 4, 128, "Float"));
    events.push_back(kernel("_correct_attn_cp_out_kernel", t + 35, 3));
    // reduce-scatter input: 4 rows x 16 heads x 512 x bf16 = 65536 B
    events.push_back(nccl("reduce_scatter", "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(...)", t + 39, 6,
                          32768, "BFloat16"));
    events.push_back(kernel("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", t + 46, 30));
    // tensor parallelism's all-reduce of the MLP output: no DCP phase of ag-rs
    events.push_back(
        nccl("allreduce", "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(...)", t + 77, 8, 28672, "BFloat16"));
  }
  json doc = {{"traceEvents", events}, {"distributedInfo", {{"rank", 1}, {"world_size", 2}}}};
  const fs::path p = dir / "vllm.json";
  std::ofstream(p) << doc.dump();
  return p;
}

class ImportPhases : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("dcpsim-import-phases-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(ImportPhases, KernelsBecomeStepPhasesWithSummaries) {
  traces::ImportOptions options;
  options.scenario = scenario();
  traces::ProtobufTraceWriter writer(dir_ / "vllm.pb");
  const traces::ImportStats stats = traces::import_kineto(profile(dir_, 5), writer, options);
  const std::map<std::string, std::int64_t> found(stats.phases.begin(), stats.phases.end());
  const std::map<std::string, std::int64_t> expected = {{"query_all_gather", 5},
                                                        {"attention", 5},
                                                        {"lse_all_gather", 5},
                                                        {"correction", 5},
                                                        {"reduce_scatter", 5}};
  EXPECT_EQ(found, expected);
  std::int64_t other = 0;
  for (const auto& [name, n] : stats.unphased) other += n;
  EXPECT_EQ(other, 10);  // the GEMMs and the tensor-parallel all-reduces

  const traces::Trace t = traces::read_trace(dir_ / "vllm.pb");
  ASSERT_EQ(t.sections.size(), 1u);
  std::map<std::string, const traces::v1::PhaseSummary*> by_phase;
  for (const auto& p : t.sections[0].phase_summaries) {
    EXPECT_EQ(p.rank(), 1);  // distributedInfo.rank
    by_phase[p.phase()] = &p;
  }
  // Attention and its split-KV merge are one occurrence: 20 us + (2 + l) us.
  ASSERT_TRUE(by_phase.count("attention"));
  EXPECT_EQ(by_phase["attention"]->repetitions(), 5);
  EXPECT_DOUBLE_EQ(by_phase["attention"]->median_ns(), 24000.0);
  EXPECT_DOUBLE_EQ(by_phase["attention"]->min_ns(), 22000.0);
  EXPECT_DOUBLE_EQ(by_phase["attention"]->max_ns(), 26000.0);
  EXPECT_DOUBLE_EQ(by_phase["lse_all_gather"]->median_ns(), 4000.0);
  int labelled = 0;
  for (const auto& e : t.sections[0].events) labelled += e.args().count("phase") ? 1 : 0;
  EXPECT_EQ(labelled, 30);

  // calibrate and validate read it: every phase maps to the simulator's.
  const MeasuredTrace m = load_measured(dir_ / "vllm.pb");
  ASSERT_EQ(m.sections.size(), 1u);
  std::map<std::string, double> phases;
  for (const auto& p : m.sections[0].phases) phases[p.phase] = p.median_s;
  EXPECT_EQ(phases.size(), 5u);
  EXPECT_DOUBLE_EQ(phases["collective"], 6e-6);
  EXPECT_DOUBLE_EQ(phases["query_gather"], 5e-6);
}

TEST_F(ImportPhases, UserRulesComeFirst) {
  std::ofstream(dir_ / "map.json")
      << R"({"sm90_xmma_gemm": "none", "MergeStates": "none", "AllReduce": "none"})";
  traces::ImportOptions options;
  options.scenario = scenario();
  options.phase_rules = traces::read_phase_rules(dir_ / "map.json");
  ASSERT_EQ(options.phase_rules.size(), 3u);
  EXPECT_EQ(options.phase_rules[0].contains, "sm90_xmma_gemm");  // the file's order
  traces::ProtobufTraceWriter writer(dir_ / "vllm.pb");
  traces::import_kineto(profile(dir_, 3), writer, options);
  int attention = 0;
  const traces::Trace t = traces::read_trace(dir_ / "vllm.pb");
  for (const auto& p : t.sections[0].phase_summaries) {
    if (p.phase() != "attention") continue;
    ++attention;
    EXPECT_DOUBLE_EQ(p.median_ns(), 20000.0);  // without the merge kernel now
  }
  EXPECT_EQ(attention, 1);
}

TEST_F(ImportPhases, BadRulesAreOneLineErrors) {
  auto error = [&](const std::string& text) {
    std::ofstream(dir_ / "bad.json") << text;
    try {
      traces::read_phase_rules(dir_ / "bad.json");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error(R"({"gemm": "mlp"})").find("'mlp' is no phase"), std::string::npos);
  EXPECT_NE(error(R"({"gemm": "step"})").find("'step' is no phase"), std::string::npos);
  EXPECT_NE(error(R"({"": "attention"})").find("empty kernel name"), std::string::npos);
  EXPECT_NE(error(R"(["attention"])").find("a phase map is a JSON object"), std::string::npos);
  EXPECT_NE(error(R"({"gemm": 3})").find("\"gemm\": the phase is number"), std::string::npos);
}

}  // namespace
}  // namespace dcpsim::analysis
