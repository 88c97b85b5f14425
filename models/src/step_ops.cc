// The decode step around attention, op by op (step_ops.h): the ops of each layer kind of a model preset on
// one GPU of a TP group, and their prices from op tables, dtype ratios or the roofline.
#include "dcpsim/models/step_ops.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

#include "dcpsim/error.h"
#include "dcpsim/models/cost_collectives_price.h"
#include "step_ops_detail.h"

namespace dcpsim::models {
namespace detail {

bool blackwell(const HardwareProfile& p) {
  const std::string& n = p.gpu.name;
  return n.find("B200") != std::string::npos || n.find("B300") != std::string::npos ||
         n.find("GB2") != std::string::npos || n.find("Blackwell") != std::string::npos;
}

// The tensor rate a GEMM with `d` weights reaches: the profile's measured BF16 rate times the datasheet ratio
// of the type (FP8 2x; FP4 4x on Blackwell's FP4 tensor cores; weight-only 4-bit on Hopper computes in BF16).
double tensor_rate(const HardwareProfile& p, WeightDType d) {
  const double bf16 = p.attention.tensor_rate.si();
  switch (d) {
    case WeightDType::kBF16:
      return bf16;
    case WeightDType::kFP8:
      return 2.0 * bf16;
    case WeightDType::kNVFP4:
    case WeightDType::kMXFP4:
      return blackwell(p) ? 4.0 * bf16 : bf16;
    case WeightDType::kINT4:
      return bf16;
  }
  return bf16;
}

double roofline(const HardwareProfile& p, WeightDType d, double bytes, double flops) {
  const double bw = p.gpu.hbm_bandwidth_measured.si() * p.kernel.hbm_efficiency_max.si();
  return std::max(bytes / bw, flops / tensor_rate(p, d));
}

std::optional<Found> find_table(const HardwareProfile& p, TableKernel kernel, const std::string& key,
                                std::span<const double> at) {
  for (const KernelTables& file : p.tables) {
    for (const KernelTable& t : file.tables) {
      if (t.kernel != kernel || t.key != key) continue;
      if (auto s = table_time_s(t, at)) return Found{*s, &file.provenance};
    }
  }
  return std::nullopt;
}

std::optional<std::vector<std::pair<double, double>>> table_hull(const HardwareProfile& p, TableKernel kernel,
                                                                 const std::string& key) {
  for (const KernelTables& file : p.tables) {
    for (const KernelTable& t : file.tables) {
      if (t.kernel != kernel || t.key != key || t.grid.empty()) continue;
      std::vector<std::pair<double, double>> hull;
      for (const auto& axis : t.grid) hull.emplace_back(axis.front(), axis.back());
      return hull;
    }
  }
  return std::nullopt;
}

std::string who(const TableProvenance& v) {
  if (v.source.empty()) return v.device + " table, dcpsim hw sweep " + v.date;
  const auto at = v.source.find('@');
  return v.device + " table, published (" + v.source.substr(0, at) + ", " + v.license + ")";
}

}  // namespace detail

namespace {

using detail::find_table;
using detail::roofline;
using detail::table_hull;
using detail::who;

constexpr std::array<WeightDType, 5> kAllWeightDTypes = {
    WeightDType::kBF16, WeightDType::kFP8, WeightDType::kNVFP4, WeightDType::kMXFP4, WeightDType::kINT4};
constexpr double kGemmActivationBytes = 2.0;  // bf16 activations in and out

std::string dims(double m, double n, double k) {
  char b[96];
  std::snprintf(b, sizeof b, "[%.0f x %.0f x %.0f]", m, n, k);
  return b;
}

struct GemmLookup {
  double seconds = 0;
  std::string basis;
};

// A GEMM from the table of `d`: inside its hull directly; n or k beyond it as that many equal pieces; m or
// n/k below it at the hull's edge (the time there is the kernel's floor region, never less).
std::optional<GemmLookup> gemm_from_table(const HardwareProfile& p, WeightDType d, double m, double n,
                                          double k) {
  const std::string key(to_string(d));
  const auto hull = table_hull(p, TableKernel::kGemm, key);
  if (!hull || m > (*hull)[0].second) return std::nullopt;
  double pieces = 1.0;
  std::array<double, 3> at = {std::max(m, (*hull)[0].first), n, k};
  for (int a = 1; a < 3; ++a) {
    const double hi = (*hull)[a].second;
    if (at[a] > hi) {
      const double split = std::ceil(at[a] / hi);
      pieces *= split;
      at[a] /= split;
    }
    at[a] = std::max(at[a], (*hull)[a].first);
  }
  const auto f = find_table(p, TableKernel::kGemm, key, at);
  if (!f) return std::nullopt;
  std::string basis = "gemm " + key + " " + dims(m, n, k) + ", " + who(*f->provenance);
  if (pieces > 1) basis += ", as " + std::to_string(int(pieces)) + " pieces";
  return GemmLookup{f->seconds * pieces, basis};
}

double gemm_roofline(const HardwareProfile& p, WeightDType d, double m, double n, double k) {
  return roofline(p, d, n * k * weight_dtype_bytes(d) + m * (n + k) * kGemmActivationBytes, 2.0 * m * n * k);
}

}  // namespace

std::string_view to_string(MoeSplit s) {
  return s == MoeSplit::kTp ? "tp" : "ep";
}

MoeSplit parse_moe_split(std::string_view s) {
  if (s == "tp") return MoeSplit::kTp;
  if (s == "ep") return MoeSplit::kEp;
  throw InputError("unknown MoE split '" + std::string(s) + "' (allowed: tp, ep)");
}

std::string_view to_string(MoeComm c) {
  switch (c) {
    case MoeComm::kAllReduce:
      return "all-reduce";
    case MoeComm::kAllToAll:
      return "all-to-all";
    case MoeComm::kDeepEpLowLatency:
      return "deepep-ll";
  }
  return "?";
}

MoeComm parse_moe_comm(std::string_view s) {
  if (s == "all-reduce" || s == "allreduce" || s == "none") return MoeComm::kAllReduce;
  if (s == "all-to-all" || s == "alltoall" || s == "a2a" || s == "naive" || s == "allgather_reducescatter")
    return MoeComm::kAllToAll;
  if (s == "deepep-ll" || s == "deepep_low_latency" || s == "deepep") return MoeComm::kDeepEpLowLatency;
  throw InputError("unknown MoE token exchange '" + std::string(s) +
                   "' (allowed: all-reduce (none), all-to-all, deepep-ll (deepep_low_latency))");
}

std::string_view to_string(OpSource s) {
  switch (s) {
    case OpSource::kTable:
      return "table";
    case OpSource::kRatio:
      return "ratio";
    case OpSource::kAnalytic:
      return "analytic";
  }
  return "?";
}

std::string OpStep::provenance() const {
  if (!(seconds > 0)) return "no ops";
  char b[160];
  std::snprintf(b, sizeof b, "%.0f%% measured op tables, %.0f%% dtype ratio of a table, %.0f%% analytic",
                100.0 * seconds_by_source[0] / seconds, 100.0 * seconds_by_source[1] / seconds,
                100.0 * seconds_by_source[2] / seconds);
  return b;
}

OpPrice gemm_price(const HardwareProfile& p, WeightDType d, double m, double n, double k) {
  OpPrice o;
  o.count = 1;
  if (auto t = gemm_from_table(p, d, m, n, k)) {
    o.seconds = t->seconds;
    o.source = OpSource::kTable;
    o.basis = t->basis;
    return o;
  }
  for (const WeightDType other : kAllWeightDTypes) {
    if (other == d) continue;
    if (auto t = gemm_from_table(p, other, m, n, k)) {
      const double ratio = gemm_roofline(p, d, m, n, k) / gemm_roofline(p, other, m, n, k);
      o.seconds = t->seconds * ratio;
      o.source = OpSource::kRatio;
      char b[64];
      std::snprintf(b, sizeof b, " x %.3f (roofline %s/%s)", ratio, std::string(to_string(d)).c_str(),
                    std::string(to_string(other)).c_str());
      o.basis = t->basis + b;
      return o;
    }
  }
  o.seconds = p.kernel.floor.si() + gemm_roofline(p, d, m, n, k);
  o.source = OpSource::kAnalytic;
  o.basis = "roofline gemm " + std::string(to_string(d)) + " " + dims(m, n, k);
  return o;
}

OpPrice collective_price(const HardwareProfile& p, Collective c, int ranks, double bytes_per_rank,
                         const std::string& implementation) {
  CollectiveCall call;
  call.in_step = true;
  call.launch = LaunchMode::kGraph;
  call.implementation = implementation;
  CollectivePrice price = price_collective(p, c, ranks, bytes_per_rank, {}, call);
  std::string what = implementation.empty() ? "NCCL " + std::string(to_string(c)) : implementation;
  if (price.implementation_missing) {  // no table of the framework's kernel: NCCL's call instead
    call.implementation.clear();
    price = price_collective(p, c, ranks, bytes_per_rank, {}, call);
    what = "NCCL " + std::string(to_string(c)) + " (no " + implementation + " table on " + p.name + ")";
  }
  OpPrice o;
  o.count = 1;
  o.seconds = price.time_s;
  o.source = price.source == FigureSource::kTable ? OpSource::kTable : OpSource::kAnalytic;
  char b[64];
  std::snprintf(b, sizeof b, " of %.0f B on %d GPUs, ", bytes_per_rank, ranks);
  o.basis = what + b + price.source_text() +
            (price.table.empty() ? ", NCCL's tuning model on " + p.name : ", " + price.table) +
            (price.in_step_s > 0 ? ", + in-step term" : "");
  return o;
}

OpPrice stage_send_price(const HardwareProfile& p, const ModelPreset& model, int tokens, bool same_domain) {
  const double bytes = 2.0 * double(tokens) * double(model.config.hidden_size) * 2.0;  // hidden + residual
  if (same_domain) {
    OpPrice o = collective_price(p, Collective::kSendRecv, 2, bytes);
    o.basis = "pipeline stage send, " + o.basis;
    return o;
  }
  if (!(p.internode.bandwidth.si() > 0))
    throw InputError("pipeline stages across nodes: profile " + p.name + " has no inter-node bandwidth");
  // The same NCCL send-recv call as inside a domain (its base latency: launch, proxy, handshake), its bytes
  // over the NIC instead of NVLink.
  const double call_s = price_collective(p, Collective::kSendRecv, 2, bytes).plan.base_latency_s;
  OpPrice o;
  o.count = 1;
  o.seconds = call_s + p.internode.latency.si() + bytes / p.internode.bandwidth.si();
  o.source = OpSource::kAnalytic;
  char b[160];
  std::snprintf(
      b, sizeof b,
      "pipeline stage send of %.0f B across nodes: NCCL send-recv base latency + NIC latency + bytes / "
      "NIC bandwidth",
      bytes);
  o.basis = b;
  return o;
}

}  // namespace dcpsim::models
