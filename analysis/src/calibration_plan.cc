// The plan of `dcpsim hw calibrate`: stages, estimates, checkpoint paths, the --dry-run listing.
#include "dcpsim/analysis/calibration_plan.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "dcpsim/error.h"
#include "dcpsim/hw/runner.h"
#include "dcpsim/models/cost.h"
#include "dcpsim/models/sharding.h"

namespace dcpsim::analysis {
namespace {

// Per-point overheads of a sweep beyond its kernels' own time (graph capture and instantiation, buffers,
// the timeline's records), read off the H200 sweeps of 2026-12-02/03 (docs/PERFORMANCE.md): the merge grid,
// 3,528 points in 10.5 s; FlashInfer's MLA kernel, 2,992 points in 47 s; dcpsim's GQA kernel, 8,948 points
// in 219 s. The attention figure covers its eight rotated input sets (eight graphs).
constexpr double kMergePointS = 0.0028;
constexpr double kAttentionPointS = 0.012;
constexpr double kFlashInferPointS =
    0.008;  // FlashInfer's MLA: its plan is made once per shape, no rotation cost
// A step file: process-free set-up (buffers, plans, CUPTI) per strategy section, and the fp64 reference the
// check computes on the host (about 10 GFLOP/s over the machine's cores).
constexpr double kStepFileS = 0.4;
constexpr double kStepSectionS = 0.25;
constexpr double kReferenceFlops = 1e10;
// The fit re-simulates every fit section for every parameter and iteration; validation once per section.
constexpr double kFitPerSectionS = 0.15;
constexpr double kValidatePerSectionS = 0.03;
constexpr int kSectionsPerStep = 5;  // ag-rs, ag-ar, a2a, direct, row-stream (emulated)

// FlashInfer 0.7.2's FP8-KV kernels against its bf16 ones on one H100, the slowest ratio measured
// (MLA 2.1-3.2x, GQA decode 1.2-1.5x; docs/PERFORMANCE.md, "FP8 KV cache against BF16"): an fp8 point's
// estimate is the bf16 model's time so scaled (the model's 1-byte reads would be 41-70% too fast).
constexpr double kFp8MlaSlowdown = 3.2;
constexpr double kFp8GqaSlowdown = 1.5;

double cpl_attention_call_s(const hw::OpShape& s, const models::HardwareProfile& base) {
  models::AttentionShape a;
  a.heads = s.heads;
  a.kv_heads = s.kv_heads;
  a.head_dim = s.dim;
  a.qk_dim = s.qk_dim;
  a.shared_kv = s.kv_heads == 1 && s.qk_dim > s.dim;
  const std::vector<std::int64_t> rows(static_cast<std::size_t>(s.rows), s.context);
  const models::AttentionTiming t = models::decode_attention_time(base, a, rows, false);
  const double fp8 = !s.kv_fp8 ? 1.0 : a.shared_kv ? kFp8MlaSlowdown : kFp8GqaSlowdown;
  return (t.kernel_end_s + t.combine_s) * fp8;
}

double cpl_merge_call_s(const hw::SweepPointPlan& p, const hw::KernelSweepConfig& c,
                        const models::HardwareProfile& base) {
  models::MergeShape m;
  m.dcp = p.shape.dcp;
  m.rows = p.shape.rows;
  m.heads = p.shape.heads;
  m.head_dim = p.shape.dim;
  m.cold_inputs = c.cold_merge_inputs;
  m.row_stamps = c.row_stamps;
  m.rs_layout = p.shape.rs_layout;
  m.split_lse = p.shape.split_lse;
  const models::MemoryKernel k =
      p.kernel == models::TableKernel::kCorrection ? models::MemoryKernel::kCorrection
      : p.kernel == models::TableKernel::kA2aPack  ? models::MemoryKernel::kA2aPack
                                                   : models::MemoryKernel::kA2aCombine;
  double t = models::merge_kernel_price(base, k, m).seconds;
  // The eviction before each cold call reads twice the L2.
  if (c.cold_merge_inputs) t += 2 * base.gpu.l2_size.si() / base.gpu.hbm_bandwidth_measured.si();
  if (c.merge_prelude_copy_bytes > 0) t += 2e-6;
  return t;
}

std::string cpl_sweep_flags(const hw::KernelSweepConfig& c) {
  auto list = [](const auto& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
    return s;
  };
  std::string k;
  for (const std::string& x : c.kernels) k += (k.empty() ? "" : ",") + x;
  std::string out = "--kernels " + k;
  const bool att = k.find("attention") != std::string::npos;
  if (att) {
    std::string g;
    for (const hw::SweepGeometry& x : c.geometries) g += (g.empty() ? "" : ",") + hw::sweep_geometry_name(x);
    out += " --geometry " + g + " --attention " + hw::attention_impl_name(c.attention) + " --heads " +
           list(c.heads) + " --batch " + list(c.rows) + " --tokens " + list(c.tokens) + " --max-kv-gb " +
           std::to_string(c.max_kv_bytes / 1e9).substr(0, 4);
  }
  if (!att || c.kernels.size() > 1) {
    out += " --merge-dcp " + list(c.merge_dcp) + " --merge-batch " + list(c.merge_rows) + " --merge-heads " +
           list(c.merge_heads) + " --merge-heads-per-rank " + list(c.merge_heads_per_rank) +
           " --merge-head-dims " + list(c.merge_dims);
    if (c.cold_merge_inputs) out += " --merge-inputs cold";
    if (c.warm_lse) out += " --warm-lse";
    if (c.row_stamps) out += " --row-stamps";
    if (c.split_lse) out += " --split-lse";
    if (c.merge_prelude_copy_bytes > 0)
      out += " --merge-prelude-copy " + std::to_string(c.merge_prelude_copy_bytes) +
             (c.merge_prelude_copy_in_graph ? " --prelude-copy-in-graph" : "");
  }
  return out + " --reps " + std::to_string(c.reps) + " --warmup " + std::to_string(c.warmup);
}

std::uint64_t cpl_fnv1a(const std::string& s, std::uint64_t h = 1469598103934665603ULL) {
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  return h;
}

}  // namespace

std::string_view to_string(StageKind k) {
  switch (k) {
    case StageKind::kDevice:
      return "device";
    case StageKind::kTables:
      return "tables";
    case StageKind::kSteps:
      return "steps";
    case StageKind::kFit:
      return "fit";
    case StageKind::kValidate:
      return "validate";
  }
  return "?";
}

std::string hw_sweep_flags(const hw::KernelSweepConfig& sweep) {
  return cpl_sweep_flags(sweep);
}

std::string CalibrationPaths::measured_step(const std::string& set, const std::string& name) const {
  std::error_code ec;
  for (const std::string& p : {step(set, name), step(set, name) + ".gz"})
    if (std::filesystem::is_regular_file(p, ec)) return p;
  return "";
}

CalibrationPaths calibration_paths(const std::string& out) {
  const std::size_t slash = out.find_last_of('/');
  const std::string file = slash == std::string::npos ? out : out.substr(slash + 1);
  if (file.size() <= 5 || file.substr(file.size() - 5) != ".json")
    throw InputError("--out '" + out + "': expected the profile's file name, ending in .json (my-gpu.json)");
  CalibrationPaths p;
  p.dir = slash == std::string::npos ? "" : out.substr(0, slash + 1);
  p.stem = file.substr(0, file.size() - 5);
  if (p.stem.ends_with(".calibration"))
    throw InputError("--out '" + out + "': a name ending in .calibration.json is the sidecar's");
  return p;
}

double sweep_estimate_s(const hw::KernelSweepConfig& sweep, const models::HardwareProfile& base) {
  const int calls = 2 * sweep.warmup + sweep.reps;
  double total = 0.0;
  for (const hw::SweepPointPlan& p : hw::kernel_sweep_plan(sweep)) {
    if (p.kernel == models::TableKernel::kAttention) {
      const bool fi = p.shape.attention == hw::AttentionImpl::kFlashInfer;
      total += (fi ? kFlashInferPointS : kAttentionPointS) + calls * cpl_attention_call_s(p.shape, base);
    } else {
      total += (kMergePointS + calls * cpl_merge_call_s(p, sweep, base)) * (sweep.pdl ? 2.0 : 1.0);
    }
  }
  return total;
}

double step_estimate_s(const CalibrationStep& step, const models::HardwareProfile& base) {
  const models::Scenario& s = step.scenario;
  // An emulated step runs every rank's attention one after another on the GPU.
  double attention = 0.0;
  for (int r = 0; r < s.dcp; ++r) {
    std::vector<std::int64_t> local;
    for (std::int64_t c : s.contexts) local.push_back(models::local_length(c, r, s.dcp, s.interleave));
    const models::AttentionTiming t =
        models::decode_attention_time(base, models::attention_shape(s), local, false);
    attention += t.kernel_end_s + t.combine_s;
  }
  const int steps = 3 + 10 + 1;  // warm-ups, repetitions, the eager pass graphs are captured from
  const double rows = step.check_rows < 0 ? std::min(s.rows(), 16) : std::min(step.check_rows, s.rows());
  const double context = s.contexts.empty() ? 0.0 : double(s.contexts.front());
  const double reference = rows * s.heads * context * (s.qk_dim + s.head_dim) * 2.0 / kReferenceFlops;
  return kStepFileS + kSectionsPerStep * (kStepSectionS + steps * (attention + 30e-6 * s.dcp)) + reference;
}

double CalibrationPlan::estimate_s() const {
  double t = 0.0;
  for (const CalibrationStage& s : stages) t += s.estimate_s;
  return t;
}

std::string CalibrationPlan::fingerprint() const {
  std::string text = "base " + base + "\n";
  for (const CalibrationStage& s : stages) {
    text += s.name + "\n";
    if (s.kind == StageKind::kTables) text += hw_sweep_flags(s.family.sweep) + "\n";
    for (const CalibrationStep& step : s.steps) text += step.name + " " + step_flags(step) + "\n";
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(cpl_fnv1a(text)));
  return buf;
}

CalibrationPlan make_calibration_plan(const models::HardwareProfile& base, bool flashinfer,
                                      std::uint64_t holdout_seed) {
  CalibrationPlan plan;
  plan.base = base.name;
  plan.holdout_seed = holdout_seed;
  plan.stages.push_back({StageKind::kDevice, "device", {}, "", {}, 2.0, 0});
  const std::vector<TableFamily> families = table_families(flashinfer);
  for (const TableFamily& f : families) {
    CalibrationStage s{StageKind::kTables, "tables " + f.name, f, "", {}, 0.0, 0};
    s.points = static_cast<int>(hw::kernel_sweep_plan(f.sweep).size());
    s.estimate_s = sweep_estimate_s(f.sweep, base);
    plan.stages.push_back(std::move(s));
  }
  int fit_sections = 0;
  for (const auto& [set, steps] :
       {std::pair{std::string("fit"), fit_steps()}, std::pair{std::string("pdl"), pdl_steps()},
        std::pair{std::string("holdout"), holdout_steps(families, holdout_seed)}}) {
    CalibrationStage s{
        StageKind::kSteps, "steps " + set, {}, set, steps, 0.0, static_cast<int>(steps.size())};
    for (const CalibrationStep& step : steps) s.estimate_s += step_estimate_s(step, base);
    if (set != "holdout") fit_sections += kSectionsPerStep * s.points;
    plan.stages.push_back(std::move(s));
  }
  plan.stages.push_back({StageKind::kFit, "fit", {}, "", {}, kFitPerSectionS * fit_sections, 0});
  plan.stages.push_back({StageKind::kValidate,
                         "validate",
                         {},
                         "",
                         {},
                         kValidatePerSectionS * kSectionsPerStep * kHoldoutSteps,
                         0});
  return plan;
}

std::string minutes_seconds(double seconds) {
  const long s = std::lround(std::max(0.0, seconds));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
  return buf;
}

std::string describe_plan(const CalibrationPlan& plan, const CalibrationPaths& paths) {
  std::ostringstream out;
  out << "plan (base " << plan.base << ", fingerprint " << plan.fingerprint() << "):\n";
  char line[512];
  int i = 0;
  for (const CalibrationStage& s : plan.stages) {
    std::string what, file;
    switch (s.kind) {
      case StageKind::kDevice:
        what = "GPU, driver, CUDA, NCCL, clocks; device-to-device copy bandwidth";
        file = paths.work() + "device.json";
        break;
      case StageKind::kTables:
        what = std::to_string(s.points) + " points: " + s.family.prices;
        file = s.family.listed ? paths.table(s.family.name) : paths.work() + paths.table_file(s.family.name);
        break;
      case StageKind::kSteps:
        what = std::to_string(s.points) + " step files (every strategy, emulated)";
        file = paths.work() + s.set + "/";
        break;
      case StageKind::kFit:
        what = "device facts, tables, launch gaps off the GPU timeline, dcpsim calibrate on fit + pdl";
        file = paths.profile() + ", " + paths.sidecar();
        break;
      case StageKind::kValidate:
        what = "the held-out steps against the profile written";
        file = paths.work() + "validation.md";
        break;
    }
    std::snprintf(line, sizeof line, "  %2d  %-28s %7s  %s\n        -> %s\n", ++i, s.name.c_str(),
                  minutes_seconds(s.estimate_s).c_str(), what.c_str(), file.c_str());
    out << line;
  }
  for (const CalibrationStage& s : plan.stages) {
    if (s.kind != StageKind::kSteps || s.set != "holdout") continue;
    out << "held-out steps (seed " << plan.holdout_seed
        << ", drawn before any fit; off every table grid in rows "
        << "and per-rank tokens):\n";
    for (const CalibrationStep& step : s.steps)
      out << "  " << step.name << "  (" << step.origin << ")  " << step_flags(step) << "\n";
  }
  out << "estimated GPU machine time: " << minutes_seconds(plan.estimate_s())
      << " (estimates from the base profile's analytic model and the H200's per-point overheads)\n";
  return out.str();
}

}  // namespace dcpsim::analysis
