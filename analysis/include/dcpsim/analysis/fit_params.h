#pragma once
// The profile numbers calibration may fit, each in the coordinate in which the simulator's times are linear
// (or nearly so), with the lower bound that keeps the profile valid.
//
// Memory-bound kernels take floor + (bytes + half) / (bw × max) (cost_kernels.cc), so their coordinates are
// the floor, a = 1/(bw × max) (seconds per byte; a >= 1/bw keeps max <= 1) and b = half × a (seconds). Decode
// attention's waves take cta_overhead + bytes × slots × (a + b / total_bytes), so the attention floor and CTA
// overhead join them linearly and b becomes identifiable from kernels of different sizes. The measured HBM
// bandwidth stays as measured: only bw × max is identifiable. NVLink bandwidth and protocol efficiencies are
// fitted as inverses (time per byte), latencies as themselves.
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "dcpsim/models/profile.h"

namespace dcpsim::analysis {

// What kind of figure identifies a parameter; emulated traces identify only kKernel and kLaunch.
enum class ParameterGroup { kKernel, kLaunch, kCollective, kSignal };
std::string_view to_string(ParameterGroup g);  // "kernel" | "launch" | "collective" | "signal"

// How a profile field maps to its fitted coordinate.
enum class Transform {
  kTime,        // the time itself, in seconds
  kInverse,     // 1 / the field in base units (a bandwidth becomes seconds per byte, an efficiency 1/eff)
  kKernelRate,  // a = 1/(hbm_bandwidth_measured × hbm_efficiency_max), shared or one kernel type's
  kKernelHalf,  // b = half_efficiency_bytes × a (needs the profile's efficiency, so it comes after
                // kKernelRate)
};

struct FitParameter {
  std::string name;        // the profile field it writes, e.g. "kernel.hbm_efficiency_max"
  std::string coordinate;  // what is fitted, e.g. "1/(hbm_bandwidth_measured x hbm_efficiency_max) [s/B]"
  ParameterGroup group = ParameterGroup::kKernel;
  Transform transform = Transform::kTime;
  std::function<models::Quantity&(models::HardwareProfile&)> field;
  // Reads the field without creating it (an optional per-kernel-type section reads the shared value until
  // a fit writes its own); absent: `field` is used for reading too.
  std::function<const models::Quantity&(const models::HardwareProfile&)> read;
  // For kInverse: the field's largest sensible value (spec bandwidth, efficiency 1), giving the coordinate's
  // lower bound; absent: the bound is 0.
  std::function<double(const models::HardwareProfile&)> upper_field;
  double typical = 1e-6;  // coordinate scale when the base value is 0
  // For kTime: the field's smallest physical value (a protocol's step over NVLink is at least one NVLink
  // hop); absent: 0.
  std::function<double(const models::HardwareProfile&)> lower_field;

  double value(const models::HardwareProfile& p) const;        // the coordinate in `p`
  void assign(models::HardwareProfile& p, double x) const;     // writes the field (unit and source kept)
  double lower_bound(const models::HardwareProfile& p) const;  // the coordinate's lower bound
  const models::Quantity& quantity(const models::HardwareProfile& p) const;
};

// Every fittable parameter, in the order in which they are applied and preferred when two are confounded
// (a parameter is set after those it depends on: b after a).
const std::vector<FitParameter>& fit_parameters();

// The numbers only real multi-GPU steps identify, and only with measured kernels (confounded with NCCL's
// latencies and the launch gaps otherwise): the in-step terms (nccl.in_step_*, eager_host_issue,
// arrival_skew_*), the event-timing terms (launch.event_*), nvlink.store_bandwidth and
// nccl.p2p.simple_base_latency (a table fit's). calibrate fits them only when CalibrateOptions::only names
// them.
bool is_in_step_parameter(std::string_view name);

// The parameter named `name`; InputError listing the names otherwise.
const FitParameter& fit_parameter(std::string_view name);

// `base` with the parameters `which` (indices into fit_parameters(), ascending) set to `values`.
models::HardwareProfile apply_parameters(const models::HardwareProfile& base, const std::vector<int>& which,
                                         const std::vector<double>& values);

}  // namespace dcpsim::analysis
