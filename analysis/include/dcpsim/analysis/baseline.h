#pragma once
// Anchoring a deployment's decode step on the user's own measurement: "--baseline tpot=12ms,tp=8,batch=1,
// context=64k" says the user's engine ran that layout at that TPOT. The baseline's step is then split into
// what dcpsim simulates (the attention layers at that layout, batch and context) and the rest — measured:
// the non-attention ops, the per-step overhead, whatever the model misses — and every other layout is
// predicted as that measured rest plus the modelled change (the op model's difference between the two
// batches and TPs) plus its own simulated attention. With two or more batch sizes the remainder's batch
// dependence is fitted too (least squares: fixed + per row).
//
// A baseline point may be a profiler trace of the engine instead of a TPOT ("trace=vllm.json.gz,tp=8,
// batch=16,context=32k", baseline_trace.h): its decode steps are measured — the step, the attention layers,
// the other kernels, the GPU's idle time per step — so the remainder is what the trace measures outside
// attention (other kernels + idle) beyond the op model, and the baseline's own attention error is not carried
// to other layouts (each layout's attention is simulated; the trace's attention is shown beside dcpsim's).
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "dcpsim/analysis/baseline_trace.h"
#include "dcpsim/analysis/whole_model.h"
#include "dcpsim/io_guard.h"
#include "dcpsim/models/model_preset.h"
#include "dcpsim/models/scenario.h"

namespace dcpsim::analysis {

struct BaselinePoint {
  double tpot_s = 0.0;
  int tp = 1;
  int dcp = 1;
  int batch = 1;
  std::int64_t context = 0;
  models::Strategy strategy = models::Strategy::kAgRs;
  int spec_tokens = -1;      // -1: as the command's flags
  double accept_length = 0;  // 0: as the command's flags
  int pp = 0;                // pipeline stages; 0: as the command's flags
  std::string trace;         // a profiler trace of the engine at this layout (instead of tpot)
  std::string text;          // as given
};

// "tpot=12ms,tp=8,batch=1,context=64k[,dcp=1][,strategy=ag-rs][,spec=1,accept=1.8][,pp=2]": tpot in ms (a
// bare number) or with a unit (ms, us, s); tokens like --context; "trace=FILE" instead of tpot. InputError
// naming the key for anything else.
BaselinePoint parse_baseline(const std::string& text);

// Registers every baseline trace of `flags` as an input of the command.
void guard_baseline_traces(IoGuard& io, const WholeModelFlags& flags);

struct BaselineFit {
  std::vector<BaselinePoint> points;
  std::vector<double> measured_step_s;  // per point: tpot × accept length
  std::vector<double> attention_s;      // per point: the simulated attention layers (and the draft's)
  std::vector<double> modelled_rest_s;  // per point: the op model's non-attention part (no overhead)
  std::vector<double> remainder_s;      // per point: measured − attention − modelled rest
  std::vector<std::optional<TraceSteps>> traces;  // per point: its trace's steps (trace points only)
  double fixed_s = 0.0, per_row_s = 0.0;          // remainder(rows) = fixed + per_row × rows
  std::string basis;                              // one line for the output
};

// The simulated attention layer (one layer's step time) of a scenario, as the command prices it.
using LayerTime = std::function<double(const models::Scenario&)>;

// The scenario of a layout for a model preset: its rank geometry at (dcp, tp), `batch` rows of `context`,
// the KV dtype, the strategy.
models::Scenario layout_scenario(const models::ModelPreset& model, int dcp, int tp, int batch,
                                 std::int64_t context, models::Strategy strategy, models::DType kv_dtype);

// Fits the remainder on the baseline points: each point's WholeModel is built from `flags` at the point's TP
// (and speculative setting), its attention layer simulated through `layer`. InputError for a point the model
// cannot take, or a remainder so negative that the baseline is faster than dcpsim's attention alone.
BaselineFit fit_baseline(const models::ModelPreset& model, const models::HardwareProfile& profile,
                         const WholeModelFlags& flags, models::DType kv_dtype,
                         const std::vector<BaselinePoint>& points, const LayerTime& layer);

// parse_baseline over flags.baseline and fit_baseline, then whole.set_baseline; nothing without --baseline.
// Returns the fit (empty points without a baseline).
BaselineFit anchor(WholeModel& whole, const WholeModelFlags& flags, models::DType kv_dtype,
                   const LayerTime& layer);

}  // namespace dcpsim::analysis
