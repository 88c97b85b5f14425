#pragma once
// The one list of profile fields (visit_profile) and the helpers its visitors share. Reading
// (profile_json.cc), writing and validating (profile_write.cc) all walk this list, so the three can never
// disagree about a field's name, dimension or allowed range.
#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "dcpsim/error.h"
#include "dcpsim/models/profile.h"

namespace dcpsim::models::detail {

using Json = nlohmann::ordered_json;
inline constexpr std::string_view kFormat = "dcpsim-profile/1";

enum class Check { kPositive, kNonNegative, kFraction, kPositiveInteger, kZeroOrOne };

template <class V, class Table>
void visit_latency_table(V& v, std::string_view algorithm, Table& table) {
  v.section(algorithm, [&] {
    for (Protocol proto : kAllProtocols) {
      auto& lat = table[static_cast<std::size_t>(proto)];
      v.section(to_string(proto), [&] {
        v.number("base_latency", lat.base_latency, Dimension::kTime, Check::kNonNegative);
        v.number("nvlink_hop_latency", lat.nvlink_hop_latency, Dimension::kTime, Check::kNonNegative);
        v.number("net_hop_latency", lat.net_hop_latency, Dimension::kTime, Check::kNonNegative);
      });
    }
  });
}

template <class V, class P>
void visit_nccl(V& v, P& n) {
  visit_latency_table(v, "ring", n.ring);
  visit_latency_table(v, "tree", n.tree);
  v.section("protocol_efficiency", [&] {
    for (Protocol proto : kAllProtocols) {
      v.number(to_string(proto), n.protocol_efficiency[static_cast<std::size_t>(proto)], Dimension::kRatio,
               Check::kFraction);
    }
  });
  v.number("ll_max_bus_bandwidth", n.ll_max_bus_bandwidth, Dimension::kBandwidth, Check::kPositive);
  v.section("nvls", [&] {
    v.flag("enabled", n.nvls_enabled);
    v.number("latency", n.nvls_latency, Dimension::kTime, Check::kNonNegative);
    v.number("bandwidth_efficiency", n.nvls_bandwidth_efficiency, Dimension::kRatio, Check::kFraction);
  });
  v.section("p2p", [&] {
    v.number("base_latency", n.p2p_base_latency, Dimension::kTime, Check::kNonNegative);
    v.number("ll_threshold", n.p2p_ll_threshold, Dimension::kBytes, Check::kNonNegative);
    v.optional_number("simple_base_latency", n.p2p_simple_base_latency, Dimension::kTime,
                      Check::kNonNegative);
  });
  // In-step terms (cost_collectives_price.h); optional, so files written before them still load.
  v.optional_number("in_step_graph", n.in_step_graph, Dimension::kTime, Check::kNonNegative);
  v.optional_number("in_step_eager", n.in_step_eager, Dimension::kTime, Check::kNonNegative);
  v.optional_number("eager_host_issue", n.eager_host_issue, Dimension::kTime, Check::kNonNegative);
  v.optional_number("arrival_skew_graph", n.arrival_skew_graph, Dimension::kTime, Check::kNonNegative);
  v.optional_number("arrival_skew_eager", n.arrival_skew_eager, Dimension::kTime, Check::kNonNegative);
}

template <class V, class S>
void visit_memory_kernel(V& v, S& k) {
  v.number("hbm_efficiency_max", k.hbm_efficiency_max, Dimension::kRatio, Check::kFraction);
  v.number("half_efficiency_bytes", k.half_efficiency_bytes, Dimension::kBytes, Check::kNonNegative);
  v.number("floor", k.floor, Dimension::kTime, Check::kNonNegative);
}

// The field list. P is HardwareProfile (reading) or const HardwareProfile (writing, validating).
template <class V, class P>
void visit_profile(V& v, P& p) {
  constexpr Dimension kTime = Dimension::kTime, kBytes = Dimension::kBytes, kBw = Dimension::kBandwidth,
                      kCount = Dimension::kCount;
  v.text("name", p.name, true);
  v.text("description", p.description, false);
  v.section("gpu", [&] {
    v.text("name", p.gpu.name, true);
    v.text_list("devices", p.gpu.devices);
    v.number("sm_count", p.gpu.sm_count, kCount, Check::kPositiveInteger);
    v.number("hbm_capacity", p.gpu.hbm_capacity, kBytes, Check::kPositive);
    v.number("hbm_bandwidth_spec", p.gpu.hbm_bandwidth_spec, kBw, Check::kPositive);
    v.number("hbm_bandwidth_measured", p.gpu.hbm_bandwidth_measured, kBw, Check::kPositive);
    v.number("l2_size", p.gpu.l2_size, kBytes, Check::kPositive);
  });
  v.section("topology", [&] {
    v.number("gpus_per_nvlink_domain", p.topology.gpus_per_nvlink_domain, kCount, Check::kPositiveInteger);
    v.number("gpus_per_node", p.topology.gpus_per_node, kCount, Check::kPositiveInteger);
  });
  v.section("nvlink", [&] {
    v.number("bandwidth", p.nvlink.bandwidth, kBw, Check::kPositive);
    v.number("measured_bandwidth", p.nvlink.measured_bandwidth, kBw, Check::kPositive);
    v.number("hop_latency", p.nvlink.hop_latency, kTime, Check::kNonNegative);
    v.optional_number("store_bandwidth", p.nvlink.store_bandwidth, kBw, Check::kPositive);
  });
  v.section("internode", [&] {
    v.number("bandwidth", p.internode.bandwidth, kBw, Check::kPositive);
    v.number("latency", p.internode.latency, kTime, Check::kNonNegative);
  });
  v.section("launch", [&] {
    v.number("cpu_issue_eager", p.launch.cpu_issue_eager, kTime, Check::kNonNegative);
    v.number("cpu_issue_graph", p.launch.cpu_issue_graph, kTime, Check::kNonNegative);
    v.number("cpu_issue_pdl", p.launch.cpu_issue_pdl, kTime, Check::kNonNegative);
    v.number("gpu_launch_latency", p.launch.gpu_launch_latency, kTime, Check::kNonNegative);
    v.number("dependent_gap", p.launch.dependent_gap, kTime, Check::kNonNegative);
    v.number("dependent_gap_pdl", p.launch.dependent_gap_pdl, kTime, Check::kNonNegative);
    v.optional_number("dependent_gap_eager", p.launch.dependent_gap_eager, kTime, Check::kNonNegative);
    v.number("kernel_after_copy_node", p.launch.kernel_after_copy_node, kTime, Check::kNonNegative);
    for (MemoryKernel k : kAfterCopyKernels) {
      v.optional_number("kernel_after_copy_node_" + std::string(to_string(k)),
                        p.launch.after_copy_node[static_cast<std::size_t>(k)], kTime, Check::kNonNegative);
    }
    for (MemoryKernel k : kPdlChainKernels) {
      v.optional_number("pdl_saving_" + std::string(to_string(k)),
                        p.launch.pdl_saving[static_cast<std::size_t>(k)], kTime, Check::kNonNegative);
    }
    for (MemoryKernel k : kPdlChainKernels) {
      v.optional_number("graph_saving_" + std::string(to_string(k)),
                        p.launch.graph_saving[static_cast<std::size_t>(k)], kTime, Check::kNonNegative);
    }
    v.optional_number("pdl_saving_attention", p.launch.pdl_saving_attention, kTime, Check::kNonNegative);
    v.optional_number("event_pair", p.launch.event_pair, kTime, Check::kNonNegative);
    v.optional_number("event_gap", p.launch.event_gap, kTime, Check::kNonNegative);
  });
  v.section("kernel", [&] {
    visit_memory_kernel(v, p.kernel);
    v.optional_number("l2_dirty_writeback", p.kernel.l2_dirty_writeback, Dimension::kRatio,
                      Check::kNonNegative);
    for (MemoryKernel k : kAllMemoryKernels) {
      v.optional_section(to_string(k), p.kernel.per_type[static_cast<std::size_t>(k)],
                         [&](auto& spec) { visit_memory_kernel(v, spec); });
    }
  });
  v.section("attention", [&] {
    v.number("work_unit_tokens", p.attention.work_unit_tokens, kCount, Check::kPositiveInteger);
    v.number("ctas_per_sm", p.attention.ctas_per_sm, kCount, Check::kPositiveInteger);
    v.number("heads_per_cta", p.attention.heads_per_cta, kCount, Check::kPositiveInteger);
    v.number("cta_overhead", p.attention.cta_overhead, kTime, Check::kNonNegative);
    v.number("max_cta_bandwidth", p.attention.max_cta_bandwidth, kBw, Check::kPositive);
    v.number("floor", p.attention.floor, kTime, Check::kNonNegative);
    v.number("tensor_rate", p.attention.tensor_rate, Dimension::kComputeRate, Check::kPositive);
    v.optional_number("dcpsim_block_bandwidth", p.attention.dcpsim_block_bandwidth, kBw, Check::kPositive);
    v.optional_section("triton_mla", p.attention.triton_mla, [&](auto& t) {
      v.number("block_h", t.block_h, kCount, Check::kPositiveInteger);
      v.number("mma_min_heads", t.mma_min_heads, kCount, Check::kPositiveInteger);
      v.number("split_target", t.split_target, kCount, Check::kPositiveInteger);
      v.number("max_splits", t.max_splits, kCount, Check::kPositiveInteger);
      v.number("ctas_per_sm", t.ctas_per_sm, kCount, Check::kPositiveInteger);
      v.number("sm120_fp8_table", t.sm120_fp8_table, kCount, Check::kZeroOrOne);
      v.number("tensor_rate", t.tensor_rate, Dimension::kComputeRate, Check::kPositive);
    });
  });
  v.section("nccl", [&] { visit_nccl(v, p.nccl); });
  v.section("signal", [&] {
    v.number("flag_write_latency", p.signal.flag_write_latency, kTime, Check::kNonNegative);
    v.number("poll_interval", p.signal.poll_interval, kTime, Check::kNonNegative);
    v.number("epoch_handshake", p.signal.epoch_handshake, kTime, Check::kNonNegative);
  });
  v.tables("tables", p.tables);
  v.comm_tables("comm_tables", p.comm_tables);
}

inline std::string dimension_units(Dimension d) {
  std::string out;
  for (Unit u : {Unit::kCount, Unit::kRatio, Unit::kBytes, Unit::kKB, Unit::kMB, Unit::kGB, Unit::kKiB,
                 Unit::kMiB, Unit::kGiB, Unit::kBps, Unit::kGBps, Unit::kTBps, Unit::kGbps, Unit::kSeconds,
                 Unit::kMilliseconds, Unit::kMicroseconds, Unit::kNanoseconds, Unit::kFlops, Unit::kTFlops}) {
    if (dimension_of(u) == d) out += (out.empty() ? "" : ", ") + std::string(to_string(u));
  }
  return out;
}

inline std::string_view dimension_name(Dimension d) {
  switch (d) {
    case Dimension::kCount:
      return "count";
    case Dimension::kRatio:
      return "ratio";
    case Dimension::kBytes:
      return "size";
    case Dimension::kBandwidth:
      return "bandwidth";
    case Dimension::kTime:
      return "time";
    case Dimension::kComputeRate:
      return "compute rate";
  }
  return "?";
}

// Empty when `value` passes `check`, otherwise what was expected.
inline std::string check_value(double value, Check check) {
  if (!std::isfinite(value)) return "a finite number";
  switch (check) {
    case Check::kPositive:
      return value > 0 ? "" : "a positive number";
    case Check::kNonNegative:
      return value >= 0 ? "" : "a non-negative number";
    case Check::kFraction:
      return value > 0 && value <= 1 ? "" : "a ratio in (0, 1]";
    case Check::kPositiveInteger:
      return value >= 1 && value == std::floor(value) ? "" : "a positive integer";
    case Check::kZeroOrOne:
      return value == 0 || value == 1 ? "" : "0 or 1";
  }
  return "";
}

// Physical bounds on every profile quantity, in SI units: far beyond any real GPU on either side, close
// enough that sizes and times derived from them stay finite and SimGrid's clock stays exact. A launch latency
// of 1e300 s, 1e18 SMs or an NVLink bandwidth of 1e-300 B/s is a typo, not hardware, and is refused when the
// profile is loaded rather than when a simulation fails later. Zero stays allowed where the field allows it
// (a latency of 0). Returns "" when `q` is within bounds, else what is allowed ("at most 1 PB/s").
inline std::string physical_bound(const Quantity& q, Dimension dim, Check check) {
  const double si = q.si();
  const bool positive = check == Check::kPositive || check == Check::kPositiveInteger;
  switch (dim) {
    case Dimension::kTime:
      return si <= 10.0 ? "" : "at most 10 s";
    case Dimension::kBandwidth:
      if (positive && si < 1e6) return "at least 1 MB/s";
      return si <= 1e15 ? "" : "at most 1 PB/s";
    case Dimension::kBytes:
      if (positive && si < 1024) return "at least 1 KiB";
      return si <= 1e15 ? "" : "at most 1 PB";
    case Dimension::kCount:
      return si <= 1e6 ? "" : "at most 1e6";
    case Dimension::kRatio:
      return "";
    case Dimension::kComputeRate:  // FLOP/s: a GB200 does about 2.5e15 dense bf16
      if (positive && si < 1e9) return "at least 1e9 FLOP/s";
      return si <= 1e18 ? "" : "at most 1e18 FLOP/s";
  }
  return "";
}

// Walks the tree of section names so every error can name its field.
class PathTracker {
 public:
  explicit PathTracker(std::string origin) : origin_(std::move(origin)) {}
  std::string path(std::string_view key) const {
    std::string out;
    for (const std::string& s : stack_) out += s + ".";
    return out + std::string(key);
  }
  [[noreturn]] void fail(std::string_view key, const std::string& what) const {
    throw InputError(origin_ + ": " + path(key) + ": " + what);
  }
  void push(std::string_view key) { stack_.emplace_back(key); }
  void pop() { stack_.pop_back(); }
  const std::string& origin() const { return origin_; }

 private:
  std::string origin_;
  std::vector<std::string> stack_;
};

}  // namespace dcpsim::models::detail
