// calibrate --comm-tables: NCCL's tuning-model numbers (per-protocol latencies, NVLink bandwidth, protocol
// efficiencies, the LL cap, p2p and NVLS numbers) fitted to measured nccl-tests tables, with the same
// bounded, Huber-weighted Gauss–Newton as the trace fit (fit_engine.h). The model is fitted, not the tables:
// the profile is priced without its communication tables, so that outside the tables (larger groups, other
// sizes) the model carries what they measured.
#include <algorithm>
#include <cmath>
#include <set>

#include "dcpsim/analysis/calibrate_comm.h"
#include "dcpsim/error.h"
#include "dcpsim/models/cost_collectives_price.h"
#include "dcpsim/models/cost_metrics.h"
#include "fit_engine.h"

namespace dcpsim::analysis {
namespace {

using models::HardwareProfile;

// One measured point: an observation whose figure is the op's name.
struct TablePoint {
  models::Collective op;
  int gpus;
  double size_bytes;
};

std::vector<TablePoint> points_of(const std::vector<models::CommTables>& tables, const HardwareProfile& base,
                                  std::vector<Observation>& obs, std::set<std::string>& devices) {
  std::vector<TablePoint> out;
  const int per_node = static_cast<int>(base.topology.gpus_per_node.si());
  for (const models::CommTables& f : tables) {
    devices.insert(f.provenance.device);
    for (const models::CommTable& t : f.tables) {
      // nccl-tests' default (out-of-place, back to back, NCCL's own choice) is what the model describes.
      if (t.in_place || t.graph || !t.algorithm.empty() || !t.protocol.empty()) continue;
      for (const models::CommPoint& p : t.points) {
        if (p.nodes != (p.gpus + per_node - 1) / per_node) continue;  // another layout than the profile's
        Observation o;
        o.section = static_cast<int>(out.size());
        o.kind = ObservationKind::kPhase;
        o.rank = p.gpus;
        o.phase = std::string(models::to_string(t.op)) + " " + std::to_string(p.gpus) + " gpus";
        o.measured_s = p.time_us * 1e-6;
        obs.push_back(o);
        out.push_back({t.op, p.gpus, p.size_bytes});
      }
    }
  }
  return out;
}

Eigen::VectorXd predict_points(const HardwareProfile& p, const std::vector<TablePoint>& pts) {
  HardwareProfile model = p;
  model.comm_tables.clear();
  Eigen::VectorXd f(static_cast<Eigen::Index>(pts.size()));
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const TablePoint& t = pts[i];
    const double per_rank = models::bytes_per_rank_of_size(t.op, t.gpus, t.size_bytes);
    f(static_cast<Eigen::Index>(i)) = models::price_collective(model, t.op, t.gpus, per_rank).time_s;
  }
  return f;
}

std::vector<double> relative(const Eigen::VectorXd& predicted, const Eigen::VectorXd& measured) {
  std::vector<double> out;
  for (Eigen::Index i = 0; i < predicted.size(); ++i) out.push_back(predicted(i) / measured(i) - 1.0);
  return out;
}

}  // namespace

CalibrationResult calibrate_comm(const HardwareProfile& base,
                                 const std::vector<models::CommTables>& fit_tables,
                                 const std::vector<models::CommTables>& holdout_tables,
                                 const CalibrateOptions& options) {
  models::validate_profile(base, "base profile " + base.name);
  CalibrationResult res;
  res.base = base;
  std::set<std::string> devices;
  std::vector<Observation> obs;
  const std::vector<TablePoint> pts = points_of(fit_tables, base, obs, devices);
  if (pts.empty()) {
    throw InputError(
        "calibrate --comm-tables: no out-of-place, back-to-back point of NCCL's own choice on the "
        "profile's layout (" +
        std::to_string(static_cast<int>(base.topology.gpus_per_node.si())) + " GPUs per node) in the tables");
  }
  const std::vector<MeasuredSection> no_sections;
  detail::Problem pb{
      base, no_sections, obs, {}, [&pts](const HardwareProfile& p) { return predict_points(p, pts); }, {}};
  pb.y.resize(static_cast<Eigen::Index>(obs.size()));
  for (std::size_t i = 0; i < obs.size(); ++i) pb.y(static_cast<Eigen::Index>(i)) = obs[i].measured_s;
  res.observations = static_cast<int>(obs.size());
  res.fit_sections = static_cast<int>(fit_tables.size());
  res.holdout_sections = static_cast<int>(holdout_tables.size());
  for (const std::string& d : devices) res.warnings.push_back("fitted on nccl-tests tables measured on " + d);

  res.parameters.clear();
  for (const FitParameter& p : fit_parameters())
    res.parameters.push_back({p.name, p.group, p.quantity(base), p.quantity(base), false, false, 0.0, ""});
  std::vector<int> candidates;
  for (const std::string& name : options.fixed) fit_parameter(name);
  for (int k = 0; k < static_cast<int>(res.parameters.size()); ++k) {
    ParameterResult& r = res.parameters[static_cast<std::size_t>(k)];
    if (std::find(options.fixed.begin(), options.fixed.end(), r.name) != options.fixed.end()) {
      r.status = "held fixed (--fix), kept from the base profile";
    } else if (r.group != ParameterGroup::kCollective || r.name.find("in_step") != std::string::npos ||
               r.name.find("arrival_skew") != std::string::npos || r.name == "nccl.eager_host_issue") {
      r.status =
          "not identified: steady-state nccl-tests tables say nothing about it, kept from the base profile";
    } else {
      candidates.push_back(k);
    }
  }
  const detail::FitRun run = detail::fit(pb, candidates, options, res.parameters);
  const auto& all = fit_parameters();
  for (std::size_t k = 0; k < run.active.size(); ++k) {
    const auto i = static_cast<Eigen::Index>(k);
    ParameterResult& r = res.parameters[static_cast<std::size_t>(run.active[k])];
    r.fitted = true;
    r.result = all[static_cast<std::size_t>(run.active[k])].quantity(run.profile);
    r.at_bound = run.at_bound(i) > 0;
    r.relative_std_error = run.std_error(i);
    r.status = r.at_bound ? "fitted (at its bound)" : "fitted";
  }
  res.iterations = run.iterations;
  res.profile = run.profile;
  res.profile.comm_tables = base.comm_tables;
  models::validate_profile(res.profile, "calibrated profile");
  std::vector<std::string> figures;
  for (const Observation& o : obs) figures.push_back(figure_of(o));
  res.residuals = residual_stats(figures, relative(predict_points(res.profile, pts), pb.y));
  if (!holdout_tables.empty()) {
    std::vector<Observation> held_obs;
    std::set<std::string> held_devices;
    const std::vector<TablePoint> held = points_of(holdout_tables, base, held_obs, held_devices);
    Eigen::VectorXd y(static_cast<Eigen::Index>(held_obs.size()));
    std::vector<std::string> held_figures;
    for (std::size_t i = 0; i < held_obs.size(); ++i) {
      y(static_cast<Eigen::Index>(i)) = held_obs[i].measured_s;
      held_figures.push_back(figure_of(held_obs[i]));
    }
    if (!held.empty())
      res.holdout_residuals = residual_stats(held_figures, relative(predict_points(res.profile, held), y));
  }
  return res;
}

}  // namespace dcpsim::analysis
