#pragma once
// The scenario flags shared by `simulate`, `hw run` (one value each) and `scan` (comma lists): geometry,
// batch rows and contexts, strategy, launch mode, element types, LSE base. Registered once here so every
// command spells them the same way.
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "dcpsim/models/scenario.h"

namespace dcpsim::analysis {

// Raw flag values as typed; turned into Scenarios by to_scenario()/expand_scan().
struct ScenarioFlags {
  std::string dcp = "8";
  std::string heads = "128";
  std::string head_dim = "512";
  std::string qk_dim;  // empty: 576 when head-dim is 512 and kv-heads is 1 (MLA), else = head-dim
  std::string kv_heads = "1";
  std::string batch = "64";
  std::string context = "32k";
  std::string contexts_file;  // one context length per line (or comma separated): overrides --batch/--context
  std::string strategy = "ag-rs";
  std::string launch = "graph";
  std::string interleave = "1";
  std::string lse_base = "e";
  std::string kv_dtype = "bf16";
  std::string out_dtype = "bf16";
};

// Registers the flags on `cmd`. With `lists` true, the help text says each accepts a comma list (scan); "all"
// is accepted for --strategy.
void add_scenario_flags(CLI::App& cmd, ScenarioFlags& flags, bool lists);

// One scenario from single-valued flags; throws InputError naming the flag when a value is bad or a list was
// given.
models::Scenario to_scenario(const ScenarioFlags& flags);

// The cartesian product of every comma list, in a fixed, documented order (dcp, heads, head-dim, kv-heads,
// batch, context, strategy, launch — the last varies fastest). Each scenario is validated; invalid
// combinations (e.g. H not divisible by N for ag-rs) are returned in `skipped` with the reason instead of
// aborting the scan.
struct ScanGrid {
  std::vector<models::Scenario> scenarios;
  std::vector<std::string> skipped;
};
ScanGrid expand_scan(const ScenarioFlags& flags);

// Splits "1,2,4" into items, trimming blanks; an empty item is an InputError naming `flag`.
std::vector<std::string> split_list(const std::string& value, const std::string& flag);

}  // namespace dcpsim::analysis
