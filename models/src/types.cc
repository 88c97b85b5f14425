// Spellings of the shared vocabulary types: one table per enum, the single source of its flag and file
// spellings.
#include "dcpsim/models/types.h"

#include <array>
#include <string>
#include <utility>

#include "dcpsim/error.h"

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
constexpr SpellingTable<Strategy, 6> kStrategies{{{Strategy::kAgRs, "ag-rs"},
                                                  {Strategy::kAgAr, "ag-ar"},
                                                  {Strategy::kA2a, "a2a"},
                                                  {Strategy::kDirect, "direct"},
                                                  {Strategy::kRowStream, "row-stream"},
                                                  {Strategy::kFlashInferA2a, "flashinfer-a2a"}}};
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
  for (const auto& entry : table) {
    if (!allowed.empty()) allowed += ", ";
    allowed += entry.second;
  }
  throw InputError("unknown " + std::string(what) + " '" + std::string(s) + "' (allowed: " + allowed + ")");
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
Strategy parse_strategy(std::string_view s) {
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
