// Scenario <-> dcpsim.trace.v1.Scenario. Each enum maps through one table, so a value added on one side and
// not the other fails loudly instead of turning into a default.
#include "dcpsim/models/scenario_proto.h"

#include <array>
#include <string>
#include <utility>

#include "dcpsim/error.h"

namespace dcpsim::models {
namespace {

namespace v1 = traces::v1;

template <typename A, typename B, std::size_t N>
using EnumTable = std::array<std::pair<A, B>, N>;

constexpr EnumTable<DType, v1::DType, 5> kProtoDTypes{{{DType::kF32, v1::DTYPE_F32},
                                                       {DType::kBF16, v1::DTYPE_BF16},
                                                       {DType::kF16, v1::DTYPE_F16},
                                                       {DType::kF64, v1::DTYPE_F64},
                                                       {DType::kFP8E4M3, v1::DTYPE_FP8_E4M3}}};
constexpr EnumTable<LseBase, v1::LseBase, 2> kProtoLseBases{
    {{LseBase::kE, v1::LSE_BASE_E}, {LseBase::k2, v1::LSE_BASE_2}}};
constexpr EnumTable<Strategy, v1::Strategy, 7> kProtoStrategies{
    {{Strategy::kAgRs, v1::STRATEGY_AG_RS},
     {Strategy::kAgAr, v1::STRATEGY_AG_AR},
     {Strategy::kA2a, v1::STRATEGY_A2A},
     {Strategy::kDirect, v1::STRATEGY_DIRECT},
     {Strategy::kRowStream, v1::STRATEGY_ROW_STREAM},
     {Strategy::kFlashInferA2a, v1::STRATEGY_FLASHINFER_A2A},
     {Strategy::kA2aTwoCall, v1::STRATEGY_A2A_TWO_CALL}}};
constexpr EnumTable<LaunchMode, v1::LaunchMode, 3> kProtoLaunchModes{
    {{LaunchMode::kEager, v1::LAUNCH_MODE_EAGER},
     {LaunchMode::kGraph, v1::LAUNCH_MODE_GRAPH},
     {LaunchMode::kPdl, v1::LAUNCH_MODE_PDL}}};

template <typename A, typename B, std::size_t N>
B forward(const EnumTable<A, B, N>& table, A v, const char* what) {
  for (const auto& [a, b] : table) {
    if (a == v) return b;
  }
  throw InputError(std::string(what) + " value " + std::to_string(static_cast<int>(v)) +
                   " has no trace spelling");
}

template <typename A, typename B, std::size_t N>
A backward(const EnumTable<A, B, N>& table, B v, const char* what) {
  for (const auto& [a, b] : table) {
    if (b == v) return a;
  }
  std::string allowed;
  for (const auto& [a, b] : table) allowed += (allowed.empty() ? "" : ", ") + std::string(to_string(a));
  const std::string got = v == B{} ? "unspecified" : "unknown value " + std::to_string(static_cast<int>(v));
  throw InputError("trace scenario " + std::string(what) + " is " + got + "; allowed: " + allowed);
}

}  // namespace

v1::DType to_proto(DType v) {
  return forward(kProtoDTypes, v, "dtype");
}
v1::LseBase to_proto(LseBase v) {
  return forward(kProtoLseBases, v, "lse base");
}
v1::Strategy to_proto(Strategy v) {
  return forward(kProtoStrategies, v, "strategy");
}
v1::LaunchMode to_proto(LaunchMode v) {
  return forward(kProtoLaunchModes, v, "launch mode");
}

DType from_proto(v1::DType v) {
  return backward(kProtoDTypes, v, "dtype");
}
LseBase from_proto(v1::LseBase v) {
  return backward(kProtoLseBases, v, "lse_base");
}
Strategy from_proto(v1::Strategy v) {
  return backward(kProtoStrategies, v, "strategy");
}
LaunchMode from_proto(v1::LaunchMode v) {
  return backward(kProtoLaunchModes, v, "launch_mode");
}

v1::Scenario to_proto(const Scenario& s) {
  v1::Scenario m;
  m.set_dcp(s.dcp);
  m.set_heads(s.heads);
  m.set_kv_heads(s.kv_heads);
  m.set_head_dim(s.head_dim);
  m.set_qk_dim(s.qk_dim);
  m.set_interleave(s.interleave);
  m.set_kv_dtype(to_proto(s.kv_dtype));
  m.set_out_dtype(to_proto(s.out_dtype));
  m.set_lse_base(to_proto(s.lse_base));
  m.set_softmax_scale(s.softmax_scale);
  m.mutable_contexts()->Assign(s.contexts.begin(), s.contexts.end());
  m.set_strategy(to_proto(s.strategy));
  m.set_launch_mode(to_proto(s.launch));
  m.set_padded_rows(s.padded_rows);
  m.set_rows_per_kv(s.rows_per_kv);
  return m;
}

Scenario from_proto(const v1::Scenario& m) {
  Scenario s;
  s.dcp = m.dcp();
  s.heads = m.heads();
  s.kv_heads = m.kv_heads();
  s.head_dim = m.head_dim();
  s.qk_dim = m.qk_dim();
  s.interleave = m.interleave();
  s.kv_dtype = backward(kProtoDTypes, m.kv_dtype(), "kv_dtype");
  s.out_dtype = backward(kProtoDTypes, m.out_dtype(), "out_dtype");
  s.lse_base = from_proto(m.lse_base());
  s.softmax_scale = m.softmax_scale();
  s.contexts.assign(m.contexts().begin(), m.contexts().end());
  s.strategy = from_proto(m.strategy());
  s.launch = from_proto(m.launch_mode());
  s.padded_rows = m.padded_rows();
  s.rows_per_kv = m.rows_per_kv() == 0 ? 1 : m.rows_per_kv();  // absent: written before the field existed
  return s;
}

}  // namespace dcpsim::models
