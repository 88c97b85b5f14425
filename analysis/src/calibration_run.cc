// `dcpsim hw calibrate`: the stages run in order, each kept in its files (calibration_run.h).
#include "dcpsim/analysis/calibration_run.h"
#include "dcpsim/dates.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <sstream>

#include "dcpsim/analysis/calibration_fit.h"
#include "dcpsim/error.h"
#include "dcpsim/hw/bench.h"
#include "dcpsim/hw/device.h"
#include "dcpsim/hw/runner.h"
#include "dcpsim/interrupt.h"
#include "dcpsim/json_limits.h"
#include "dcpsim/traces/output_file.h"
#include "dcpsim/traces/protobuf_writer.h"

namespace dcpsim::analysis {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// Thrown from inside a stage to leave it: a signal, or the budget spent.
struct CrStop {
  bool budget = false;
};

bool cr_exists(const std::string& p) {
  std::error_code ec;
  return std::filesystem::exists(p, ec);
}

std::string cr_read(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The NVIDIA kernel driver's version ("580.95.05"), or "" where /proc does not say.
std::string cr_driver_version() {
  std::ifstream f("/proc/driver/nvidia/version");
  std::string line, word;
  if (!std::getline(f, line)) return "";
  std::istringstream in(line);
  while (in >> word)
    if (!word.empty() && std::isdigit(static_cast<unsigned char>(word[0])) &&
        word.find('.') != std::string::npos && word.find_first_not_of("0123456789.") == std::string::npos)
      return word;
  return "";
}

class CrRun {
 public:
  CrRun(const CalibrateRunOptions& o, CalibrationPaths paths)
      : o_(o), paths_(std::move(paths)), start_(Clock::now()) {}

  double elapsed() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

  void say(const std::string& line) {
    if (o_.progress) o_.progress(line);
    std::ofstream(paths_.work() + "log.txt", std::ios::app) << line << "\n";
  }

  // Called often inside a stage: leaves it on a signal or once the budget is spent.
  void check() const {
    if (o_.interrupted && o_.interrupted()) throw CrStop{false};
    if (elapsed() > o_.budget_s) throw CrStop{true};
  }

  // One progress line at most every 5 s: the stage, its share done, the elapsed time and the ETA of the whole
  // run (the plan's estimate of what is left, scaled by how the estimates have held so far).
  void progress(const std::string& stage, double fraction, double stage_estimate, double left_after) {
    const double now = elapsed();
    if (now - last_line_ < 5.0 && fraction < 1.0) return;
    last_line_ = now;
    const double ratio = ratio_of(now - stage_start_, fraction * stage_estimate);
    const double eta = ((1.0 - fraction) * stage_estimate + left_after) * ratio;
    char buf[256];
    std::snprintf(buf, sizeof buf, "  %-26s %5.1f%%   elapsed %s   ETA %s", stage.c_str(), 100.0 * fraction,
                  minutes_seconds(now).c_str(), minutes_seconds(eta).c_str());
    say(buf);
  }

  double ratio_of(double actual, double estimated) const {
    const double a = measured_actual_ + actual, e = measured_estimate_ + estimated;
    return e > 5.0 ? std::clamp(a / e, 0.5, 3.0) : 1.0;
  }
  void stage_started() { stage_start_ = elapsed(); }
  void stage_finished(double estimate) {
    measured_actual_ += elapsed() - stage_start_;
    measured_estimate_ += estimate;
  }
  double ratio() const { return ratio_of(0.0, 0.0); }

  const CalibrateRunOptions& o_;
  CalibrationPaths paths_;

 private:
  Clock::time_point start_;
  double last_line_ = -10.0, stage_start_ = 0.0;
  double measured_actual_ = 0.0, measured_estimate_ = 0.0;
};

DeviceRecord cr_measure_device(const CalibrateRunOptions& o, const std::string& date) {
  const hw::DeviceInfo i = hw::device_info(o.device);
  const hw::SoftwareVersions v = hw::software_versions();
  DeviceRecord d;
  d.name = i.name;
  d.uuid = i.uuid;
  d.pci_bus_id = i.pci_bus_id;
  d.sm_count = i.sm_count;
  d.cc_major = i.cc_major;
  d.cc_minor = i.cc_minor;
  d.memory_bytes = i.memory_bytes;
  d.l2_bytes = i.l2_bytes;
  d.driver = cr_driver_version();
  if (d.driver.empty()) d.driver = "CUDA " + v.cuda_driver;
  d.cuda = v.cuda_runtime;
  d.nccl = v.nccl;
  d.clocks = "as found (application clocks not locked)";
  d.date = date;
  d.command = o.command;
  d.copy_bandwidth = hw::measure_copy_bandwidth(o.device, std::int64_t{1} << 30, 20);
  return d;
}

void cr_measure_tables(CrRun& run, const CalibrationStage& s, const DeviceRecord& d, const std::string& date,
                       double left_after) {
  hw::KernelSweepConfig c = s.family.sweep;
  c.device = run.o_.device;
  c.date = date;
  c.command = run.o_.command + " [stage " + s.name + ": dcpsim hw sweep " + hw_sweep_flags(c) + "]";
  models::KernelTables t = hw::run_kernel_sweep(c, [&](const hw::SweepProgress& p) {
    run.check();
    run.progress(s.name, double(p.done) / std::max(p.total, 1), s.estimate_s, left_after);
  });
  t.provenance.nccl = d.nccl;  // the library loaded, for the record (nothing in a sweep calls it)
  const std::string path = s.family.listed ? run.paths_.table(s.family.name)
                                           : run.paths_.work() + run.paths_.table_file(s.family.name);
  traces::write_file_atomically(path, models::kernel_tables_json(t));
}

// One step file; false (with <file>.failed.txt) when a run or its exactness check failed.
bool cr_measure_step(CrRun& run, const std::string& set, const CalibrationStep& step) {
  const std::string path = run.paths_.step(set, step.name);
  std::vector<std::string> argv = {run.o_.command, "[step " + step.name +
                                                       ": dcpsim hw run --emulate "
                                                       "--strategy all --warmup 3 --reps 10 --seed 7 " +
                                                       step_flags(step) + "]"};
  std::string failure;
  try {
    traces::ProtobufTraceWriter writer(path);
    writer.on_header(hw::measured_header(hw::ProcessMode::kEmulate, {run.o_.device}, argv));
    for (models::Strategy strategy : models::all_strategies()) {
      if (!hw::strategy_unavailable(strategy, hw::ProcessMode::kEmulate, step.scenario.dcp).empty()) continue;
      hw::RunConfig c;
      c.scenario = step.scenario;
      c.scenario.strategy = strategy;
      c.mode = hw::ProcessMode::kEmulate;
      c.devices = {run.o_.device};
      c.warmup = 3;
      c.reps = 10;
      c.seed = 7;
      c.check_rows = step.check_rows;
      c.row_stamps = step.row_stamps;
      c.padded_rows = step.padded_rows;
      const hw::RunResult r = hw::run_step(c, &writer);
      if (!r.check.passed) {
        failure = c.scenario.label() + ": merged output does not match the reference: " + r.check.summary;
        break;
      }
    }
    if (failure.empty()) writer.finish();
  } catch (const InputError& e) {
    failure = e.what();
  } catch (const RuntimeError& e) {
    failure = e.what();
  }
  if (failure.empty()) return true;
  traces::write_file_atomically(path + ".failed.txt", failure + "\n");
  run.say("  step " + step.name + " FAILED: " + failure);
  return false;
}

void cr_measure_steps(CrRun& run, const CalibrationStage& s, double left_after) {
  std::filesystem::create_directories(run.paths_.work() + s.set);
  int done = 0;
  for (const CalibrationStep& step : s.steps) {
    const std::string path = run.paths_.step(s.set, step.name);
    if (run.paths_.measured_step(s.set, step.name).empty() && !cr_exists(path + ".failed.txt")) {
      run.check();
      cr_measure_step(run, s.set, step);
    }
    run.progress(s.name, double(++done) / double(s.steps.size()), s.estimate_s, left_after);
  }
}

json cr_plan_json(const CalibrationPlan& plan, const DeviceRecord* d, const CalibrateRunOptions& o,
                  const std::string& date) {
  json stages = json::array();
  for (const CalibrationStage& s : plan.stages) stages.push_back(s.name);
  json j = {{"format", "dcpsim-calibrate-plan/1"},
            {"fingerprint", plan.fingerprint()},
            {"base", plan.base},
            {"device", d ? d->name : ""},
            {"stages", stages},
            {"date", date},
            {"command", o.command}};
  if (d) {  // the provenance every file of the run carries
    j["driver"] = d->driver;
    j["cuda"] = d->cuda;
    j["nccl"] = d->nccl;
    j["clocks"] = d->clocks;
  }
  return j;
}

// The plan.json of an earlier run must be this plan's: checkpoints of another plan or GPU would mix.
void cr_check_plan_file(const CalibrationPaths& paths, const CalibrationPlan& plan) {
  const std::string file = paths.work() + "plan.json";
  if (!cr_exists(file)) return;
  const json j = parse_json_checked<json>(cr_read(file), file);
  const std::string fp = j.is_object() ? j.value("fingerprint", "") : "";
  if (fp != plan.fingerprint())
    throw InputError(file + ": made by another plan (fingerprint " + fp + ", this one " + plan.fingerprint() +
                     ": another dcpsim build, --base or grid); run the dcpsim that made it, or remove " +
                     paths.work() + " and the tables beside it to start over");
}

}  // namespace

CalibrateRunResult run_calibration(const CalibrateRunOptions& o) {
  const CalibrationPaths paths = calibration_paths(o.out);
  if (!(o.budget_s > 0)) throw InputError("--budget must be positive");
  const std::string date = o.date.empty() ? today_utc() : o.date;
  // A file at --out that no calibration made is the user's: never overwritten.
  if (cr_exists(paths.profile()) && !cr_exists(paths.work() + "plan.json"))
    throw InputError("--out " + o.out + " exists and was not made by dcpsim hw calibrate (no " +
                     paths.work() + "plan.json): choose another name");
  const bool gpu = hw::built_with_cuda() && hw::device_count() > o.device;
  std::optional<DeviceRecord> device;
  const std::string device_file = paths.work() + "device.json";
  if (cr_exists(device_file))
    device = device_from_json(parse_json_checked<json>(cr_read(device_file), device_file), device_file);
  std::string device_name = device ? device->name : gpu ? hw::device_info(o.device).name : "";
  if (device && gpu && hw::device_info(o.device).name != device->name)
    throw InputError(device_file + ": measured on \"" + device->name + "\", this GPU is \"" +
                     hw::device_info(o.device).name + "\": resume on that GPU, or choose another --out");
  const models::HardwareProfile base = choose_base(o.base, device_name);
  const CalibrationPlan plan =
      make_calibration_plan(base, hw::built_with_flashinfer() || !hw::built_with_cuda(), o.holdout_seed);
  cr_check_plan_file(paths, plan);
  std::filesystem::create_directories(paths.work());
  interrupt::keep_checkpoint(paths.work());  // an interruption's message names what the same command resumes
  CrRun run(o, paths);
  run.say("dcpsim hw calibrate: " + paths.profile() + " from " + base.name +
          (gpu ? " on " + device_name : "") + ", plan " + plan.fingerprint() + ", estimate " +
          minutes_seconds(plan.estimate_s()) + ", budget " + minutes_seconds(o.budget_s));
  CalibrateRunResult result;
  const std::vector<bool> done = stages_done(plan, paths, device_name);
  bool ran = false;
  const int n = static_cast<int>(plan.stages.size());
  for (int i = 0; i < n; ++i) {
    const CalibrationStage& s = plan.stages[i];
    const std::string tag = "[" + std::to_string(i + 1) + "/" + std::to_string(n) + " " + s.name + "]";
    if (done[i] && !(s.kind == StageKind::kValidate && ran)) {
      run.say(tag + " done earlier");
      continue;
    }
    double left_after = 0.0;
    for (int k = i + 1; k < n; ++k) left_after += done[k] ? 0.0 : plan.stages[k].estimate_s;
    const bool measures =
        s.kind == StageKind::kDevice || s.kind == StageKind::kTables || s.kind == StageKind::kSteps;
    if (measures && !gpu) {
      result.outcome = RunOutcome::kNeedsGpu;
      result.message = "stage " + s.name + " needs the GPU (" +
                       (hw::built_with_cuda() ? "no CUDA device is visible" : hw::kBuiltWithoutCuda) +
                       "); stages done so far are kept in " + paths.work() +
                       ": run the same command on the GPU";
      return result;
    }
    if (!measures && !fit_available()) {
      result.outcome = RunOutcome::kNeedsSimulator;
      result.message =
          provisional_profile(base, *device, plan, paths, result.lines) +
          "; the fit and the held-out validation need the simulator (this dcpsim was built without "
          "SimGrid): run the same command where dcpsim has it (no GPU needed, the measurements in " +
          paths.work() + " are reused)";
      return result;
    }
    if (ran && run.elapsed() + s.estimate_s * run.ratio() > o.budget_s) {
      result.outcome = RunOutcome::kBudget;
      result.message = "budget " + minutes_seconds(o.budget_s) + ": stopped after " +
                       minutes_seconds(run.elapsed()) + ", before " + s.name + " (about " +
                       minutes_seconds(s.estimate_s * run.ratio()) + "); everything measured is kept in " +
                       paths.work() + " and beside " + paths.profile() +
                       ": run the same command again to resume";
      return result;
    }
    if (i == 0 || !cr_exists(paths.work() + "plan.json"))
      traces::write_file_atomically(paths.work() + "plan.json",
                                    cr_plan_json(plan, device ? &*device : nullptr, o, date).dump(2) + "\n");
    run.say(tag + " estimate " + minutes_seconds(s.estimate_s));
    run.stage_started();
    try {
      switch (s.kind) {
        case StageKind::kDevice:
          device = cr_measure_device(o, date);
          traces::write_file_atomically(device_file, device_json(*device).dump(2) + "\n");
          traces::write_file_atomically(paths.work() + "plan.json",
                                        cr_plan_json(plan, &*device, o, date).dump(2) + "\n");
          device_name = device->name;
          break;
        case StageKind::kTables:
          try {
            cr_measure_tables(run, s, *device, date, left_after);
          } catch (const RuntimeError& e) {
            if (s.family.listed) throw;
            // A family the profile does not list (the after-copy delay: it needs the GPU timeline) is not
            // worth the run: the number it gives stays the base's, and the log says why.
            const std::string path = paths.work() + paths.table_file(s.family.name);
            traces::write_file_atomically(path + ".failed.txt", std::string(e.what()) + "\n");
            run.say("  " + s.name + " FAILED (the profile keeps the base's number): " + e.what());
          }
          break;
        case StageKind::kSteps:
          cr_measure_steps(run, s, left_after);
          break;
        case StageKind::kFit:
          std::filesystem::remove(paths.work() + "validation.md");
          fit_stage(base, *device, plan, paths, o, date, result.lines);
          break;
        case StageKind::kValidate:
          result.validation = validate_stage(paths, o, result.lines);
          break;
      }
    } catch (const CrStop& stop) {
      result.outcome = stop.budget ? RunOutcome::kBudget : RunOutcome::kInterrupted;
      result.message =
          std::string(stop.budget ? "budget " + minutes_seconds(o.budget_s) + " spent" : "interrupted") +
          " during " + s.name +
          " (its partial results are not kept; finished steps are): " + std::to_string(i) + " of " +
          std::to_string(n) + " stages done, kept in " + paths.work() + " and beside " + paths.profile() +
          ": run the same command again to resume";
      return result;
    }
    run.stage_finished(s.estimate_s);
    ran = true;
    run.say(tag + " done in " + minutes_seconds(run.elapsed()) + " so far");
  }
  if (!result.validation && cr_exists(paths.work() + "validation.md"))
    result.lines.push_back("validated earlier: " + paths.work() + "validation.md");
  result.message = "wrote " + paths.profile() + " (tables beside it, sidecar " + paths.sidecar() + ") in " +
                   minutes_seconds(run.elapsed());
  return result;
}

std::string describe_calibration(const CalibrateRunOptions& o) {
  const CalibrationPaths paths = calibration_paths(o.out);
  std::optional<DeviceRecord> device;
  const std::string device_file = paths.work() + "device.json";
  if (cr_exists(device_file))
    device = device_from_json(parse_json_checked<json>(cr_read(device_file), device_file), device_file);
  const bool gpu = hw::built_with_cuda() && hw::device_count() > o.device;
  const std::string name = device ? device->name : gpu ? hw::device_info(o.device).name : "";
  const models::HardwareProfile base = choose_base(o.base, name);
  const CalibrationPlan plan =
      make_calibration_plan(base, hw::built_with_flashinfer() || !hw::built_with_cuda(), o.holdout_seed);
  std::string out = describe_plan(plan, paths);
  const std::vector<bool> done = stages_done(plan, paths, name);
  double left = 0.0;
  std::string kept;
  for (std::size_t i = 0; i < done.size(); ++i) {
    if (done[i])
      kept += (kept.empty() ? "" : ", ") + plan.stages[i].name;
    else
      left += plan.stages[i].estimate_s;
  }
  if (!kept.empty()) out += "done earlier (kept): " + kept + "\n";
  out += "left to run: " + minutes_seconds(left) + (name.empty() ? "" : " on " + name) + "; budget " +
         minutes_seconds(o.budget_s) +
         (left > o.budget_s ? " (more than one run: the same command resumes)" : "") + "\n";
  return out;
}

}  // namespace dcpsim::analysis
