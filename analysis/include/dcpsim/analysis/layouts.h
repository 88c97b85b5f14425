#pragma once
// Which deployments and strategies a command considers, decided in one place for `scan`, `simulate`,
// `replay` and the deployed-step planner (`plan`), so that they never disagree:
//
//   Layouts. A TP×DCP pair is a layout serving engines run when the DCP group is part of the tensor-parallel
//   group — vLLM checks TP ≥ DCP and TP % DCP == 0 (SGLang the same) — and the model's heads split over it
//   (models::rank_geometry). With pipeline parallelism (PP stages, vLLM's -pp) a replica is TP × PP GPUs and
//   each GPU holds its stage's layers. Its weights fit when the weights one GPU holds at the weight dtype
//   (the preset's, or an override such as `--weight-dtype`) are at most HBM × gpu-memory-utilization, vLLM's
//   accounting of the memory weights and KV share. A layout whose weights do not fit is shown as "does not
//   fit" and never ranked.
//
//   The default TP. The smallest multiple of the command's largest DCP size whose layout is valid at that
//   size and whose weights fit; without a model (attention flags only, no weights) the largest DCP size.
//   Every command prints the rule with the figures (LayoutChoice::rule), on stdout, beside its answer.
//
//   Strategy tiers. Production strategies are those serving engines ship (or that the project treats as the
//   engines' path, see StrategyInfo::engines): `--best` and every "fastest" pick choose among them. Research
//   strategies (row-stream) are printed beside them, marked, and chosen only with --include-research.
//
//   Skip reasons. A strategy that cannot run a scenario (head-scattering strategies need N | H) is skipped
//   with the rule that excluded it, never an abort of the whole command.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dcpsim/analysis/scenario_flags.h"
#include "dcpsim/models/model_preset.h"
#include "dcpsim/models/profile.h"
#include "dcpsim/models/scenario.h"
#include "dcpsim/models/types.h"

namespace dcpsim::analysis {

// ---- strategies ----

enum class StrategyTier { kProduction, kResearch };
std::string_view to_string(StrategyTier t);  // "production" | "research"

// One engine's setting that runs a strategy: {"vLLM", "--dcp-comm-backend ag_rs (the default)"}.
struct EngineSetting {
  std::string_view engine;
  std::string_view setting;
};

struct StrategyInfo {
  models::Strategy strategy = models::Strategy::kAgRs;
  StrategyTier tier = StrategyTier::kProduction;
  std::string_view what;               // one line: how the partials are delivered and merged
  std::vector<EngineSetting> engines;  // where serving engines expose it (empty: none does)
  std::string_view engine_note;        // status of the engines' path where it is not a released flag
  std::string_view hardware;           // where `dcpsim hw run` runs it
};

const StrategyInfo& strategy_info(models::Strategy s);
bool is_production(models::Strategy s);
// "vLLM --dcp-comm-backend a2a; SGLang dcp_comm_backend=..." — every engine setting, or "no serving engine
// ships it" (plus the note).
std::string engine_text(models::Strategy s);
// What a "fastest"/best pick may choose: production strategies, and research ones with include_research.
bool may_pick(models::Strategy s, bool include_research);
// The position of the shortest time among the strategies a pick may choose (ties: the earlier one);
// nullopt when none may be picked. `times` and `strategies` have the same length.
std::optional<std::size_t> pick_fastest(const std::vector<models::Strategy>& strategies,
                                        const std::vector<double>& times, bool include_research);

// Why `s` cannot run `scenario` with its strategy (the rule, in words), or empty when it can. Only the
// strategy's own rules: a scenario no strategy can run is the caller's error (Scenario::validate).
std::string strategy_skip_reason(const models::Scenario& scenario);

struct SkippedStrategy {
  models::Strategy strategy = models::Strategy::kAgRs;
  std::string reason;
};
struct StrategyChoice {
  std::vector<models::Scenario> run;     // one per runnable strategy, in the order requested
  std::vector<SkippedStrategy> skipped;  // with the rule that excluded each
};
// `base` with each requested strategy: those that can run it and those that cannot (with why). InputError
// when none can (naming every reason) or when `base` is invalid for every strategy.
StrategyChoice runnable_strategies(const models::Scenario& base,
                                   const std::vector<models::Strategy>& requested);

// One line per rule: "<indent>skipped ag-rs, a2a: gives each rank H/N of the heads: ...".
std::string skipped_text(const std::vector<SkippedStrategy>& skipped, const std::string& indent);

// ---- layouts ----

// What decides whether weights fit. Without a model there are no weights: every layout fits.
struct LayoutQuery {
  std::optional<models::ModelPreset> model;
  double hbm_bytes = 0.0;                     // one GPU's HBM (HardwareProfile::gpu.hbm_capacity)
  double gpu_memory_utilization = 0.9;        // vLLM's --gpu-memory-utilization
  std::optional<double> bytes_per_parameter;  // the weight dtype's; default: the preset's
  std::string weight_dtype;  // its name for messages ("fp8", "nvfp4"); default from the bytes
  int pp = 1;                // pipeline stages (vLLM's -pp): each GPU holds its stage's layers

