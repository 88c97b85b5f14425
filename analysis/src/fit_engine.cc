// Identification, Gauss–Newton with bounded Huber-weighted steps, standard errors.
#include "fit_engine.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

#include "dcpsim/analysis/least_squares.h"
#include "dcpsim/analysis/phase_map.h"
#include "dcpsim/error.h"

namespace dcpsim::analysis::detail {

using models::HardwareProfile;

Eigen::VectorXd predict_all(const HardwareProfile& p, const std::vector<MeasuredSection>& sections,
                            const std::vector<Observation>& obs, const PredictOptions& options) {
  const Predictor predictor(p, options);
  std::map<int, Prediction> cache;
  Eigen::VectorXd f(static_cast<Eigen::Index>(obs.size()));
  for (std::size_t i = 0; i < obs.size(); ++i) {
    auto it = cache.find(obs[i].section);
    if (it == cache.end()) {
      it = cache.emplace(obs[i].section, predictor.predict(sections[obs[i].section])).first;
    }
    f(static_cast<Eigen::Index>(i)) = predicted(it->second, obs[i]);
  }
  return f;
}

Eigen::VectorXd Problem::residuals(const HardwareProfile& p) const {
  // A prediction of 0 gives -inf: the line search rejects such a step.
  return ((predict ? predict(p) : predict_all(p, sections, obs, predict_options)).cwiseQuotient(y))
      .array()
      .log();
}

Problem make_problem(const HardwareProfile& base, const std::vector<MeasuredSection>& sections,
                     const std::vector<Observation>& all, std::vector<std::string>& warnings,
                     const PredictOptions& options) {
  Problem pb{base, sections, {}, {}, {}, options};
  const Eigen::VectorXd f = predict_all(base, sections, all, options);
  std::map<std::string, int> missing;
  for (std::size_t i = 0; i < all.size(); ++i) {
    const double v = f(static_cast<Eigen::Index>(i));
    if (std::isfinite(v) && v > 0) {
      pb.obs.push_back(all[i]);
    } else {
      ++missing[figure_of(all[i])];
    }
  }
  for (const auto& [figure, n] : missing) {
    warnings.push_back(std::to_string(n) + " measured '" + figure +
                       "' figures have no simulated counterpart (the simulator runs no such phase there, or "
                       "gives it 0 ns) and are not fitted");
  }
  pb.y.resize(static_cast<Eigen::Index>(pb.obs.size()));
  for (std::size_t i = 0; i < pb.obs.size(); ++i) pb.y(static_cast<Eigen::Index>(i)) = pb.obs[i].measured_s;
  return pb;
}

namespace {

// Finite-difference step in scaled coordinates (1% of each parameter). The simulator's times are linear in
// most coordinates (fit_params.h), so the step's size matters only where a max() or a tuner choice switches;
// it must stay well above the simulator's clock resolution (2^-40 s, sim_engine.h), which a 1e-4 step of a
// sub-µs parameter would not.
constexpr double kStep = 1e-2;
// A parameter on which no figure moves by more than 1e-5 (relative) when it moves by 1% is one no figure
// depends on: below that, differences are clock resolution, not sensitivity.
constexpr double kNoDependence = 1e-3;
// A column within 0.1% of the span of the columns already taken is confounded with them.
constexpr double kConfounded = 1e-3;

std::string fmt_percent(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * x);
  return buf;
}

struct Coordinates {
  std::vector<int> active;       // indices into fit_parameters()
  Eigen::VectorXd scale, lower;  // per active parameter: scale s_k and lower bound in scaled units

