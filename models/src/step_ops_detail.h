#pragma once
// Shared by step_ops.cc and step_ops_layers.cc: table lookups with their provenance and the roofline.
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "dcpsim/models/kernel_table.h"
#include "dcpsim/models/model_preset.h"
#include "dcpsim/models/profile.h"

namespace dcpsim::models::detail {

// Blackwell GPUs (B200, B300, GB200): FP4 tensor cores.
bool blackwell(const HardwareProfile& p);
double tensor_rate(const HardwareProfile& p, WeightDType d);
// Roofline of `bytes` read and `flops` done by one kernel (no floor): the measured HBM bandwidth times the
// profile's streaming efficiency against the tensor rate of `d`.
double roofline(const HardwareProfile& p, WeightDType d, double bytes, double flops);

struct Found {
  double seconds = 0;
  const TableProvenance* provenance = nullptr;
};
// The first table of the profile with this kernel and key covering `at`, with the provenance of its file.
std::optional<Found> find_table(const HardwareProfile& p, TableKernel kernel, const std::string& key,
                                std::span<const double> at);
// The hull of the first table with this kernel and key: per axis, the smallest and largest value.
std::optional<std::vector<std::pair<double, double>>> table_hull(const HardwareProfile& p, TableKernel kernel,
                                                                 const std::string& key);
// "NVIDIA H200 table, published (github.com/ai-dynamo/aiconfigurator, Apache-2.0)".
std::string who(const TableProvenance& v);

}  // namespace dcpsim::models::detail
