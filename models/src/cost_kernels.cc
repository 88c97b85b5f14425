// Memory-bound kernels and the merge kernels' byte counts.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "dcpsim/error.h"
#include "dcpsim/models/cost_kernels.h"

namespace dcpsim::models {
namespace {

void check_merge_shape(const MergeShape& m, bool scatters) {
  if (m.dcp < 1 || m.rows < 0 || m.heads < 1 || m.head_dim < 1) {
    throw InputError("merge shape: dcp " + std::to_string(m.dcp) + ", rows " + std::to_string(m.rows) +
                     ", heads " + std::to_string(m.heads) + ", head_dim " + std::to_string(m.head_dim) +
                     ": expected dcp >= 1, rows >= 0, heads >= 1, head_dim >= 1");
  }
  if (scatters && m.heads % m.dcp != 0) {
    throw InputError("merge shape: heads " + std::to_string(m.heads) + " not divisible by dcp " +
                     std::to_string(m.dcp) + " (the strategy scatters heads: H must be a multiple of N)");
  }
}

// Common factors of the byte formulas, as doubles so that large shapes cannot overflow.
struct Dims {
  double n, b, h, d, out;
};
Dims dims(const MergeShape& m) {
  return {double(m.dcp), double(m.rows), double(m.heads), double(m.head_dim),
          double(dtype_bytes(m.out_dtype))};
}

constexpr double kLseBytes = 4.0;   // LSEs are fp32 everywhere (SPEC)
constexpr double kFlagBytes = 8.0;  // an epoch-stamped 64-bit flag per peer

}  // namespace

double hbm_efficiency(const MemoryKernelSpec& k, double bytes) {
  if (bytes <= 0) return 0.0;
  return k.hbm_efficiency_max.si() * bytes / (bytes + k.half_efficiency_bytes.si());
}
double hbm_efficiency(const HardwareProfile& p, double bytes) {
  return hbm_efficiency(p.kernel, bytes);
}

namespace {
// floor + bytes / (bw · max · bytes / (bytes + half)) = floor + (bytes + half) / (bw · max): an affine model,
// so a kernel never gets cheaper by moving more bytes.
double memory_time(const MemoryKernelSpec& k, double hbm_bandwidth, double bytes) {
  if (bytes < 0) throw InputError("memory kernel: bytes must be >= 0, got " + std::to_string(bytes));
  if (bytes == 0) return k.floor.si();
  return k.floor.si() + bytes / (hbm_bandwidth * hbm_efficiency(k, bytes));
}
}  // namespace

double memory_kernel_time(const HardwareProfile& p, double bytes) {
  return memory_time(p.kernel, p.gpu.hbm_bandwidth_measured.si(), bytes);
}
double memory_kernel_time(const HardwareProfile& p, MemoryKernel k, double bytes) {
  return memory_time(p.kernel.of(k), p.gpu.hbm_bandwidth_measured.si(), bytes);
}

std::string_view to_string(FigureSource s) {
  return s == FigureSource::kTable ? "table" : s == FigureSource::kMeasured ? "measured" : "analytic";
}

MergeShape merge_shape(const Scenario& s) {
  MergeShape m{s.dcp, s.merge_rows(), s.heads, s.head_dim, s.out_dtype, false};
  m.rs_layout = s.strategy == Strategy::kAgRs;        // AG+RS corrects into the reduce-scatter's head blocks
  m.split_lse = s.strategy == Strategy::kA2aTwoCall;  // the LSEs travel in a buffer of their own
  m.impl = s.merge_impl;
  return m;
}

int packed_lse_lanes(DType out_dtype) {
  return dtype_bytes(out_dtype) == 2 ? 2 : 1;
}

// N = 1 runs no merge kernel at all (SPEC: the local result is the result), so every merge cost is 0 there.
double correction_bytes(const MergeShape& m) {
  check_merge_shape(m, false);
  if (m.dcp == 1) return 0.0;
  const Dims x = dims(m);
  return kLseBytes * x.n * x.b * x.h + 2.0 * x.b * x.h * x.d * x.out;
}

double a2a_buffer_bytes(const MergeShape& m) {
  check_merge_shape(m, true);
  const Dims x = dims(m);
  return x.b * x.h * (x.d + packed_lse_lanes(m.out_dtype)) * x.out;
}

double a2a_pack_bytes(const MergeShape& m) {
  check_merge_shape(m, true);
  if (m.dcp == 1) return 0.0;
  const Dims x = dims(m);
  return x.b * x.h * x.d * x.out + kLseBytes * x.b * x.h + a2a_buffer_bytes(m);
}

double unpack_combine_bytes(const MergeShape& m) {
  check_merge_shape(m, true);
  if (m.dcp == 1) return 0.0;
  const Dims x = dims(m);
  return a2a_buffer_bytes(m) + x.b * (x.h / x.n) * x.d * x.out;
}

double direct_combine_bytes(const MergeShape& m) {
  check_merge_shape(m, true);
  if (m.dcp == 1) return 0.0;
  const Dims x = dims(m);
  return x.n * x.b * (x.h / x.n) * (x.d * x.out + kLseBytes) + x.n * kFlagBytes +
         x.b * (x.h / x.n) * x.d * x.out;
}

// The analytic times use each kernel type's own numbers (kernel.<type>, else the shared kernel.*).
double correction_time(const HardwareProfile& p, const MergeShape& m) {
  const double bytes = correction_bytes(m);  // validates the shape even when N = 1
  return m.dcp == 1 ? 0.0 : memory_kernel_time(p, MemoryKernel::kCorrection, bytes);
}
double a2a_pack_time(const HardwareProfile& p, const MergeShape& m) {
  const double bytes = a2a_pack_bytes(m);  // validates the shape even when N = 1
  return m.dcp == 1 ? 0.0 : memory_kernel_time(p, MemoryKernel::kA2aPack, bytes);
}
double unpack_combine_time(const HardwareProfile& p, const MergeShape& m) {
  const double bytes = unpack_combine_bytes(m);  // validates the shape even when N = 1
  return m.dcp == 1 ? 0.0 : memory_kernel_time(p, MemoryKernel::kA2aCombine, bytes);
}
double direct_combine_time(const HardwareProfile& p, const MergeShape& m) {
  const double bytes = direct_combine_bytes(m);  // validates the shape even when N = 1
  return m.dcp == 1 ? 0.0 : memory_kernel_time(p, MemoryKernel::kDirectCombine, bytes);
}

std::string merge_table_key(const MergeShape& m) {
  return "d" + std::to_string(m.head_dim) + " " + std::string(to_string(m.out_dtype)) +
         (m.rs_layout ? " rs" : "") + (m.split_lse ? " split" : "") + (m.row_stamps ? " stamped" : "") +
         (m.pdl ? " pdl" : "") + (m.cold_inputs ? " cold" : "") +
         (m.cold_inputs && m.warm_lse ? " lse" : "") + (m.impl.empty() ? "" : " " + m.impl);
}

std::vector<double> merge_table_at(TableKernel k, const MergeShape& m) {
  // Correction works on all H heads of the rank; the others on one owner's slice of H / N heads.
  const double heads = heads_per_rank_axis(k) ? double(m.heads) / double(m.dcp) : double(m.heads);
  return {double(m.dcp), double(m.rows), heads};
}

namespace {
TableKernel table_kernel(MemoryKernel k) {
  switch (k) {
    case MemoryKernel::kCorrection:
      return TableKernel::kCorrection;
    case MemoryKernel::kA2aPack:
      return TableKernel::kA2aPack;
    case MemoryKernel::kA2aCombine:
      return TableKernel::kA2aCombine;
    case MemoryKernel::kDirectCombine:
      return TableKernel::kDirectCombine;
    case MemoryKernel::kQRepack:  // no table: the simulator prices it from kernel.q_repack
      break;
  }
  throw std::logic_error("merge_kernel_price: " + std::string(to_string(k)) + " is not a merge kernel");
}

// The key and time of the first table in merge_kernel_price's order that covers `m`.
std::optional<std::pair<std::string, double>> matched_merge_table(const HardwareProfile& p, TableKernel table,
                                                                  const MergeShape& m) {
  const std::vector<double> at = merge_table_at(table, m);
  // The exact key first; then the cold tables without warm LSEs, then without PDL, then the packed layout's
  // for a split one (cold before warm: inputs out of L2 cost more than the layout saves), then without cold
  // inputs (warm tables only), then in place for the RS layout.
  for (int relax = 0; relax < 32; ++relax) {
    MergeShape q = m;
    if (relax & 1) {
      if (!(m.cold_inputs && m.warm_lse)) continue;
      q.warm_lse = false;
    }
    if (relax & 2) {
      if (!m.pdl) continue;
      q.pdl = false;
    }
    if (relax & 4) {
      if (!m.split_lse) continue;
      q.split_lse = false;
    }
    if (relax & 8) {
      if (!m.cold_inputs || (m.warm_lse && !(relax & 1))) continue;  // once, after dropping warm LSEs
      q.cold_inputs = false;
    }
    if (relax & 16) {
      if (!m.rs_layout) continue;
      q.rs_layout = false;
    }
    const std::string key = merge_table_key(q);
    if (auto t = lookup_kernel_time_s(p.tables, table, key, at)) return std::pair{key, *t};
  }
  return std::nullopt;
}
}  // namespace

KernelPrice merge_kernel_price(const HardwareProfile& p, MemoryKernel k, const MergeShape& m) {
  double analytic = 0.0;
  const TableKernel table = table_kernel(k);
  switch (k) {
    case MemoryKernel::kCorrection:
      analytic = correction_time(p, m);
      break;
    case MemoryKernel::kA2aPack:
      analytic = a2a_pack_time(p, m);
      break;
    case MemoryKernel::kA2aCombine:
      analytic = unpack_combine_time(p, m);
      break;
    case MemoryKernel::kDirectCombine:
      analytic = direct_combine_time(p, m);
      break;
    case MemoryKernel::kQRepack:  // table_kernel() refused it above
      break;
  }
  if (m.dcp == 1 || p.tables.empty() || m.rows == 0) return {analytic, FigureSource::kAnalytic};
  if (const auto found = matched_merge_table(p, table, m)) return {found->second, FigureSource::kTable};
  // Another implementation's kernel outside its table: its model (fitted on the measured points) on this
  // shape's bytes.
  if (!m.impl.empty()) {
    const double bytes = k == MemoryKernel::kCorrection   ? correction_bytes(m)
                         : k == MemoryKernel::kA2aPack    ? a2a_pack_bytes(m)
                         : k == MemoryKernel::kA2aCombine ? unpack_combine_bytes(m)
                                                          : direct_combine_bytes(m);
    if (auto t = lookup_model_time_s(p.tables, table, merge_table_key(m), bytes))
      return {*t, FigureSource::kTable};
  }
  return {analytic, FigureSource::kAnalytic};
}

std::string merge_price_key(const HardwareProfile& p, MemoryKernel k, const MergeShape& m) {
  if (m.dcp == 1 || p.tables.empty() || m.rows == 0) return "";
  const auto found = matched_merge_table(p, table_kernel(k), m);
  return found ? found->first : "";
}

}  // namespace dcpsim::models
