#pragma once
// The decode step around attention, op by op: what one GPU of a TP group runs for a model preset besides the
// attention core (projections, MLP or MoE experts, router, output head, the TP all-reduces, the MoE token
// exchange, the small kernels between them), each op priced from the best source the profile has:
//   1. a measured op table (kernel_table.h: `gemm` over m, n, k; `moe` over tokens with the layer's shape and
//      parallelism in the key), dcpsim's own (`hw sweep --kernels gemm`) or published ones imported with
//      provenance (models/tables/*-ops-aic.json); a collective from the profile's communication tables
//      through the one pricing call, models::price_collective (vLLM's custom all-reduce is a table of
//      implementation "vllm-custom" there, DeepEP's low-latency kernels "deepep-ll");
//   2. another dtype's table scaled by the roofline ratio of the two dtypes (bytes per weight, datasheet
//      tensor rates: FP8 2x, FP4 4x BF16 on Blackwell, weight-only on Hopper) — marked "ratio";
//   3. the roofline itself (weight bytes at the measured HBM bandwidth against FLOPs at the tensor rate, a
//      kernel floor; NCCL's tuning model for a collective no table covers) — marked "analytic".
// Ops are listed per decode step (count × one instance), so every printed figure can say where it came from.
#include <string>
#include <string_view>
#include <vector>

#include "dcpsim/models/collective.h"
#include "dcpsim/models/cost_kernels.h"
#include "dcpsim/models/model_preset.h"
#include "dcpsim/models/profile.h"

namespace dcpsim::models {

// How the MoE experts are split over the TP group: sliced (each GPU a 1/TP slice of every expert, vLLM's
// default) or whole experts (expert parallelism, vLLM's --enable-expert-parallel: E/TP experts per GPU).
enum class MoeSplit { kTp, kEp };
std::string_view to_string(MoeSplit s);        // "tp" | "ep"
MoeSplit parse_moe_split(std::string_view s);  // InputError listing the spellings

// How a MoE layer's tokens meet their experts across the TP group:
//   kAllReduce  every GPU holds every token (TP attention); each computes its experts' (or its slices')
//               share and one all-reduce of the hidden states combines them — vLLM with DP 1 (its all2all
//               kernels need attention DP), SGLang's --moe-a2a-backend none;
//   kAllToAll   each GPU dispatches its 1/TP of the tokens to the GPUs holding their top-k experts and gets
//               the outputs back (two NCCL all-to-alls), then all-gathers the hidden states for the TP
//               attention — an EP token exchange (vLLM's --all2all-backend with attention DP, SGLang's
//               --moe-a2a-backend); needs MoeSplit::kEp;
//   kDeepEpLowLatency  the same exchange with DeepEP's low-latency kernels (fp8 dispatch, bf16 combine),
//               priced from a communication table of implementation "deepep-ll", else as kAllToAll.
enum class MoeComm { kAllReduce, kAllToAll, kDeepEpLowLatency };
std::string_view to_string(MoeComm c);       // "all-reduce" | "all-to-all" | "deepep-ll"
MoeComm parse_moe_comm(std::string_view s);  // InputError listing the spellings

struct StepShape {
  int tp = 1;
  MoeSplit moe = MoeSplit::kTp;
  int tokens = 1;  // tokens through the non-attention part: rows × (speculative tokens + 1)
  int rows = 1;    // requests: the output head and the sampler run once per token, the draft once per row
  MoeComm moe_comm = MoeComm::kAllReduce;
  // vLLM's custom all-reduce where it applies (below); false: every TP all-reduce through NCCL (vLLM's
  // --disable-custom-all-reduce, or a deployment that turns its PCIe all-reduce off).
  bool custom_all_reduce = true;
};

enum class OpSource { kTable, kRatio, kAnalytic };
std::string_view to_string(OpSource s);  // "table" | "ratio" | "analytic"

struct OpPrice {
  std::string name;    // "q_b_proj", "moe experts", "all-reduce", ...
  double count = 0;    // instances per decode step
  double seconds = 0;  // one instance
  OpSource source = OpSource::kAnalytic;
  std::string basis;  // "gemm fp8 [1 x 3072 x 1536] H200 table (ai-dynamo/aiconfigurator)" / "roofline ..."
  double total_s() const { return count * seconds; }
};

struct OpStep {
  std::vector<OpPrice> ops;
  double seconds = 0.0;                     // Σ ops
  double seconds_by_source[3] = {0, 0, 0};  // indexed by OpSource
  double weight_bytes = 0.0;                // weights read per step on one GPU
  // "62% measured tables, 30% ratio, 8% analytic": where the time comes from.
  std::string provenance() const;
};

// Every op one GPU runs per decode step besides attention, for the whole model (every layer, the output head,
// the sampler's kernels). InputError for a TP the model cannot take.
OpStep non_attention_ops(const ModelPreset& model, const HardwareProfile& profile, const StepShape& shape);

// One MTP / draft module's step (DeepSeek's MTP: one MoE block, a 2h x h projection, the shared output head),
// run once per speculative token, besides its attention layer. Empty for a model without MTP modules.
OpStep mtp_draft_ops(const ModelPreset& model, const HardwareProfile& profile, const StepShape& shape);

// One dense GEMM (out[m][n] = in[m][k] · W[k][n], weights in `dtype`) priced as above.
OpPrice gemm_price(const HardwareProfile& profile, WeightDType dtype, double m, double n, double k);

// One collective of the step (cost_collectives.h's bytes per rank) through models::price_collective, issued
// inside a CUDA-graph step: `implementation` names a framework kernel ("vllm-custom", "deepep-ll"; "" =
// NCCL) whose table is used where one covers the call, else NCCL's table or tuning model prices it and the
// basis says so.
OpPrice collective_price(const HardwareProfile& profile, Collective c, int ranks, double bytes_per_rank,
                         const std::string& implementation = "");

// vLLM's custom all-reduce serves at most this many GPUs of one NVLink domain, up to this many bytes
// (vllm/distributed/device_communicators/custom_all_reduce.py: world sizes 2, 4, 6, 8; max_size 8 MiB);
// beyond either NCCL's all-reduce runs.
inline constexpr int kCustomAllReduceMaxGpus = 8;
inline constexpr double kCustomAllReduceMaxBytes = 8.0 * 1024 * 1024;

// The hidden states a pipeline stage sends to the next one per decode step (hidden states and the residual,
// bf16, for `tokens` tokens): one send over NVLink when both stages sit in one NVLink domain (`same_domain`),
// else over the inter-node network.
OpPrice stage_send_price(const HardwareProfile& profile, const ModelPreset& model, int tokens,
                         bool same_domain);

}  // namespace dcpsim::models
