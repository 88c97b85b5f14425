#pragma once
// Measured kernel tables: kernel type × shape → measured time (median, samples, spread), with the provenance
// of the measurement (device, driver, CUDA, NCCL, clocks, date, command). A profile may carry tables; the
// simulator looks a kernel up by shape (between measured values as the table records: a power law along each
// axis by default, linear for most merge tables, along the schedule for attention; exact at measured points,
// never outside the measured hull) and prices it analytically where no table covers it.
// The format ("dcpsim-kernel-tables/1") is described in models/profiles/README.md.
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dcpsim::models {

inline constexpr std::string_view kKernelTablesFormat = "dcpsim-kernel-tables/1";

// The kernel types a table may hold. Attention includes its split-KV combine kernel (the runner times them as
// one phase). Direct write and the collectives are tabulated for multi-GPU data; the simulator does not read
// them yet.
enum class TableKernel {
  kAttention,
  kCorrection,
  kA2aPack,
  kA2aCombine,
  kDirectWrite,
  kDirectCombine,
  kCollective,
  // The decode step around attention (models/step_ops.h): a dense GEMM (out[m][n] = in[m][k] · W[k][n]) and
  // one MoE layer's fused experts for `tokens` tokens (routing, both grouped GEMMs, activation, sum).
  kGemm,
  kMoe,
};
std::string_view to_string(TableKernel k);
// "attention" | "correction" | "a2a_pack" | "a2a_combine" | "direct_write" | "direct_combine" |
// "collective" | "gemm" | "moe"; InputError listing them otherwise.
TableKernel parse_table_kernel(std::string_view s);
// The axes every table of a kernel type has, in order: attention: heads, rows, tokens (mean local tokens of
// the rank's non-empty rows); correction: dcp, rows, heads (heads on the rank); the kernels that work on
// one owner's slice of the heads (a2a_pack, a2a_combine, direct_write, direct_combine): dcp, rows,
// heads_per_rank (H / N); collectives: dcp, bytes_per_rank; gemm: m, n, k; moe: tokens (the layer's shape
// and parallelism are in the key, models/step_ops.h).
const std::vector<std::string>& table_axes(TableKernel k);
// True for the kernels whose last axis is heads_per_rank. Tables written before that axis (["dcp", "rows",
// "heads"] for these kernels) still load: their H becomes H / N.
bool heads_per_rank_axis(TableKernel k);
// True for the merge kernels (correction, A2A pack and combine, direct write and combine): memory-bound
// kernels whose tables may be read linearly (TableInterpolation::kLinear).
bool is_merge_kernel(TableKernel k);

struct TableProvenance {
  std::string device;   // e.g. "NVIDIA H200" (compared with the profile's gpu.name)
  std::string driver;   // driver version
  std::string cuda;     // CUDA runtime version
  std::string nccl;     // NCCL version ("" when no collective was measured)
  std::string clocks;   // SM/memory clock policy during the measurement
  std::string date;     // YYYY-MM-DD
  std::string command;  // how the table was made (the builder's command line)
  // Tables imported from published measurements: where they come from (repository, commit, path) and its
  // licence. Empty for dcpsim's own measurements.
  std::string source;
  std::string license;
  bool operator==(const TableProvenance&) const = default;
};

struct TablePoint {
  std::vector<double> at;  // one coordinate per axis
  double median_ns = 0.0;
  int samples = 0;  // repetitions behind the median (summed over merged measurements)
  double min_ns = 0.0;
  double max_ns = 0.0;
  bool operator==(const TablePoint&) const = default;
};

// A model of the implementation one table measured, fitted on its points (`dcpsim tables` fits one for the
// implementations it imports from a profiler trace: FlashMLA, FA2/FA3, torch's SDPA, vLLM's Triton
// correction, ...): time = floor + bytes / bandwidth, bytes as the cost models count the shape's traffic
// (attention: each row's KV shard, its queries and outputs, attention_io_bytes; merge kernels: every input
// read and output written, correction_bytes and the like). It prices the shapes outside the table's grid
// (other batch sizes, DCP sizes, contexts, head counts) where the points alone cannot.
struct TableModel {
  double floor_ns = 0.0;
  double bandwidth = 0.0;  // B/s the implementation sustains
  int points = 0;          // the points it was fitted on
  double max_relative_residual = 0.0;
  double time_s(double bytes) const { return floor_ns * 1e-9 + bytes / bandwidth; }
  bool operator==(const TableModel&) const = default;
};
// Least squares over (bytes, seconds) pairs, the floor at least 0; nullopt with fewer than two distinct byte
// counts or a fit whose bandwidth is not positive.
std::optional<TableModel> fit_table_model(const std::vector<std::pair<double, double>>& bytes_seconds);

// How a table is read between its measured shapes. An attention table of a kernel whose schedule dcpsim knows
// (FlashInfer's MLA kernel, dcpsim's own; cost_attention.cc): along the schedule's features (the default), as
// a power law in each coordinate, the mean of the two, or fitted-schedule (a cost model of the schedule
// fitted on the measured rows around the shape, times the measured / modelled ratio of its neighbours). A
// merge kernel's table (correction, A2A pack and combine, direct write and combine): a power law in each
// coordinate (the default: multilinear in log time over log coordinates), or linear (multilinear in time over
// the coordinates: exact for a time affine in each size, as a bandwidth-bound kernel's bytes are). Chosen per
// table by leave-one-out on its own points (table_loo.h; `dcpsim tables --choose-interpolation`, `dcpsim hw
// calibrate`), never on held-out steps.
enum class TableInterpolation { kSchedule, kPowerLaw, kMean, kLinear, kFittedSchedule };
std::string_view to_string(TableInterpolation m);
TableInterpolation parse_table_interpolation(std::string_view s);  // InputError naming the known ones
// The readings a table of kernel `k` may record (TableInterpolation): attention schedule, power-law, mean and
// fitted-schedule;
// merge kernels power-law and linear; none for the others. kernel_tables_json refuses (std::logic_error) to
// write a table holding another, which parse_kernel_tables would refuse to read back.
std::vector<TableInterpolation> interpolation_methods(TableKernel k);

// What the code that reads a table derives from its points once (the fitted-schedule reading's costs over
// a heads value), kept until finalize() starts a fresh one (every change to a table's points must be
// followed by finalize(), which its lookups need anyway). Shared by the table's copies until then, guarded
// for threads.
struct TableMemo {
  std::mutex mutex;
  std::map<std::string, std::vector<double>> values;
};

// One kernel type and key (what must match exactly: geometry, dtype, collective op) over numeric axes.
struct KernelTable {
  TableKernel kernel = TableKernel::kAttention;
  std::string key;  // attention_table_key(), merge_table_key(), or the collective's name
  std::vector<TablePoint> points;
  // Derived at load (finalize()): the grid's values per axis (sorted, distinct) and, per grid cell in
  // row-major order, the index of its point or -1.
  std::vector<std::vector<double>> grid;
  std::vector<int> cell_point;
  // When some grid cells were not measured (each N measured at its own head counts, say): per value of the
  // first axis, the table of the points there over the remaining axes (grid[0][i] -> slices[i]). Lookups
  // that miss a corner of the whole grid interpolate slice by slice instead.
  std::vector<KernelTable> slices;
  std::optional<TableModel> model = {};  // "model" in the file: the implementation's fitted model
  // "interpolation" in the file: {"method": ..., "chosen_by": what decided it}; absent: the schedule (an
  // attention table), the power law (a merge kernel's; table_time_s reads every method but kLinear so).
  TableInterpolation interpolation = TableInterpolation::kSchedule;
  std::string interpolation_chosen_by;
  mutable std::shared_ptr<TableMemo> memo = std::make_shared<TableMemo>();  // not part of the table's value
  bool operator==(const KernelTable& o) const {
    return kernel == o.kernel && key == o.key && points == o.points && model == o.model &&
           interpolation == o.interpolation && interpolation_chosen_by == o.interpolation_chosen_by;
  }
  // Builds grid, cell_point and slices; InputError (prefixed by `where`) for NaNs, non-positive values or
  // duplicates.
  void finalize(const std::string& where);
  // The same over `axes` coordinates per point (finalize() uses table_axes(kernel)).
  void finalize(const std::string& where, std::size_t axes);
};

// One table file (or inline object) of a profile.
struct KernelTables {
  std::string origin;  // the path as the profile wrote it (relative), or "" when inline
  TableProvenance provenance;
  std::vector<KernelTable> tables;
  bool operator==(const KernelTables&) const = default;
};

// Parses a table file; every error is one line naming `where` and the JSON path, e.g.
// "h200.json: tables[0].points[3].median_ns: expected a positive number, got NaN".
KernelTables parse_kernel_tables(std::string_view json_text, std::string_view where);
KernelTables load_kernel_tables(const std::filesystem::path& path);
// Canonical text: one point per line; parse_kernel_tables(kernel_tables_json(t)) == t.
std::string kernel_tables_json(const KernelTables& t);
// Human-readable listing: provenance, each table's key, axes ranges, points and grid coverage.
std::string describe_kernel_tables(const KernelTables& t);

// Interpolated time of one table at `at` (seconds), or nullopt when `at` lies outside the grid's hull along
// some axis or a grid corner it needs was not measured. By default log(time) is multilinear in the
// log(coordinates) between the grid values around `at` (a coordinate on a grid value needs only that value):
// a power law between neighbours, which kernel times follow far better than a straight line in log(size) (a
// time linear in its size, 4x apart, is overestimated by up to 25% by the latter, not at all by the former).
// A table whose interpolation is kLinear is read multilinear in time over the coordinates instead: exact for
// a floor plus bytes / bandwidth, which the power law overestimates between neighbours (by 1-3% at the
// middle of a cell 2x apart on each of two or three axes, kernel_table_test). Either way exact at measured
// points (their median, bit for bit), always between the measured neighbours, so monotone where they are.
std::optional<double> table_time_s(const KernelTable& table, std::span<const double> at);

// The first table of `tables` with this kernel type and key that covers `at`.
std::optional<double> lookup_kernel_time_s(const std::vector<KernelTables>& tables, TableKernel kernel,
                                           std::string_view key, std::span<const double> at);

// The model of the first table with this kernel type and key that has one, at `bytes`.
std::optional<double> lookup_model_time_s(const std::vector<KernelTables>& tables, TableKernel kernel,
                                          std::string_view key, double bytes);

}  // namespace dcpsim::models
