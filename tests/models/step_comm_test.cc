// The step's collectives through the one pricing call: communication tables carry an implementation (vLLM's
// custom all-reduce is one), a query matches only its own implementation, the TP all-reduce is the custom
// kernel's table where it serves and NCCL's otherwise, the EP token exchange per MoE layer, and the pipeline
// stage send.
#include <algorithm>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "dcpsim/error.h"
#include "dcpsim/models/comm_table.h"
#include "dcpsim/models/cost_collectives_price.h"
#include "dcpsim/models/model_preset.h"
#include "dcpsim/models/profile.h"
#include "dcpsim/models/step_ops.h"

namespace dcpsim::models {
namespace {

using ::testing::HasSubstr;

constexpr const char* kTables = R"({
  "format": "dcpsim-comm-tables/1",
  "provenance": {"device": "NVIDIA H100", "source": "test"},
  "tables": [
    {"op": "all-reduce", "dtype": "bfloat16", "graph": true, "implementation": "vllm-custom", "points": [
      {"gpus": 8, "size_bytes": 1024, "time_us": 4.0}, {"gpus": 8, "size_bytes": 4096, "time_us": 5.0}]},
    {"op": "all-reduce", "dtype": "bfloat16", "graph": true, "points": [
      {"gpus": 8, "size_bytes": 1024, "time_us": 20.0}, {"gpus": 8, "size_bytes": 4096, "time_us": 21.0}]}]
})";

const OpPrice* find_op(const OpStep& s, const std::string& name) {
  const auto it = std::find_if(s.ops.begin(), s.ops.end(), [&](const OpPrice& o) { return o.name == name; });
  return it == s.ops.end() ? nullptr : &*it;
}

TEST(StepComm, TablesCarryAnImplementationAndQueriesMatchOnlyTheirOwn) {
  const CommTables t = parse_comm_tables(kTables, "t.json");
  ASSERT_EQ(t.tables.size(), 2u);  // not duplicates: they differ in implementation
  EXPECT_EQ(t.tables[0].implementation, "vllm-custom");
  EXPECT_EQ(parse_comm_tables(comm_tables_json(t), "again"), t);
  EXPECT_THAT(describe_comm_tables(t), HasSubstr("vllm-custom"));
  CommQuery q;
  q.op = Collective::kAllReduce;
  q.gpus = 8;
  q.size_bytes = 1024;
  q.graph = true;
  const auto nccl = lookup_comm_time({t}, q, nullptr);
  ASSERT_TRUE(nccl);
  EXPECT_DOUBLE_EQ(nccl->time_s, 20e-6);
  q.implementation = "vllm-custom";
  const auto custom = lookup_comm_time({t}, q, nullptr);
  ASSERT_TRUE(custom);
  EXPECT_DOUBLE_EQ(custom->time_s, 4e-6);
  q.implementation = "deepep-ll";
  EXPECT_FALSE(lookup_comm_time({t}, q, nullptr));
}

TEST(StepComm, TheTpAllReduceIsTheCustomKernelsTableWhereItServes) {
  const HardwareProfile h200 = load_profile("h200-sxm");
  // A measured point of the H100 custom all-reduce table h200-sxm borrows: as measured plus the in-step term.
  const OpPrice at = collective_price(h200, Collective::kAllReduce, 8, 16384, "vllm-custom");
  EXPECT_EQ(at.source, OpSource::kTable);
  EXPECT_THAT(at.basis, HasSubstr("vllm-custom"));
  EXPECT_NEAR(at.seconds, 5.3101e-6 + in_step_extra(h200, LaunchMode::kGraph), 1e-12);
  // The whole step: every TP all-reduce of DeepSeek at one token per request is the custom kernel's.
  const OpStep one = non_attention_ops(load_model("deepseek-v3"), h200, {8, MoeSplit::kTp, 1, 1});
  EXPECT_THAT(find_op(one, "all-reduce (MoE out)")->basis, HasSubstr("vllm-custom"));
  // Above vLLM's 8 MiB limit NCCL's all-reduce runs (its nccl-tests table).
  const OpStep big = non_attention_ops(load_model("deepseek-v3"), h200, {8, MoeSplit::kTp, 1024, 1024});
  EXPECT_THAT(find_op(big, "all-reduce (MoE out)")->basis, HasSubstr("NCCL all-reduce"));
  // A profile without a custom all-reduce table: NCCL's call stands in, and the basis says so.
  HardwareProfile bare = h200;
  std::erase_if(bare.comm_tables, [](const CommTables& f) {
    return std::any_of(f.tables.begin(), f.tables.end(),
                       [](const CommTable& t) { return !t.implementation.empty(); });
  });
  const OpPrice nccl = collective_price(bare, Collective::kAllReduce, 8, 16384, "vllm-custom");
  EXPECT_THAT(nccl.basis, HasSubstr("no vllm-custom table"));
  EXPECT_GT(nccl.seconds, at.seconds);  // NCCL's all-reduce is slower than the one-shot kernel here
}