  HardwareProfile profile(const HardwareProfile& base, const Eigen::VectorXd& u) const {
    std::vector<double> values(active.size());
    for (std::size_t k = 0; k < active.size(); ++k)
      values[k] = u(static_cast<Eigen::Index>(k)) * scale(static_cast<Eigen::Index>(k));
    return apply_parameters(base, active, values);
  }
};

Coordinates coordinates(const HardwareProfile& base, const std::vector<int>& active, Eigen::VectorXd& u) {
  const auto& all = fit_parameters();
  const auto n = static_cast<Eigen::Index>(active.size());
  Coordinates c{active, Eigen::VectorXd(n), Eigen::VectorXd(n)};
  u.resize(n);
  for (Eigen::Index k = 0; k < n; ++k) {
    const FitParameter& p = all[static_cast<std::size_t>(active[static_cast<std::size_t>(k)])];
    const double v = p.value(base);
    c.scale(k) = std::abs(v) > 0 ? std::abs(v) : p.typical;
    c.lower(k) = p.lower_bound(base) / c.scale(k);
    u(k) = std::max(v / c.scale(k), c.lower(k));
  }
  return c;
}

Eigen::MatrixXd jacobian(const Problem& pb, const Coordinates& c, const Eigen::VectorXd& u,
                         const Eigen::VectorXd& r0) {
  Eigen::MatrixXd a(r0.size(), u.size());
  for (Eigen::Index k = 0; k < u.size(); ++k) {
    Eigen::VectorXd up = u;
    up(k) += kStep;
    a.col(k) = (pb.residuals(c.profile(pb.base, up)) - r0) / kStep;
  }
  return a;
}

struct FitOutcome {
  Eigen::VectorXd u;
  Eigen::VectorXd r;
  Eigen::VectorXd weights;  // Huber weights at the solution (all 1 for a plain least-squares fit)
  Eigen::MatrixXd a;        // Jacobian at the solution
  int iterations = 0;
};

// Huber's loss on the residuals (log ratios): quadratic within c, linear beyond, so a few pathological
// figures (a kernel that runs 20x slower than its bytes explain) cannot drag every parameter. c = 1.345 × a
// robust scale (1.4826 × median |r|, at least 0.1%), 95% efficient for normal residuals (Huber, "Robust
// Statistics", 1981).
double median_abs(const Eigen::VectorXd& r) {
  if (r.size() == 0) return 0.0;
  std::vector<double> a(r.data(), r.data() + r.size());
  for (double& v : a) v = std::abs(v);
  std::nth_element(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(a.size() / 2), a.end());
  return a[a.size() / 2];
}

struct Huber {
  double c = std::numeric_limits<double>::infinity();