  // A query for `model` on `profile` (profile.gpu.hbm_capacity).
  static LayoutQuery of(std::optional<models::ModelPreset> model, const models::HardwareProfile& profile,
                        double gpu_memory_utilization = 0.9, int pp = 1);
  double weight_bytes_per_parameter() const;  // the override or the preset's (0 without a model)
  std::string weight_dtype_name() const;      // "fp8 (1 byte per parameter)", "bf16 (2 bytes ...)"
};

struct Layout {
  int tp = 1;
  int dcp = 1;
  int pp = 1;                  // pipeline stages: a replica is tp × pp GPUs
  bool valid = true;           // TP >= DCP, TP % DCP == 0 and the model's heads split over it
  std::string invalid_reason;  // why not (empty when valid)
  std::optional<models::RankGeometry> geometry;  // the model's on one rank (valid layouts with a model)
  double weight_bytes_per_gpu = 0.0;             // 0 without a model
  double hbm_bytes = 0.0, utilization = 0.0;     // the query's
  double usable_bytes = 0.0;                     // HBM × utilization
  bool weights_fit = true;                       // weight_bytes_per_gpu <= usable_bytes

  bool usable() const { return valid && weights_fit; }
  // "83.9 GB of weights per GPU fit in 126.9 GB (HBM 141.0 GB x 0.90)", or "does not fit: ... exceed ..."
  std::string fit_text() const;
};

// One TP×DCP layout (with the query's pipeline stages) judged by the rules above. InputError for tp, dcp or
// the query's pp < 1.
Layout evaluate_layout(const LayoutQuery& query, int tp, int dcp);

struct LayoutChoice {
  std::vector<int> tp;  // the TP sizes the command runs (one when defaulted)
  bool defaulted = false;
  // One line for the output: "TP 8 (default: the smallest multiple of DCP 8 whose deepseek-v3 weights fit at
  // fp8 ...; vLLM: TP >= DCP, TP % DCP == 0; --tp sets it): 83.9 GB of weights per GPU fit in ..." or
  // "TP 16 (--tp): ...".
  std::string rule;
};

// The default TP for DCP sizes `dcp` (see the top of this file). InputError when no multiple of the largest
// size up to the largest domain (kMaxDcp) fits the weights.
LayoutChoice default_tp(const LayoutQuery& query, const std::vector<int>& dcp);
// `given` (the user's --tp values) when not empty, else default_tp(query, dcp).
LayoutChoice choose_tp(const LayoutQuery& query, const std::vector<int>& dcp, const std::vector<int>& given);

// The rule applied to a command's flags: the DCP sizes of --dcp (lists and ranges), the model of --model, the
// TP sizes of --tp or, without it, the default, which is written into flags.default_tp so that every scenario
// the flags make uses it. InputError for a bad list or when no TP fits.
LayoutChoice resolve_tp(ScenarioFlags& flags, const LayoutQuery& query);

// "1.2 GB" (1e9 B).
std::string gb_text(double bytes);

}  // namespace dcpsim::analysis
