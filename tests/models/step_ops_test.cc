// The decode step around attention, op by op: table lookups exact at measured points (GEMM, MoE, vLLM's
// custom all-reduce), the dtype ratio where the weight dtype has no table, the roofline without tables, the
// ops a layer kind runs, and the MTP draft's step.
#include <algorithm>
#include <filesystem>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "dcpsim/error.h"
#include "dcpsim/models/comm_table.h"
#include "dcpsim/models/model_preset.h"
#include "dcpsim/models/profile.h"
#include "dcpsim/models/step_ops.h"

namespace dcpsim::models {
namespace {

using ::testing::HasSubstr;

// The median of the first table of `kernel` and `key` at `at` exactly (a measured point).
double measured(const HardwareProfile& p, TableKernel kernel, const std::string& key,
                std::vector<double> at) {
  for (const KernelTables& f : p.tables)
    for (const KernelTable& t : f.tables)
      if (t.kernel == kernel && t.key == key)
        for (const TablePoint& pt : t.points)
          if (pt.at == at) return pt.median_ns * 1e-9;
  ADD_FAILURE() << "no point " << key;
  return 0;
}

const OpPrice& op(const OpStep& s, const std::string& name) {
  const auto it = std::find_if(s.ops.begin(), s.ops.end(), [&](const OpPrice& o) { return o.name == name; });
  EXPECT_NE(it, s.ops.end()) << name;
  return *it;
}

TEST(StepOps, GemmFromTheTableExactAtMeasuredPointsElseRatioElseRoofline) {
  const HardwareProfile h200 = load_profile("h200-sxm");
  const OpPrice t = gemm_price(h200, WeightDType::kFP8, 16, 7168, 2048);
  EXPECT_EQ(t.source, OpSource::kTable);
  EXPECT_DOUBLE_EQ(t.seconds, measured(h200, TableKernel::kGemm, "fp8", {16, 7168, 2048}));
  EXPECT_THAT(t.basis, HasSubstr("ai-dynamo/aiconfigurator"));
  // n beyond the grid (a TP 1 output head): that many pieces of the table's largest n.
  const OpPrice big = gemm_price(h200, WeightDType::kBF16, 1, 129280, 7168);
  EXPECT_EQ(big.source, OpSource::kTable);
  EXPECT_THAT(big.basis, HasSubstr("pieces"));
  // INT4 has no GEMM table on H200: the BF16 table times the roofline ratio (memory-bound: ~0.28x).
  const OpPrice int4 = gemm_price(h200, WeightDType::kINT4, 1, 7168, 2048);
  EXPECT_EQ(int4.source, OpSource::kRatio);
  const OpPrice bf16 = gemm_price(h200, WeightDType::kBF16, 1, 7168, 2048);
  EXPECT_NEAR(int4.seconds / bf16.seconds, 0.5625 / 2.0, 0.01);
  HardwareProfile bare = h200;
  bare.tables.clear();
  const OpPrice roof = gemm_price(bare, WeightDType::kBF16, 1, 7168, 2048);
  EXPECT_EQ(roof.source, OpSource::kAnalytic);
  EXPECT_NEAR(roof.seconds,
              bare.kernel.floor.si() +
                  (7168.0 * 2048 * 2 + 2.0 * (7168 + 2048)) /
                      (bare.gpu.hbm_bandwidth_measured.si() * bare.kernel.hbm_efficiency_max.si()),
              1e-12);
}

TEST(StepOps, DeepSeekLayersMoeAndAllReduceFromTables) {
  const HardwareProfile h200 = load_profile("h200-sxm");
  const ModelPreset ds = load_model("deepseek-v3");
  const OpStep one = non_attention_ops(ds, h200, {8, MoeSplit::kTp, 1, 1});
  const OpPrice& moe = op(one, "moe experts");
  EXPECT_EQ(moe.count, 58);
  EXPECT_EQ(moe.source, OpSource::kTable);
  EXPECT_DOUBLE_EQ(moe.seconds, measured(h200, TableKernel::kMoe, "fp8 h7168 i2048 e256 k8 tp8 ep1", {1}));
  const OpPrice& ar = op(one, "all-reduce (MoE out)");
  EXPECT_EQ(ar.source, OpSource::kTable);  // vLLM's custom all-reduce of 7168 bf16 values at 8 GPUs
  EXPECT_THAT(ar.basis, HasSubstr("vllm-custom"));
  EXPECT_EQ(op(one, "q_b_proj").count, 61);
  EXPECT_EQ(op(one, "gate_up_proj").count, 3);  // the dense layers
  EXPECT_EQ(op(one, "lm_head").count, 1);
  double sum = 0;
  for (const OpPrice& o : one.ops) sum += o.total_s();
  EXPECT_NEAR(one.seconds, sum, 1e-12);
  EXPECT_GT(one.seconds_by_source[0], 0.8 * one.seconds);  // mostly measured
  // More tokens never cost less; expert parallelism keys the EP table.
  EXPECT_GT(non_attention_ops(ds, h200, {8, MoeSplit::kTp, 64, 64}).seconds, one.seconds);
  const OpStep ep = non_attention_ops(ds, h200, {8, MoeSplit::kEp, 1, 1});
  EXPECT_DOUBLE_EQ(op(ep, "moe experts").seconds,
                   measured(h200, TableKernel::kMoe, "fp8 h7168 i2048 e256 k8 tp1 ep8", {1}));
  // TP 1: no all-reduce at all.
  const OpStep tp1 = non_attention_ops(ds, h200, {1, MoeSplit::kTp, 1, 1});
  EXPECT_TRUE(std::none_of(tp1.ops.begin(), tp1.ops.end(),
                           [](const OpPrice& o) { return o.name.starts_with("all-reduce"); }));
  EXPECT_THROW(non_attention_ops(ds, h200, {8, MoeSplit::kTp, 1, 2}), InputError);  // fewer tokens than rows
}

// The PCIe host: NCCL's all-reduce from its published tables by default; with the published table of vLLM's
// PCIe custom all-reduce added (a deployment that turns it on), that one below the 8 MiB limit unless
// --disable-custom-all-reduce; NVFP4 GEMMs at four times the BF16 rate on SM120 Blackwell as on B200.
TEST(StepOps, RtxPro6000AllReduceFromItsPublishedTablesAndFp4OnBlackwell) {
  HardwareProfile rtx = load_profile("rtx-pro-6000");
  const ModelPreset kimi = load_model("kimi-k2-thinking");
  const OpPrice nccl = op(non_attention_ops(kimi, rtx, {8, MoeSplit::kTp, 1, 1}), "all-reduce (MoE out)");
  EXPECT_THAT(nccl.basis, HasSubstr("no vllm-custom table on rtx-pro-6000"));
  EXPECT_GT(nccl.seconds, 15e-6);
  rtx.comm_tables.push_back(load_comm_tables(std::filesystem::path(DCPSIM_SOURCE_DIR) /
                                             "models/tables/rtx-pro-6000-vllm-custom-ar.json"));
  const OpPrice one = op(non_attention_ops(kimi, rtx, {8, MoeSplit::kTp, 1, 1}), "all-reduce (MoE out)");
  EXPECT_EQ(one.source, OpSource::kTable);
  EXPECT_THAT(one.basis, HasSubstr("vllm-custom"));
  EXPECT_DOUBLE_EQ(one.seconds, 11.8e-6);  // 7168 bf16 values = 14,336 B: the benchmarks' host, measured
  // 64 tokens (917,504 B): NCCL's region of the same table, between its 512 KiB and 1 MiB points.
  const OpPrice many = op(non_attention_ops(kimi, rtx, {8, MoeSplit::kTp, 64, 64}), "all-reduce (MoE out)");
  EXPECT_EQ(many.source, OpSource::kTable);
  EXPECT_GT(many.seconds, 59.5e-6);
  EXPECT_LT(many.seconds, 111.42e-6);
  // --disable-custom-all-reduce: NCCL's again, as without the table.
  StepShape off_shape{8, MoeSplit::kTp, 1, 1};
  off_shape.custom_all_reduce = false;
  const OpPrice off = op(non_attention_ops(kimi, rtx, off_shape), "all-reduce (MoE out)");
  EXPECT_THAT(off.basis, ::testing::Not(HasSubstr("vllm-custom")));
  EXPECT_DOUBLE_EQ(off.seconds, nccl.seconds);
  // FP4 weights: the same GEMM four times faster where compute binds (a large m), as the datasheet ratio
  // says.
  ModelPreset bf16 = kimi, fp4 = kimi;
  bf16.weight_dtype = WeightDType::kBF16;
  bf16.dense_weight_dtype = WeightDType::kBF16;
  fp4.weight_dtype = WeightDType::kNVFP4;
  fp4.dense_weight_dtype = WeightDType::kNVFP4;
  const double t16 =
      op(non_attention_ops(bf16, rtx, {8, MoeSplit::kTp, 8192, 8192}), "fused_qkv_a_proj").seconds;
  const double t4 =
      op(non_attention_ops(fp4, rtx, {8, MoeSplit::kTp, 8192, 8192}), "fused_qkv_a_proj").seconds;
  EXPECT_NEAR(t16 / t4, 4.0, 0.4);
}

TEST(StepOps, GqaDenseAndTheMtpDraft) {
  const HardwareProfile h100 = load_profile("h100-sxm");
  const OpStep llama = non_attention_ops(load_model("llama-3.1-70b"), h100, {4, MoeSplit::kTp, 8, 8});
  EXPECT_EQ(op(llama, "qkv_proj").count, 80);
  EXPECT_EQ(op(llama, "down_proj").source, OpSource::kTable);
  EXPECT_TRUE(std::none_of(llama.ops.begin(), llama.ops.end(),
                           [](const OpPrice& o) { return o.name == "moe experts"; }));
  // DeepSeek's MTP module: one MoE block and its projection, priced at one token per request.
  const ModelPreset ds = load_model("deepseek-v3");
  const HardwareProfile h200 = load_profile("h200-sxm");
  const OpStep draft = mtp_draft_ops(ds, h200, {8, MoeSplit::kTp, 16, 8});
  EXPECT_EQ(op(draft, "moe experts").count, 1);
  EXPECT_EQ(op(draft, "mtp eh_proj").count, 1);
  EXPECT_DOUBLE_EQ(op(draft, "moe experts").seconds,
                   op(non_attention_ops(ds, h200, {8, MoeSplit::kTp, 8, 8}), "moe experts").seconds);
  EXPECT_TRUE(mtp_draft_ops(load_model("kimi-k2"), h200, {8, MoeSplit::kTp, 2, 1}).ops.empty());
}

}  // namespace
}  // namespace dcpsim::models
