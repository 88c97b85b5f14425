// The one shape of dcpsim's JSON summaries (summary_json.h).
#include "dcpsim/analysis/summary_json.h"

namespace dcpsim::analysis {

nlohmann::json summary_document(std::string_view command, const std::string& profile,
                                const std::string& model) {
  return {{"schema", kSummarySchema}, {"command", command}, {"profile", profile}, {"model", model}};
}

nlohmann::json layout_json(const Layout& l, const std::string& rule) {
  return {{"tp", l.tp},
          {"dcp", l.dcp},
          {"rule", rule},
          {"valid", l.valid},
          {"weights_fit", l.weights_fit},
          {"weight_bytes_per_gpu", l.weight_bytes_per_gpu},
          {"usable_bytes", l.usable_bytes},
          {"fit", l.fit_text()}};
}

nlohmann::json strategy_entry(models::Strategy s, const Layout& l, const nlohmann::json& units) {
  const StrategyInfo& info = strategy_info(s);
  nlohmann::json engines = nlohmann::json::array();
  for (const EngineSetting& e : info.engines)
    engines.push_back({{"engine", e.engine}, {"setting", e.setting}});
  return {{"strategy", models::to_string(s)},
          {"tier", to_string(info.tier)},
          {"engines", engines},
          {"engine_note", info.engine_note},
          {"layout", {{"tp", l.tp}, {"dcp", l.dcp}, {"weights_fit", l.weights_fit}}},
          {"units", units}};
}

nlohmann::json skipped_json(const std::vector<SkippedStrategy>& skipped) {
  nlohmann::json j = nlohmann::json::array();
  for (const SkippedStrategy& k : skipped)
    j.push_back({{"strategy", models::to_string(k.strategy)}, {"reason", k.reason}});
  return j;
}

nlohmann::json fastest_json(const std::vector<models::Strategy>& strategies, const std::vector<double>& times,
                            bool include_research) {
  const auto pick = pick_fastest(strategies, times, include_research);
  if (!pick) return nullptr;
  nlohmann::json j = {{"strategy", models::to_string(strategies[*pick])},
                      {"among", include_research ? "every strategy (--include-research)" : "production"}};
  const auto any = pick_fastest(strategies, times, true);
  if (!include_research && any && *any != *pick)
    j["research"] = {{"strategy", models::to_string(strategies[*any])},
                     {"note", "faster, but a research strategy: chosen only with --include-research"}};
  return j;
}

}  // namespace dcpsim::analysis
