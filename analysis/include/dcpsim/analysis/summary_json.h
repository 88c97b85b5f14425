#pragma once
// The one shape of every JSON summary dcpsim writes (`simulate --json`, `replay --summary`, `scan --json`),
// schema "dcpsim-summary/1", documented in analysis/README.md:
//   {"schema": "dcpsim-summary/1", "command": "simulate", "profile": ..., "model": ...,
//    "layout": {"tp", "dcp", "rule", "weights_fit", "weight_bytes_per_gpu", "usable_bytes", "fit"},
//    "strategies": [ {"strategy", "tier", "engines": [{"engine", "setting"}], "engine_note",
//                     "layout": {"tp", "dcp"}, "units": {...}, <the command's figures>} ...],
//    "skipped": [{"strategy", "reason"}], "fastest": {"strategy", "among"} ...}
// `strategies` is a list always, one strategy or several, and each entry names its strategy, its layout and
// the units of its figures, so that an entry read alone still says what it is.
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "dcpsim/analysis/layouts.h"

namespace dcpsim::analysis {

inline constexpr std::string_view kSummarySchema = "dcpsim-summary/1";

// {"schema": ..., "command": command, "profile": profile, "model": model}.
nlohmann::json summary_document(std::string_view command, const std::string& profile,
                                const std::string& model);
// The layout object: tp, dcp, the rule that chose TP, whether the weights fit and by how much.
nlohmann::json layout_json(const Layout& layout, const std::string& rule);
// A strategy entry's self-description: strategy, tier, engines, engine_note, layout {tp, dcp} and `units`
// (an object: figure name pattern -> what it is); the command adds its figures.
nlohmann::json strategy_entry(models::Strategy s, const Layout& layout, const nlohmann::json& units);
nlohmann::json skipped_json(const std::vector<SkippedStrategy>& skipped);
// "fastest": the pick among production strategies (and, when a research strategy is faster, "research":
// that one). Null when nothing may be picked.
nlohmann::json fastest_json(const std::vector<models::Strategy>& strategies, const std::vector<double>& times,
                            bool include_research);

}  // namespace dcpsim::analysis