  static Huber for_residuals(const Eigen::VectorXd& r, bool robust) {
    Huber h;
    if (robust && r.size() > 0) h.c = 1.345 * std::max(1.4826 * median_abs(r), 1e-3);
    return h;
  }
  double loss(const Eigen::VectorXd& r) const {
    double sum = 0;
    for (double v : r) sum += std::abs(v) <= c ? 0.5 * v * v : c * std::abs(v) - 0.5 * c * c;
    return sum;
  }
  Eigen::VectorXd weights(const Eigen::VectorXd& r) const {
    return r.unaryExpr([this](double v) { return std::abs(v) <= c ? 1.0 : c / std::abs(v); });
  }
};

FitOutcome gauss_newton(const Problem& pb, const Coordinates& c, Eigen::VectorXd u,
                        const CalibrateOptions& opt) {
  FitOutcome out;
  Eigen::VectorXd r = pb.residuals(c.profile(pb.base, u));
  // Exact data (simulated traces) reach the clock resolution: relative residuals ~1e-9 at most.
  const double exact_cost = 1e-18 * double(r.size());
  bool converged = r.squaredNorm() <= exact_cost;
  while (!converged && out.iterations < opt.max_iterations) {
    ++out.iterations;
    // Iteratively reweighted: each step solves the weighted linearised problem for the current weights.
    const Huber huber = Huber::for_residuals(r, opt.robust);
    const Eigen::VectorXd sw = huber.weights(r).cwiseSqrt();
    const double cost = huber.loss(r);
    const Eigen::MatrixXd a = sw.asDiagonal() * jacobian(pb, c, u, r);
    const Eigen::VectorXd rw = sw.cwiseProduct(r);
    // Minimise ||rw + A (u' − u)|| over u' >= lower: with u' = lower + v, ||A v − (A (u − lower) − rw)||, v
    // >= 0.
    const Eigen::VectorXd delta = solve_lower_bounded(a, a * u - rw, c.lower) - u;
    converged = true;  // unless a step still lowers the loss noticeably
    double alpha = 1.0;
    for (int halvings = 0; halvings < 12; ++halvings, alpha *= 0.5) {
      const Eigen::VectorXd trial = u + alpha * delta;
      const Eigen::VectorXd rt = pb.residuals(c.profile(pb.base, trial));
      if (!rt.allFinite() || huber.loss(rt) >= cost) continue;
      const double gain = cost - huber.loss(rt);
      // Real data stop once a step gains less than a millionth of the loss; exact data run to the clock.
      converged = (alpha * delta).lpNorm<Eigen::Infinity>() < 1e-10 || gain <= 1e-6 * cost ||
                  rt.squaredNorm() <= exact_cost;
      u = trial;
      r = rt;
      break;
    }
    if (opt.progress) {
      char line[200];
      std::snprintf(
          line, sizeof line,
          "iteration %d: %zu parameters, step %g, rms log residual %.3g, median |log residual| %.3g",
          out.iterations, c.active.size(), alpha, std::sqrt(r.squaredNorm() / double(r.size())),
          median_abs(r));
      opt.progress(line);
    }
  }
  out.u = u;
  out.r = r;
  out.weights = Huber::for_residuals(r, opt.robust).weights(r);
  out.a = jacobian(pb, c, u, r);
  return out;
}

// Relative standard error of each scaled coordinate from the residual variance and (AᵀA)⁻¹; +inf for a
// parameter the Jacobian at the solution no longer resolves (its column fell into the span of earlier ones,
// e.g. a plan the tuner stopped choosing).
Eigen::VectorXd relative_std_errors(const FitOutcome& f, const Coordinates& c) {
  const auto n = f.r.size(), p = f.u.size();
  Eigen::VectorXd se = Eigen::VectorXd::Constant(p, std::numeric_limits<double>::infinity());
  std::vector<int> order(static_cast<std::size_t>(p));
  for (int k = 0; k < static_cast<int>(p); ++k) order[static_cast<std::size_t>(k)] = k;
  // Huber's estimate: the weighted problem's residual variance and (AᵀWA)⁻¹.
  const Eigen::VectorXd sw = f.weights.cwiseSqrt();
  const Eigen::MatrixXd aw = sw.asDiagonal() * f.a;
  const std::vector<int> resolved = independent_columns(aw, order, kConfounded);
  const auto m = static_cast<Eigen::Index>(resolved.size());
  if (n <= m) {  // no degrees of freedom left to estimate the noise
    for (int k : resolved) se(k) = 0.0;
    return se;
  }
  Eigen::MatrixXd a(n, m);
  for (Eigen::Index j = 0; j < m; ++j) a.col(j) = aw.col(resolved[static_cast<std::size_t>(j)]);
  const double sigma2 = sw.cwiseProduct(f.r).squaredNorm() / double(n - m);
  const Eigen::MatrixXd cov = sigma2 * normal_inverse(a);
  const auto& all = fit_parameters();
  for (Eigen::Index j = 0; j < m; ++j) {
    const int k = resolved[static_cast<std::size_t>(j)];
    const double typical =
        all[static_cast<std::size_t>(c.active[static_cast<std::size_t>(k)])].typical / c.scale(k);
    se(k) = std::sqrt(std::max(cov(j, j), 0.0)) / std::max(std::abs(f.u(k)), typical);
  }
  return se;
}

// Which parameters the figures can pin down, in catalogue order; the others get their status here.
std::vector<int> identify(const Problem& pb, const std::vector<int>& candidates,
                          std::vector<ParameterResult>& results, bool has_communication) {
  Eigen::VectorXd u0;
  const Coordinates c = coordinates(pb.base, candidates, u0);
  const Eigen::VectorXd r0 = pb.residuals(c.profile(pb.base, u0));
  const Eigen::MatrixXd a = jacobian(pb, c, u0, r0);
  std::vector<int> order, depends;
  for (int k = 0; k < static_cast<int>(candidates.size()); ++k) order.push_back(k);
  for (int k : order) {
    ParameterResult& res = results[static_cast<std::size_t>(candidates[static_cast<std::size_t>(k)])];
    if (a.col(k).lpNorm<Eigen::Infinity>() > kNoDependence) {
      depends.push_back(k);
    } else if (!has_communication && res.group != ParameterGroup::kKernel &&
               res.group != ParameterGroup::kLaunch) {
      res.status =
          "not identified: the traces measure no real communication (emulated), kept from the base profile";
    } else {
      res.status = "not identified: no measured figure depends on it, kept from the base profile";
    }
  }
  const std::vector<int> taken = independent_columns(a, depends, kConfounded);
  std::vector<int> active;
  for (int k : depends) {
    ParameterResult& res = results[static_cast<std::size_t>(candidates[static_cast<std::size_t>(k)])];
    if (std::find(taken.begin(), taken.end(), k) != taken.end()) {
      active.push_back(candidates[static_cast<std::size_t>(k)]);
    } else {
      res.status =
          "not identified: confounded with parameters fitted before it (the figures cannot tell them "
          "apart), kept from the base profile";
    }
  }
  return active;
}

}  // namespace