TEST(StepComm, EpTokenExchangeReplacesTheMoeAllReduce) {
  const HardwareProfile h200 = load_profile("h200-sxm");
  const ModelPreset ds = load_model("deepseek-v3");
  const StepShape a2a{8, MoeSplit::kEp, 16, 16, MoeComm::kAllToAll};
  const OpStep s = non_attention_ops(ds, h200, a2a);
  EXPECT_EQ(find_op(s, "all-reduce (MoE out)"), nullptr);
  const OpPrice* dispatch = find_op(s, "moe dispatch (all-to-all)");
  const OpPrice* combine = find_op(s, "moe combine (all-to-all)");
  ASSERT_NE(dispatch, nullptr);
  ASSERT_NE(combine, nullptr);
  EXPECT_EQ(dispatch->count, 58);  // every MoE layer
  // 2 tokens per GPU (16 / TP 8) x 8 experts x 7168 bf16 values.
  EXPECT_THAT(dispatch->basis, HasSubstr("of 229376 B on 8 GPUs"));
  EXPECT_NE(find_op(s, "all-gather (MoE out)"), nullptr);
  EXPECT_NE(find_op(s, "all-reduce (attention out)"), nullptr);  // attention stays TP
  // DeepEP's low-latency kernels: fp8 dispatch (no deepep-ll table here: NCCL's all-to-all, said so).
  const OpStep ll = non_attention_ops(ds, h200, {8, MoeSplit::kEp, 16, 16, MoeComm::kDeepEpLowLatency});
  EXPECT_THAT(find_op(ll, "moe dispatch (all-to-all)")->basis, HasSubstr("no deepep-ll table"));
  EXPECT_LE(find_op(ll, "moe dispatch (all-to-all)")->seconds, dispatch->seconds);
  // The exchange needs whole experts per GPU and a MoE model.
  EXPECT_THROW(non_attention_ops(ds, h200, {8, MoeSplit::kTp, 16, 16, MoeComm::kAllToAll}), InputError);
  EXPECT_THROW(
      non_attention_ops(load_model("llama-3.1-70b"), h200, {8, MoeSplit::kEp, 16, 16, MoeComm::kAllToAll}),
      InputError);
  EXPECT_EQ(parse_moe_comm("deepep_low_latency"), MoeComm::kDeepEpLowLatency);
  EXPECT_EQ(parse_moe_comm("none"), MoeComm::kAllReduce);
  EXPECT_THROW(parse_moe_comm("pplx2"), InputError);
}

TEST(StepComm, PipelineStageSendInsideADomainAndAcrossNodes) {
  const HardwareProfile h200 = load_profile("h200-sxm");
  const ModelPreset k2 = load_model("kimi-k2");
  const OpPrice near = stage_send_price(h200, k2, 8, true);
  EXPECT_THAT(near.basis, HasSubstr("send-recv"));
  const OpPrice far = stage_send_price(h200, k2, 8, false);
  const double bytes = 2.0 * 8 * 7168 * 2;
  const double call_s = price_collective(h200, Collective::kSendRecv, 2, bytes).plan.base_latency_s;
  EXPECT_GT(call_s, 0.0);
  EXPECT_DOUBLE_EQ(far.seconds, call_s + h200.internode.latency.si() + bytes / h200.internode.bandwidth.si());
  EXPECT_GT(far.seconds, near.seconds);
}

}  // namespace
}  // namespace dcpsim::models
