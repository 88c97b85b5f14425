#pragma once
// Human and machine summaries of a simulated step: the text `dcpsim simulate` prints and the JSON it writes.
#include <string>

#include <nlohmann/json.hpp>

#include "dcpsim/sim/step_result.h"

namespace dcpsim::sim {

// Min, median and max of a list of values (median of an even count: the mean of the two middle values).
struct Spread {
  double min = 0.0;
  double median = 0.0;
  double max = 0.0;
};
Spread spread(std::vector<double> values);

// A readable report: step and merge latency, the collectives' plans, each phase's duration over ranks (min /
// median / max), per-rank row readiness (min / median / max over rows) and KV held per rank.
std::string format_summary(const StepResult& result);

// The same content as JSON (times in microseconds, keys spelled out).
nlohmann::json summary_json(const StepResult& result);

}  // namespace dcpsim::sim