FitRun fit(const Problem& pb, const std::vector<int>& candidates, const CalibrateOptions& options,
           std::vector<ParameterResult>& results) {
  const bool has_communication = std::any_of(pb.obs.begin(), pb.obs.end(), [](const Observation& o) {
    return o.kind != ObservationKind::kPhase || !is_kernel_phase(o.phase);
  });
  std::vector<int> active = identify(pb, candidates, results, has_communication);
  std::map<int, double> previous;  // coordinate values of the last fit: a pruned refit starts from them
  while (true) {
    if (active.empty()) {
      throw InputError("calibrate: no profile parameter is identified by these traces (" +
                       std::to_string(pb.obs.size()) + " figures)");
    }
    Eigen::VectorXd u0;
    const Coordinates coords = coordinates(pb.base, active, u0);
    for (std::size_t k = 0; k < active.size(); ++k) {
      const auto i = static_cast<Eigen::Index>(k);
      if (previous.count(active[k])) u0(i) = std::max(previous[active[k]] / coords.scale(i), coords.lower(i));
    }
    const FitOutcome outcome = gauss_newton(pb, coords, u0, options);
    for (std::size_t k = 0; k < active.size(); ++k) {
      const auto i = static_cast<Eigen::Index>(k);
      previous[active[k]] = outcome.u(i) * coords.scale(i);
    }
    const Eigen::VectorXd se = relative_std_errors(outcome, coords);
    // Unresolved parameters (+inf) go first, the last of them in catalogue order.
    Eigen::Index worst = 0;
    for (Eigen::Index k = 0; k < se.size(); ++k) {
      if (se(k) >= se(worst)) worst = k;
    }
    if (se(worst) <= options.max_relative_std_error) {
      FitRun run{active, coords.profile(pb.base, outcome.u), outcome.r,         outcome.weights,
                 se,     Eigen::VectorXd::Zero(se.size()),   outcome.iterations};
      for (Eigen::Index k = 0; k < se.size(); ++k) {
        const double lower = coords.lower(k);
        run.at_bound(k) = outcome.u(k) - lower <= 1e-9 * std::max(1.0, std::abs(lower)) ? 1.0 : 0.0;
      }
      return run;
    }
    ParameterResult& weak = results[static_cast<std::size_t>(active[static_cast<std::size_t>(worst)])];
    weak.status =
        std::isinf(se(worst))
            ? "not identified: at the fitted values the figures no longer resolve it (confounded with "
              "parameters fitted before it), kept from the base profile"
            : "weakly identified: relative standard error " + fmt_percent(se(worst)) + " > " +
                  fmt_percent(options.max_relative_std_error) + ", kept from the base profile";
    if (options.progress) options.progress(weak.name + ": " + weak.status);
    active.erase(active.begin() + worst);
  }
}

}  // namespace dcpsim::analysis::detail
