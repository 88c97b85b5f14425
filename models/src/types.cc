// Spellings of the shared vocabulary types: one table per enum, the single source of its flag and file
// spellings.
#include "dcpsim/models/types.h"

#include <array>
#include <string>
#include <type_traits>
#include <utility>

#include "dcpsim/error.h"
#include "dcpsim/suggest.h"

namespace dcpsim::models {
namespace {

template <typename Enum, std::size_t N>
using SpellingTable = std::array<std::pair<Enum, std::string_view>, N>;

constexpr SpellingTable<LseBase, 2> kLseBases{{{LseBase::kE, "e"}, {LseBase::k2, "2"}}};
constexpr SpellingTable<DType, 5> kDTypes{{{DType::kF32, "fp32"},
                                           {DType::kBF16, "bf16"},
                                           {DType::kF16, "fp16"},
                                           {DType::kF64, "fp64"},
                                           {DType::kFP8E4M3, "fp8"}}};
// In the order `all` lists them; a new strategy goes last, so that indices into all_strategies() (benchmark
// arguments) keep their meaning.
constexpr SpellingTable<Strategy, 7> kStrategies{{{Strategy::kAgRs, "ag-rs"},
                                                  {Strategy::kAgAr, "ag-ar"},
                                                  {Strategy::kA2a, "a2a"},
                                                  {Strategy::kDirect, "direct"},
                                                  {Strategy::kRowStream, "row-stream"},
                                                  {Strategy::kFlashInferA2a, "flashinfer-a2a"},
                                                  {Strategy::kA2aTwoCall, "a2a-2call"}}};
constexpr SpellingTable<LaunchMode, 3> kLaunchModes{
    {{LaunchMode::kEager, "eager"}, {LaunchMode::kGraph, "graph"}, {LaunchMode::kPdl, "pdl"}}};

template <typename Enum, std::size_t N>
std::string_view spell(const SpellingTable<Enum, N>& table, Enum v) {
  for (const auto& [value, name] : table) {
    if (value == v) return name;
  }
  return "?";
}

template <typename Enum, std::size_t N>
Enum parse(const SpellingTable<Enum, N>& table, std::string_view s, std::string_view what) {
  for (const auto& [value, name] : table) {
    if (name == s) return value;
  }
  std::string allowed;
  std::vector<std::string_view> names;
  for (const auto& entry : table) {
    if (!allowed.empty()) allowed += ", ";
    allowed += entry.second;
    names.push_back(entry.second);
  }
  if constexpr (std::is_same_v<Enum, Strategy>) {
    for (const StrategyAlias& a : strategy_aliases()) names.push_back(a.alias);
    allowed += "; aliases: ag_rs, fi_a2a, vllm-a2a, sglang-a2a, ... (every name with _)";
  }
  const std::string guess = closest_name(s, names);
  throw InputError("unknown " + std::string(what) + " '" + std::string(s) + "'" +
                   (guess.empty() ? "" : " (did you mean '" + std::string(guess) + "'?)") +
                   " (allowed: " + allowed + ")");
}

}  // namespace

std::string_view to_string(LseBase v) {
  return spell(kLseBases, v);
}
std::string_view to_string(DType v) {
  return spell(kDTypes, v);
}
std::string_view to_string(Strategy v) {
  return spell(kStrategies, v);
}
std::string_view to_string(LaunchMode v) {
  return spell(kLaunchModes, v);
}

LseBase parse_lse_base(std::string_view s) {
  return parse(kLseBases, s, "LSE base");
}
DType parse_dtype(std::string_view s) {
  if (s == "fp8_e4m3" || s == "fp8-e4m3") return DType::kFP8E4M3;  // vLLM's spelling
  return parse(kDTypes, s, "dtype");
}
const std::vector<StrategyAlias>& strategy_aliases() {
  static const std::vector<StrategyAlias> aliases = {
      {"ag_rs", Strategy::kAgRs},
      {"ag_ar", Strategy::kAgAr},
      {"a2a_2call", Strategy::kA2aTwoCall},
      {"row_stream", Strategy::kRowStream},
      {"flashinfer_a2a", Strategy::kFlashInferA2a},
      {"fi_a2a", Strategy::kFlashInferA2a},
      {"fi-a2a", Strategy::kFlashInferA2a},
      {"vllm-a2a", Strategy::kA2aTwoCall},
      {"vllm_a2a", Strategy::kA2aTwoCall},
      {"sglang-a2a", Strategy::kA2a},
      {"sglang_a2a", Strategy::kA2a},
  };
  return aliases;
}

Strategy parse_strategy(std::string_view s) {
  for (const StrategyAlias& a : strategy_aliases()) {
    if (a.alias == s) return a.strategy;
  }
  return parse(kStrategies, s, "strategy");
}
LaunchMode parse_launch_mode(std::string_view s) {
  return parse(kLaunchModes, s, "launch mode");
}

const std::vector<Strategy>& all_strategies() {
  static const std::vector<Strategy> strategies = [] {
    std::vector<Strategy> v;
    for (const auto& entry : kStrategies) v.push_back(entry.first);
    return v;
  }();
  return strategies;
}

const std::vector<DType>& all_dtypes() {
  static const std::vector<DType> dtypes = [] {
    std::vector<DType> v;
    for (const auto& entry : kDTypes) v.push_back(entry.first);
    return v;
  }();
  return dtypes;
}

std::size_t dtype_bytes(DType v) {
  switch (v) {
    case DType::kF32:
      return 4;
    case DType::kBF16:
    case DType::kF16:
      return 2;
    case DType::kF64:
      return 8;
    case DType::kFP8E4M3:
      return 1;
  }
  return 0;
}

DType query_dtype(DType kv) {
  return kv == DType::kFP8E4M3 ? DType::kBF16 : kv;
}

bool scatters_heads(Strategy s) {
  return s != Strategy::kAgAr;
}

bool interleaves_heads(Strategy s) {
  return s == Strategy::kFlashInferA2a;
}

bool accumulates_in_fp32(Strategy s) {
  return s != Strategy::kAgRs && s != Strategy::kAgAr;
}

}  // namespace dcpsim::models
