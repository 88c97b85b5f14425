#pragma once
// The decode step around attention, op by op: what one GPU of a TP group runs for a model preset besides the
// attention core (projections, MLP or MoE experts, router, output head, the TP all-reduces, the small kernels
// between them), each op priced from the best source the profile has:
//   1. a measured op table (kernel_table.h: `gemm` over m, n, k; `moe` over tokens with the layer's shape and
//      parallelism in the key; the `collective` "all-reduce vllm-custom graph"), dcpsim's own (`hw sweep
//      --kernels gemm`) or published ones imported with provenance (models/tables/*-ops-aic.json);
//   2. another dtype's table scaled by the roofline ratio of the two dtypes (bytes per weight, datasheet
//      tensor rates: FP8 2x, FP4 4x BF16 on Blackwell, weight-only on Hopper) — marked "ratio";
//   3. the roofline itself (weight bytes at the measured HBM bandwidth against FLOPs at the tensor rate, a
//      kernel floor; NCCL's model for a collective) — marked "analytic".
// Ops are listed per decode step (count × one instance), so every printed figure can say where it came from.
#include <string>
#include <string_view>
#include <vector>

#include "dcpsim/models/cost_kernels.h"
#include "dcpsim/models/model_preset.h"
#include "dcpsim/models/profile.h"

namespace dcpsim::models {

// How the MoE experts are split over the TP group: sliced (each GPU a 1/TP slice of every expert, vLLM's
// default) or whole experts (expert parallelism, vLLM's --enable-expert-parallel: E/TP experts per GPU).
enum class MoeSplit { kTp, kEp };
std::string_view to_string(MoeSplit s);        // "tp" | "ep"
MoeSplit parse_moe_split(std::string_view s);  // InputError listing the spellings

struct StepShape {
  int tp = 1;
  MoeSplit moe = MoeSplit::kTp;
  int tokens = 1;  // tokens through the non-attention part: rows × (speculative tokens + 1)
  int rows = 1;    // requests: the output head and the sampler run once per token, the draft once per row
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

}  // namespace dcpsim::models
