// `dcpsim hw calibrate`: the device record, the base profile, which stages are done, and the profile
// assembled from what the stages measured (calibration_run.h).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "dcpsim/analysis/calibration_run.h"
#include "dcpsim/analysis/stale_calibration.h"
#include "dcpsim/analysis/timeline_fit.h"
#include "dcpsim/error.h"
#include "dcpsim/json_limits.h"
#include "dcpsim/models/kernel_table.h"
#include "dcpsim/models/table_loo.h"
#include "dcpsim/text_file.h"
#include "dcpsim/traces/output_file.h"

namespace dcpsim::analysis {
namespace {

using nlohmann::json;

std::string cp_read(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A checkpoint file, or a table kept as X.json.gz (as models/tables/ stores them: every reader takes it).
bool cp_exists(const std::string& p) {
  std::error_code ec;
  return std::filesystem::is_regular_file(existing_or_gz(p), ec);
}

double cp_median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

const TableFamily* cp_family(const CalibrationPlan& plan, const std::string& name) {
  for (const CalibrationStage& s : plan.stages)
    if (s.kind == StageKind::kTables && s.family.name == name) return &s.family;
  return nullptr;
}

std::string cp_table_path(const CalibrationPaths& paths, const TableFamily& f) {
  return f.listed ? paths.table(f.name) : paths.work() + paths.table_file(f.name);
}

// launch.kernel_after_copy_node: the median over the after-copy sweep's points of its time less the warm
// sweep's at the same point.
std::optional<std::pair<double, int>> cp_after_copy_delay(const models::KernelTables& after,
                                                          const models::KernelTables& warm) {
  std::vector<double> d;
  for (const models::KernelTable& t : after.tables) {
    for (const models::TablePoint& p : t.points) {
      if (const auto w = models::lookup_kernel_time_s({warm}, t.kernel, t.key, p.at))
        d.push_back(p.median_ns * 1e-9 - *w);
    }
  }
  if (d.size() < 8) return std::nullopt;
  return std::pair{cp_median(d), static_cast<int>(d.size())};
}

std::string cp_us(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f us", s * 1e6);
  return buf;
}

}  // namespace

json device_json(const DeviceRecord& d) {
  return {{"format", "dcpsim-calibrate-device/1"},
          {"device", d.name},
          {"uuid", d.uuid},
          {"pci_bus_id", d.pci_bus_id},
          {"sm_count", d.sm_count},
          {"compute_capability", std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor)},
          {"memory_bytes", d.memory_bytes},
          {"l2_bytes", d.l2_bytes},
          {"driver", d.driver},
          {"cuda", d.cuda},
          {"nccl", d.nccl},
          {"clocks", d.clocks},
          {"copy_bandwidth_bytes_per_s", d.copy_bandwidth},
          {"date", d.date},
          {"command", d.command}};
}

DeviceRecord device_from_json(const json& j, const std::string& where) {
  try {
    if (j.at("format") != "dcpsim-calibrate-device/1")
      throw InputError(where + ": format: not a device record");
    DeviceRecord d;
    d.name = j.at("device").get<std::string>();
    d.uuid = j.at("uuid").get<std::string>();
    d.pci_bus_id = j.at("pci_bus_id").get<std::string>();
    d.sm_count = j.at("sm_count").get<int>();
    const std::string cc = j.at("compute_capability").get<std::string>();
    std::sscanf(cc.c_str(), "%d.%d", &d.cc_major, &d.cc_minor);
    d.memory_bytes = j.at("memory_bytes").get<std::int64_t>();
    d.l2_bytes = j.at("l2_bytes").get<std::int64_t>();
    d.driver = j.at("driver").get<std::string>();
    d.cuda = j.at("cuda").get<std::string>();
    d.nccl = j.at("nccl").get<std::string>();
    d.clocks = j.at("clocks").get<std::string>();
    d.copy_bandwidth = j.at("copy_bandwidth_bytes_per_s").get<double>();
    d.date = j.at("date").get<std::string>();
    d.command = j.at("command").get<std::string>();
    if (d.name.empty() || d.sm_count < 1 || d.l2_bytes < 1 || d.memory_bytes < 1 || !(d.copy_bandwidth > 0))
      throw InputError(where + ": a field is empty or not positive");
    return d;
  } catch (const json::exception& e) {
    throw InputError(where + ": " + e.what());
  }
}

models::HardwareProfile choose_base(const std::string& base, const std::string& device) {
  if (!base.empty()) return models::load_profile(base);
  if (device.empty())
    throw InputError(
        "no GPU here to choose a base profile for: pass --base NAME (a built-in: dcpsim profiles) or FILE");
  std::string known;
  for (const std::string& name : models::builtin_profile_names()) {
    models::HardwareProfile p = models::load_profile(name);
    if (models::profile_describes_device(p, device)) return p;
    known += (known.empty() ? "" : ", ") + name + " (" + p.gpu.name + ")";
  }
  throw InputError(
      "no built-in profile describes \"" + device + "\" (" + known +
      "): pass --base NAME for the closest GPU (its measured numbers are all replaced; NVLink and "
      "NCCL numbers are kept)");
}

std::vector<bool> stages_done(const CalibrationPlan& plan, const CalibrationPaths& paths,
                              const std::string& device) {
  std::vector<bool> done;
  for (const CalibrationStage& s : plan.stages) {
    bool ok = false;
    switch (s.kind) {
      case StageKind::kDevice:
        ok = cp_exists(paths.work() + "device.json");
        break;
      case StageKind::kTables: {
        const std::string path = cp_table_path(paths, s.family);
        if (!s.family.listed && cp_exists(path + ".failed.txt")) {  // optional, and could not be measured
          ok = true;
          break;
        }
        if (!cp_exists(path)) break;
        try {
          const models::KernelTables t = models::load_kernel_tables(path);
          ok = device.empty() || t.provenance.device == device;
        } catch (const InputError&) {
          ok = false;  // a damaged checkpoint is measured again
        }
        break;
      }
      case StageKind::kSteps:
        ok = std::all_of(s.steps.begin(), s.steps.end(), [&](const CalibrationStep& step) {
          return !paths.measured_step(s.set, step.name).empty() ||
                 cp_exists(paths.step(s.set, step.name) + ".failed.txt");
        });
        break;
      case StageKind::kFit:
        if (cp_exists(paths.profile()) && cp_exists(paths.sidecar())) {
          try {
            const json j = parse_json_checked<json>(cp_read(paths.sidecar()), paths.sidecar());
            ok = j.contains("calibrate") && j["calibrate"].value("plan", "") == plan.fingerprint();
          } catch (const InputError&) {
            ok = false;
          }
        }
        break;
      case StageKind::kValidate:
        ok = cp_exists(paths.work() + "validation.md");
        break;
    }
    done.push_back(ok);
  }
  return done;
}

models::HardwareProfile assemble_profile(const models::HardwareProfile& base, const DeviceRecord& device,
                                         const CalibrationPlan& plan, const CalibrationPaths& paths,
                                         std::vector<std::string>& notes) {
  models::HardwareProfile p = base;
  using models::Unit;
  const std::string readout = "device readout (cudaDeviceProp) of " + device.name + " " + device.uuid +
                              ", dcpsim hw calibrate " + device.date;
  if (!models::profile_describes_device(p, device.name)) {
    notes.push_back(
        "the base " + base.name + " describes " + base.gpu.name + ", not \"" + device.name +
        "\": the profile describes the GPU measured; its NVLink, NCCL and signal numbers stay the "
        "base's estimates");
    p.gpu.name = device.name;
    p.gpu.devices.clear();
  }
  if (std::find(p.gpu.devices.begin(), p.gpu.devices.end(), device.name) == p.gpu.devices.end() &&
      p.gpu.name != device.name)
    p.gpu.devices.push_back(device.name);
  p.gpu.sm_count = {double(device.sm_count), Unit::kCount, readout};
  p.gpu.l2_size = models::quantity_from_si(double(device.l2_bytes), Unit::kMiB, readout);
  p.gpu.hbm_capacity = models::quantity_from_si(double(device.memory_bytes), Unit::kGiB, readout);
  char bw[96];
  std::snprintf(bw, sizeof bw, "%.3g", device.copy_bandwidth / 1e12);
  p.gpu.hbm_bandwidth_measured =
      models::quantity_from_si(device.copy_bandwidth, Unit::kTBps,
                               "device-to-device copy of 1 GiB (bytes read + written / time) measured on " +
                                   device.name + ", dcpsim hw calibrate " + device.date);
  notes.push_back(std::string("gpu: ") + std::to_string(device.sm_count) + " SMs, L2 " +
                  std::to_string(device.l2_bytes >> 20) + " MiB, copy " + bw + " TB/s");
  // The tables, by the file name beside the profile, then the base's files none of whose tables they measure
  // again (the published op tables of the step around attention: GEMMs, MoE, norms; tables of keys the
  // command does not sweep, as the fp8-KV attention tables), kept as the base lists them. A base file with
  // any table measured again is left out whole: its other tables are of the same, older, campaign.
  std::vector<models::KernelTables> base_tables = std::move(p.tables);
  p.tables.clear();
  std::set<std::pair<models::TableKernel, std::string>> measured;
  for (const CalibrationStage& s : plan.stages) {
    if (s.kind != StageKind::kTables || !s.family.listed) continue;
    models::KernelTables t = models::load_kernel_tables(paths.table(s.family.name));
    t.origin = paths.table_file(s.family.name);
    // Each attention table of a kernel with a schedule model, and each merge table, records how it is read
    // between its measured shapes: the method its own leave-one-out reads best (models/table_loo.h), written
    // into its file.
    // One note per attention table; one per file for its merge tables (each table's `chosen_by` has the
    // figures).
    if (const std::vector<std::string> chosen = models::choose_interpolations(p, t); !chosen.empty()) {
      traces::write_file_atomically(paths.table(s.family.name), models::kernel_tables_json(t));
      for (const std::string& line : chosen)
        if (line.starts_with("[mla ") || line.starts_with("[gqa "))  // attention keys
          notes.push_back("interpolation " + line);
      int merge = 0, linear = 0;
      for (const models::KernelTable& k : t.tables) {
        if (!models::is_merge_kernel(k.kernel) || k.interpolation_chosen_by.empty()) continue;
        ++merge;
        linear += k.interpolation == models::TableInterpolation::kLinear;
      }
      if (merge > 0)
        notes.push_back("interpolation of the " + std::to_string(merge) + " merge tables of " +
                        paths.table_file(s.family.name) + ": " + std::to_string(linear) + " linear, " +
                        std::to_string(merge - linear) +
                        " power-law (leave-one-out; each table's chosen_by)");
    }
    for (const models::KernelTable& k : t.tables) measured.insert({k.kernel, k.key});
    p.tables.push_back(std::move(t));
  }
  for (models::KernelTables& t : base_tables) {
    const bool other = std::none_of(t.tables.begin(), t.tables.end(), [&](const models::KernelTable& k) {
      return measured.count({k.kernel, k.key}) > 0;
    });
    if (other && !t.origin.empty()) p.tables.push_back(std::move(t));
  }
  // Launch gaps and the query repack off the fit set's GPU timelines.
  std::vector<std::filesystem::path> fit_traces;
  for (const CalibrationStage& s : plan.stages) {
    if (s.kind != StageKind::kSteps || s.set != "fit") continue;
    for (const CalibrationStep& step : s.steps)
      if (const std::string f = paths.measured_step(s.set, step.name); !f.empty()) fit_traces.emplace_back(f);
  }
  const TimelineFit tl = fit_timelines(fit_traces);
  for (const std::string& line : apply_timeline_fit(
           tl, p,
           "the fit steps (" + paths.stem + ".calibrate/fit/; " + device.name + ", " + device.date + ")"))
    notes.push_back(line);
  // A kernel after a copy node of its graph.
  const TableFamily* after = cp_family(plan, "merge-after-copy");
  const TableFamily* warm = cp_family(plan, "merge");
  if (after && warm && cp_exists(cp_table_path(paths, *after)) && cp_exists(cp_table_path(paths, *warm))) {
    const auto d = cp_after_copy_delay(models::load_kernel_tables(cp_table_path(paths, *after)),
                                       models::load_kernel_tables(cp_table_path(paths, *warm)));
    if (d) {
      p.launch.kernel_after_copy_node =
          models::quantity_from_si(std::max(0.0, d->first), Unit::kMicroseconds,
                                   "measured on " + device.name + ", " + device.date +
                                       ": correction, A2A pack and combine after a 4 KiB "
                                       "copy node of their graph against the same calls alone, median over " +
                                       std::to_string(d->second) + " points (dcpsim hw calibrate)");
      notes.push_back("launch.kernel_after_copy_node " + cp_us(d->first) + " (" + std::to_string(d->second) +
                      " points)");
      // Each kernel's own term (fitted on the steps) starts again from this measurement, not the base's.
      p.launch.after_copy_node = {};
    }
  }
  p.name = paths.stem;
  models::validate_profile(p, paths.profile());
  return p;
}

}  // namespace dcpsim::analysis
