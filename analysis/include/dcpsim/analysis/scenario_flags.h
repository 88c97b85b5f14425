#pragma once
// The scenario flags shared by `simulate`, `scan`, `replay`, `hw run` and `import`: model, geometry, batch
// rows and contexts, strategy, launch mode, element types, LSE base. Registered once here so every command
// spells them the same way.
//
// Geometry comes from a model preset (models/model_preset.h) unless a flag gives it: --model NAME with --tp T
// derives the heads on a rank after the query all-gather (H = heads × N / T), the KV heads and the head dims;
// --heads/--head-dim/--qk-dim/--kv-heads override single figures. Without --model, dcpsim uses deepseek-v3
// (the geometry its defaults have always described) unless an attention-geometry flag is given, in which case
// the flags alone describe the attention (as --model none does; 128 heads, 512 latent + 64 rope, one KV head
// by default).
//
// Lists: every numeric flag of `scan` takes comma lists and ranges — "1..72" (every integer), "1..256:x2"
// (doubling), "8..64:8" (a step of 8), "32k..1m:x2" for contexts — and `--strategy` takes a list or "all"
// everywhere.
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "dcpsim/models/model_preset.h"
#include "dcpsim/models/scenario.h"

namespace dcpsim::analysis {

// Where row-stream runs on hardware, in every help text and message that lists the strategies (README too).
inline constexpr const char* kRowStreamWhere = "on hardware only emulated on one GPU, hw run --emulate";

// --strategy's help, from the strategy tables (models/types.h, layouts.h) so that it never leaves one out:
// every name, the research ones marked, and the serving engines' names that are accepted.
// `many`: the flag takes a comma list or all.
std::string strategy_help(bool many = true);

// Raw flag values as typed; turned into Scenarios by to_scenario()/to_scenarios()/expand_scan().
struct ScenarioFlags {
  std::string dcp = "8";
  std::string model;     // empty: deepseek-v3 unless a geometry flag is given; "none": no model
  std::string tp;        // empty: default_tp (layouts.h resolve_tp), or = dcp where no command resolved it
  std::string heads;     // empty: from the model (128 without one)
  std::string head_dim;  // empty: from the model (512 without one)
  std::string qk_dim;    // empty: from the model (without one: 576 for D=512 and one KV head, else D)
  std::string kv_heads;  // empty: from the model (1 without one)
  std::string batch = "64";
  std::string context = "32k";
  std::string contexts_file;  // one context length per line (or comma separated): overrides --batch/--context
  std::string strategy = "ag-rs";
  std::string launch = "graph";
  std::string interleave = "1";
  std::string lse_base = "e";
  std::string kv_dtype;  // empty: the model preset's KV-cache type (bf16 without a model)
  std::string out_dtype = "bf16";
  // The TP every scenario uses when --tp is not given, set by the command from layouts.h's rule (the smallest
  // multiple of the largest DCP size whose weights fit); 0: TP = the scenario's DCP size.
  int default_tp = 0;
};

// Registers the flags on `cmd`. With `lists` true, the help text says each accepts comma lists and ranges
// (scan).
void add_scenario_flags(CLI::App& cmd, ScenarioFlags& flags, bool lists);

// The model the flags name (see above), or nullopt for none. InputError for an unknown name (listing the
// presets).
std::optional<models::ModelPreset> model_of(const ScenarioFlags& flags);
// "deepseek-v3 (default)", "llama-3.1-70b", "none (attention flags only)": for summaries.
std::string model_label(const ScenarioFlags& flags);

// One scenario from single-valued flags; throws InputError naming the flag when a value is bad or a list was
// given.
models::Scenario to_scenario(const ScenarioFlags& flags);
// One scenario per strategy of --strategy (a list, or "all" = `all`); every other flag single-valued.
std::vector<models::Scenario> to_scenarios(
    const ScenarioFlags& flags, const std::vector<models::Strategy>& all = models::all_strategies());
// --tp as an integer (single value): the flag, else default_tp, else the scenario's dcp.
int tp_of(const ScenarioFlags& flags, int dcp);

// The cartesian product of every list, in a fixed, documented order (dcp, tp, heads, head-dim, kv-heads,
// batch, context, strategy, launch — the last varies fastest). Each scenario is validated; invalid
// combinations (e.g. H not divisible by N for ag-rs, TP not dividing the model's heads) are returned in
// `skipped` with the reason instead of aborting the scan.
struct ScanGrid {
  std::vector<models::Scenario> scenarios;
  std::vector<int> tp;  // per scenario
  std::vector<std::string> skipped;
};
ScanGrid expand_scan(const ScenarioFlags& flags);

// "ag-rs", "a2a,direct", "all" (= `all`) -> strategies; InputError naming `flag` otherwise.
std::vector<models::Strategy> parse_strategy_list(
    const std::string& value, const std::string& flag,
    const std::vector<models::Strategy>& all = models::all_strategies());

// Splits "1,2,4" into items, trimming blanks; an empty item is an InputError naming `flag`.
std::vector<std::string> split_list(const std::string& value, const std::string& flag);
// One integer of a list in [min_value, max_value]; InputError "--flag 'x' is not an integer in [a, b]".
int parse_list_int(const std::string& item, const std::string& flag, int min_value, int max_value);
// Like split_list, and expands ranges "A..B" (every integer), "A..B:S" (step S) and "A..B:xF" (times F) of
// integers, or of token counts with k/m suffixes when `tokens` is true; at most 100,000 values.
std::vector<std::string> expand_list(const std::string& value, const std::string& flag, bool tokens = false);

// One line for a list of skipped combinations: "skipped 260 of 520 combinations: 200 x heads not divisible by
// dcp (ag-rs, a2a, ...), ...", the reasons grouped without their numbers. Empty for none.
std::string skipped_line(const std::vector<std::string>& skipped, std::size_t total);

}  // namespace dcpsim::analysis
