// The catalogue of fittable profile numbers and their coordinates.
#include "dcpsim/analysis/fit_params.h"

#include <algorithm>
#include <array>
#include <optional>
#include <string>

#include "dcpsim/error.h"

namespace dcpsim::analysis {

using models::HardwareProfile;
using models::Protocol;
using models::Quantity;

std::string_view to_string(ParameterGroup g) {
  switch (g) {
    case ParameterGroup::kKernel:
      return "kernel";
    case ParameterGroup::kLaunch:
      return "launch";
    case ParameterGroup::kCollective:
      return "collective";
    case ParameterGroup::kSignal:
      return "signal";
  }
  return "?";
}

namespace {

double kernel_rate(const HardwareProfile& p) {
  return 1.0 / (p.gpu.hbm_bandwidth_measured.si() * p.kernel.hbm_efficiency_max.si());
}

void write_si(Quantity& q, double si) {
  q.value = si / models::si_factor(q.unit);
}

using Field = std::function<Quantity&(HardwareProfile&)>;

FitParameter time_param(std::string name, ParameterGroup g, Field f) {
  FitParameter p;
  p.name = std::move(name);
  p.coordinate = "the time itself [s]";
  p.group = g;
  p.field = std::move(f);
  return p;
}

FitParameter inverse_param(std::string name, std::string coordinate, ParameterGroup g, Field f,
                           std::function<double(const HardwareProfile&)> upper, double typical) {
  FitParameter p;
  p.name = std::move(name);
  p.coordinate = std::move(coordinate);
  p.group = g;
  p.transform = Transform::kInverse;
  p.field = std::move(f);
  p.upper_field = std::move(upper);
  p.typical = typical;
  return p;
}

// A field a profile may leave out (it then reads 0): `slot(profile)` reaches the optional, for a const
// profile too (a generic lambda); a fit creates it at 0 with `unit` and writes it. Its coordinate is the
// value itself.
template <class Slot>
FitParameter optional_param(std::string name, ParameterGroup g, models::Unit unit, Slot slot) {
  FitParameter p = time_param(std::move(name), g, [slot, unit](HardwareProfile& prof) -> Quantity& {
    std::optional<Quantity>& q = slot(prof);
    if (!q) q = Quantity{0.0, unit, "absent from the base profile"};
    return *q;
  });
  p.read = [slot, unit](const HardwareProfile& prof) -> const Quantity& {
    static const Quantity kNoTime{0.0, models::Unit::kMicroseconds, "absent from the base profile"};
    static const Quantity kNoRatio{0.0, models::Unit::kRatio, "absent from the base profile"};
    const std::optional<Quantity>& q = slot(prof);
    return q ? *q : unit == models::Unit::kRatio ? kNoRatio : kNoTime;
  };
  return p;
}

void add_kernel_parameters(std::vector<FitParameter>& out) {
  constexpr auto kK = ParameterGroup::kKernel;
  out.push_back(
      time_param("kernel.floor", kK, [](HardwareProfile& p) -> Quantity& { return p.kernel.floor; }));
  FitParameter rate;
  rate.name = "kernel.hbm_efficiency_max";
  rate.coordinate = "a = 1/(hbm_bandwidth_measured x hbm_efficiency_max) [s/B]";
  rate.group = kK;
  rate.transform = Transform::kKernelRate;
  rate.field = [](HardwareProfile& p) -> Quantity& { return p.kernel.hbm_efficiency_max; };
  rate.typical = 2.5e-13;
  out.push_back(rate);
  FitParameter half;
  half.name = "kernel.half_efficiency_bytes";
  half.coordinate = "b = half_efficiency_bytes x a [s]";
  half.group = kK;
  half.transform = Transform::kKernelHalf;
  half.field = [](HardwareProfile& p) -> Quantity& { return p.kernel.half_efficiency_bytes; };
  half.typical = 2.5e-7;
  out.push_back(half);
  out.push_back(
      time_param("attention.floor", kK, [](HardwareProfile& p) -> Quantity& { return p.attention.floor; }));
  out.push_back(time_param("attention.cta_overhead", kK,
                           [](HardwareProfile& p) -> Quantity& { return p.attention.cta_overhead; }));
  // Bounds a wave with few units (min with the kernel bandwidth's share), so only such waves identify it.
  out.push_back(inverse_param(
      "attention.max_cta_bandwidth", "1/max_cta_bandwidth [s/B]", kK,
      [](HardwareProfile& p) -> Quantity& { return p.attention.max_cta_bandwidth; }, nullptr, 1e-11));
  // Bounds the waves whose units' FLOPs outlast their bytes (MLA at many heads), so only those identify it.
  out.push_back(inverse_param(
      "attention.tensor_rate", "1/tensor_rate [s/FLOP]", kK,
      [](HardwareProfile& p) -> Quantity& { return p.attention.tensor_rate; }, nullptr, 2e-15));
  // Moves only an emulated step's large A2A packs and combines (those after an L2's worth of writes), so
  // only they identify it (a base profile without it reads 0; a fit writes it).
  FitParameter dirty = optional_param(
      "kernel.l2_dirty_writeback", kK, models::Unit::kRatio,
      [](auto& p) -> auto& { return p.kernel.l2_dirty_writeback; });
  dirty.coordinate = "the share itself";
  dirty.typical = 0.1;
  out.push_back(dirty);
}

// A kernel type's own numbers, created from the shared ones the first time a fit writes one.
models::MemoryKernelSpec& own(HardwareProfile& p, models::MemoryKernel k) {
  auto& spec = p.kernel.per_type[static_cast<std::size_t>(k)];
  if (!spec) spec = static_cast<const models::MemoryKernelSpec&>(p.kernel);
  return *spec;
}

// After the shared sets: the shared numbers then describe attention's bandwidth and the split-KV combine, and
// each merge kernel type gets its own floor and efficiency (a 1% change of a type's value moves only that
// type's kernels, so the two sets are not confounded). Not the query repack's: it is seen only inside
// FlashInfer's attention phases, whose table errors it would absorb; it is read off the GPU timeline instead
// (scripts/timeline_fit.py) and kept as the profile gives it.
void add_kernel_type_parameters(std::vector<FitParameter>& out) {
  for (models::MemoryKernel k : models::kAllMemoryKernels) {
    if (k == models::MemoryKernel::kQRepack) continue;
    const std::string name = "kernel." + std::string(models::to_string(k));
    FitParameter floor = time_param(name + ".floor", ParameterGroup::kKernel,
                                    [k](HardwareProfile& p) -> Quantity& { return own(p, k).floor; });
    floor.read = [k](const HardwareProfile& p) -> const Quantity& { return p.kernel.of(k).floor; };
    out.push_back(floor);
    FitParameter rate;
    rate.name = name + ".hbm_efficiency_max";
    rate.coordinate = "a = 1/(hbm_bandwidth_measured x " + name + ".hbm_efficiency_max) [s/B]";
    rate.group = ParameterGroup::kKernel;
    rate.transform = Transform::kKernelRate;
    rate.field = [k](HardwareProfile& p) -> Quantity& { return own(p, k).hbm_efficiency_max; };
    rate.read = [k](const HardwareProfile& p) -> const Quantity& {
      return p.kernel.of(k).hbm_efficiency_max;
    };
    rate.typical = 2.5e-13;
    out.push_back(rate);
  }
}

// An optional profile number (absent: 0): created the first time a fit writes it, read as 0 until then.
// `fallback`: what the model uses while the number is absent (default 0).
FitParameter optional_time_param(std::string name, ParameterGroup g,
                                 std::function<std::optional<Quantity>&(HardwareProfile&)> f,
                                 std::function<Quantity(const HardwareProfile&)> fallback = nullptr) {
  FitParameter p;
  p.name = std::move(name);
  p.coordinate = "the time itself [s]";
  p.group = g;
  const auto absent = [fallback](const HardwareProfile& prof) {
    return fallback ? fallback(prof) : Quantity{0, models::Unit::kMicroseconds, "absent from the profile: 0"};
  };
  p.field = [f, absent](HardwareProfile& prof) -> Quantity& {
    std::optional<Quantity>& q = f(prof);
    if (!q) q = absent(prof);
    return *q;
  };
  p.read = [f, absent](const HardwareProfile& prof) -> const Quantity& {
    thread_local Quantity shown;
    const std::optional<Quantity>& q = f(const_cast<HardwareProfile&>(prof));
    if (q) return *q;
    shown = absent(prof);
    return shown;
  };
  return p;
}

void add_launch_parameters(std::vector<FitParameter>& out) {
  constexpr auto kL = ParameterGroup::kLaunch;
  out.push_back(time_param("launch.gpu_launch_latency", kL,
                           [](HardwareProfile& p) -> Quantity& { return p.launch.gpu_launch_latency; }));
  out.push_back(time_param("launch.dependent_gap", kL,
                           [](HardwareProfile& p) -> Quantity& { return p.launch.dependent_gap; }));
  out.push_back(time_param("launch.dependent_gap_pdl", kL,
                           [](HardwareProfile& p) -> Quantity& { return p.launch.dependent_gap_pdl; }));
  // launch.dependent_gap_eager is not fitted: on eager steps it trades against the CPU issue costs and the
  // launch latency (the host is behind the GPU there), so it is read off the GPU timeline instead
  // (scripts/timeline_fit.py) and kept as the profile gives it.
  // Seen only in PDL steps' merge kernels (a base profile without them reads 0; a fit writes them).
  for (models::MemoryKernel k : models::kPdlChainKernels) {
    const auto i = static_cast<std::size_t>(k);
    out.push_back(optional_param(
        "launch.pdl_saving_" + std::string(models::to_string(k)), kL,
        models::Unit::kMicroseconds, [i](auto& p) -> auto& { return p.launch.pdl_saving[i]; }));
  }
  out.push_back(optional_param(
      "launch.pdl_saving_attention", kL, models::Unit::kMicroseconds,
      [](auto& p) -> auto& { return p.launch.pdl_saving_attention; }));
  // Seen only in graph-launched emulated steps' merge kernels (absent: 0).
  for (models::MemoryKernel k : models::kPdlChainKernels) {
    const auto i = static_cast<std::size_t>(k);
    out.push_back(optional_param(
        "launch.graph_saving_" + std::string(models::to_string(k)), kL,
        models::Unit::kMicroseconds, [i](auto& p) -> auto& { return p.launch.graph_saving[i]; }));
  }
  // A merge kernel's own term after an emulated collective's copy node: absent, it reads the shared
  // launch.kernel_after_copy_node (which a fit creates it from).
  for (models::MemoryKernel k : models::kAfterCopyKernels) {
    const auto i = static_cast<std::size_t>(k);
    out.push_back(optional_time_param(
        "launch.kernel_after_copy_node_" + std::string(models::to_string(k)), kL,
        [i](HardwareProfile& p) -> std::optional<Quantity>& { return p.launch.after_copy_node[i]; },
        [](const HardwareProfile& p) { return p.launch.kernel_after_copy_node; }));
  }
  out.push_back(time_param("launch.cpu_issue_graph", kL,
                           [](HardwareProfile& p) -> Quantity& { return p.launch.cpu_issue_graph; }));
  out.push_back(time_param("launch.cpu_issue_pdl", kL,
                           [](HardwareProfile& p) -> Quantity& { return p.launch.cpu_issue_pdl; }));
  out.push_back(time_param("launch.cpu_issue_eager", kL,
                           [](HardwareProfile& p) -> Quantity& { return p.launch.cpu_issue_eager; }));
}

void add_collective_parameters(std::vector<FitParameter>& out) {
  constexpr auto kC = ParameterGroup::kCollective;
  out.push_back(inverse_param(
      "nvlink.measured_bandwidth", "1/measured_bandwidth [s/B]", kC,
      [](HardwareProfile& p) -> Quantity& { return p.nvlink.measured_bandwidth; },
      [](const HardwareProfile& p) { return p.nvlink.bandwidth.si(); }, 2.5e-12));
  constexpr std::array<const char*, 3> kProto = {"ll", "ll128", "simple"};
  for (std::size_t i = 0; i < kProto.size(); ++i) {
    const std::string proto = kProto[i];
    out.push_back(time_param("nccl.ring." + proto + ".base_latency", kC,
                             [i](HardwareProfile& p) -> Quantity& { return p.nccl.ring[i].base_latency; }));
    // A step over NVLink takes at least the NVLink hop the simulator's routes carry.
    FitParameter hop =
        time_param("nccl.ring." + proto + ".nvlink_hop_latency", kC,
                   [i](HardwareProfile& p) -> Quantity& { return p.nccl.ring[i].nvlink_hop_latency; });
    hop.lower_field = [](const HardwareProfile& p) { return p.nvlink.hop_latency.si(); };
    out.push_back(hop);
    out.push_back(time_param("nccl.tree." + proto + ".base_latency", kC,
                             [i](HardwareProfile& p) -> Quantity& { return p.nccl.tree[i].base_latency; }));
  }
  for (std::size_t i : {std::size_t(0), std::size_t(1)}) {  // Simple is the reference: efficiency 1
    out.push_back(inverse_param(
        "nccl.protocol_efficiency." + std::string(kProto[i]), "1/efficiency", kC,
        [i](HardwareProfile& p) -> Quantity& { return p.nccl.protocol_efficiency[i]; },
        [](const HardwareProfile&) { return 1.0; }, 1.0));
  }
  out.push_back(inverse_param(
      "nccl.ll_max_bus_bandwidth", "1/ll_max_bus_bandwidth [s/B]", kC,
      [](HardwareProfile& p) -> Quantity& { return p.nccl.ll_max_bus_bandwidth; }, nullptr, 1e-11));
  out.push_back(time_param("nccl.p2p.base_latency", kC,
                           [](HardwareProfile& p) -> Quantity& { return p.nccl.p2p_base_latency; }));
  out.push_back(time_param("nccl.nvls.latency", kC,
                           [](HardwareProfile& p) -> Quantity& { return p.nccl.nvls_latency; }));
  out.push_back(inverse_param(
      "internode.bandwidth", "1/bandwidth [s/B]", kC,
      [](HardwareProfile& p) -> Quantity& { return p.internode.bandwidth; }, nullptr, 2e-11));
  out.push_back(time_param("internode.latency", kC,
                           [](HardwareProfile& p) -> Quantity& { return p.internode.latency; }));
}

// What a collective costs inside a step beyond nccl-tests' steady state, and the step's own arrival skew and
// eager host time: identified by real multi-GPU steps only.
void add_in_step_parameters(std::vector<FitParameter>& out) {
  constexpr auto kC = ParameterGroup::kCollective;
  out.push_back(optional_time_param(
      "nccl.in_step_graph", kC,
      [](HardwareProfile& p) -> std::optional<Quantity>& { return p.nccl.in_step_graph; }));
  out.push_back(optional_time_param(
      "nccl.in_step_eager", kC,
      [](HardwareProfile& p) -> std::optional<Quantity>& { return p.nccl.in_step_eager; }));
  out.push_back(optional_time_param(
      "nccl.eager_host_issue", kC,
      [](HardwareProfile& p) -> std::optional<Quantity>& { return p.nccl.eager_host_issue; },
      [](const HardwareProfile& p) { return p.launch.cpu_issue_eager; }));
  out.push_back(optional_time_param(
      "nccl.p2p.simple_base_latency", kC,
      [](HardwareProfile& p) -> std::optional<Quantity>& { return p.nccl.p2p_simple_base_latency; },
      [](const HardwareProfile& p) { return p.nccl.p2p_base_latency; }));
  out.push_back(optional_time_param(
      "nccl.arrival_skew_graph", kC,
      [](HardwareProfile& p) -> std::optional<Quantity>& { return p.nccl.arrival_skew_graph; }));
  out.push_back(optional_time_param(
      "nccl.arrival_skew_eager", kC,
      [](HardwareProfile& p) -> std::optional<Quantity>& { return p.nccl.arrival_skew_eager; }));
}

// The instrument of event-timed traces (launch.event_pair, event_gap): only such traces' figures move them.
void add_event_timing_parameters(std::vector<FitParameter>& out) {
  constexpr auto kL = ParameterGroup::kLaunch;
  out.push_back(optional_time_param(
      "launch.event_pair", kL,
      [](HardwareProfile& p) -> std::optional<Quantity>& { return p.launch.event_pair; }));
  out.push_back(
      optional_time_param("launch.event_gap", kL,
                          [](HardwareProfile& p) -> std::optional<Quantity>& { return p.launch.event_gap; }));
}

void add_signal_parameters(std::vector<FitParameter>& out) {
  constexpr auto kS = ParameterGroup::kSignal;
  // What a kernel's stores into a peer reach (absent: the peer-copy bandwidth): identified by pushes.
  FitParameter store = inverse_param(
      "nvlink.store_bandwidth", "1/store_bandwidth [s/B]", kS,
      [](HardwareProfile& p) -> Quantity& {
        if (!p.nvlink.store_bandwidth) p.nvlink.store_bandwidth = p.nvlink.measured_bandwidth;
        return *p.nvlink.store_bandwidth;
      },
      [](const HardwareProfile& p) { return p.nvlink.bandwidth.si(); }, 2.5e-12);
  store.read = [](const HardwareProfile& p) -> const Quantity& {
    return p.nvlink.store_bandwidth ? *p.nvlink.store_bandwidth : p.nvlink.measured_bandwidth;
  };
  out.push_back(store);
  out.push_back(time_param("signal.flag_write_latency", kS,
                           [](HardwareProfile& p) -> Quantity& { return p.signal.flag_write_latency; }));
  out.push_back(time_param("signal.poll_interval", kS,
                           [](HardwareProfile& p) -> Quantity& { return p.signal.poll_interval; }));
  out.push_back(time_param("signal.epoch_handshake", kS,
                           [](HardwareProfile& p) -> Quantity& { return p.signal.epoch_handshake; }));
}

}  // namespace

const Quantity& FitParameter::quantity(const HardwareProfile& p) const {
  if (read) return read(p);
  // The accessor only selects a member; nothing is written through it here.
  return field(const_cast<HardwareProfile&>(p));
}

double FitParameter::value(const HardwareProfile& p) const {
  const double si = quantity(p).si();
  switch (transform) {
    case Transform::kTime:
      return si;
    case Transform::kInverse:
      return 1.0 / si;
    case Transform::kKernelRate:
      return 1.0 / (p.gpu.hbm_bandwidth_measured.si() * si);
    case Transform::kKernelHalf:
      return si * kernel_rate(p);
  }
  return si;
}

void FitParameter::assign(HardwareProfile& p, double x) const {
  Quantity& q = field(p);
  switch (transform) {
    case Transform::kTime:
      write_si(q, x);
      break;
    case Transform::kInverse:
      write_si(q, 1.0 / x);
      break;
    case Transform::kKernelRate:  // at the bound, rounding must not carry the efficiency past 1
      write_si(q, std::min(1.0, 1.0 / (x * p.gpu.hbm_bandwidth_measured.si())));
      break;
    case Transform::kKernelHalf:
      write_si(q, x / kernel_rate(p));
      break;
  }
}

double FitParameter::lower_bound(const HardwareProfile& p) const {
  switch (transform) {
    case Transform::kTime:
      return lower_field ? lower_field(p) : 0.0;
    case Transform::kKernelHalf:
      return 0.0;
    // Without a natural ceiling, a floor a thousand times below the typical value keeps the bandwidth finite
    // and within a profile's physical bounds (1 PB/s, 1e18 FLOP/s: a fit that ran to 1e-6 x typical wrote
    // profiles that no reader would load).
    case Transform::kInverse:
      return upper_field ? 1.0 / upper_field(p) : 1e-3 * typical;
    case Transform::kKernelRate:
      return 1.0 / p.gpu.hbm_bandwidth_measured.si();  // efficiency <= 1
  }
  return 0.0;
}

const std::vector<FitParameter>& fit_parameters() {
  static const std::vector<FitParameter> all = [] {
    std::vector<FitParameter> out;
    add_kernel_parameters(out);
    add_launch_parameters(out);
    add_collective_parameters(out);
    add_in_step_parameters(out);
    add_event_timing_parameters(out);
    add_signal_parameters(out);
    // After every shared number: a type's floor moves only its own kernels, so where a figure also moves
    // with a launch or signal number (an eager step's issue cost behind a merge kernel), that number is kept
    // and the type's number is the one reported as confounded.
    add_kernel_type_parameters(out);
    // Last: one NVLink hop adds to every all-to-all step and every direct push, so where those are single
    // steps it is confounded with nccl.p2p.base_latency and signal.flag_write_latency, which are fitted
    // first.
    out.push_back(time_param("nvlink.hop_latency", ParameterGroup::kCollective,
                             [](HardwareProfile& p) -> Quantity& { return p.nvlink.hop_latency; }));
    return out;
  }();
  return all;
}

bool is_in_step_parameter(std::string_view name) {
  return name.starts_with("nccl.in_step_") || name == "nccl.eager_host_issue" ||
         name.starts_with("nccl.arrival_skew_") || name.starts_with("launch.event_") ||
         name == "nvlink.store_bandwidth" || name == "nccl.p2p.simple_base_latency";
}

const FitParameter& fit_parameter(std::string_view name) {
  std::string names;
  for (const FitParameter& p : fit_parameters()) {
    if (p.name == name) return p;
    names += (names.empty() ? "" : ", ") + p.name;
  }
  throw InputError("unknown fit parameter '" + std::string(name) + "' (known: " + names + ")");
}

HardwareProfile apply_parameters(const HardwareProfile& base, const std::vector<int>& which,
                                 const std::vector<double>& values) {
  if (which.size() != values.size())
    throw RuntimeError("apply_parameters: one value per parameter is needed");
  HardwareProfile p = base;
  const auto& all = fit_parameters();
  for (std::size_t i = 0; i < which.size(); ++i)
    all.at(static_cast<std::size_t>(which[i])).assign(p, values[i]);
  return p;
}

}  // namespace dcpsim::analysis
