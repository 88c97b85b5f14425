// Bounded linear least squares on Eigen.
#include "dcpsim/analysis/least_squares.h"

#include <cmath>
#include <string>

#include "dcpsim/error.h"

namespace dcpsim::analysis {
namespace {

// Least squares over the passive columns only; the others are 0.
Eigen::VectorXd passive_solution(const Eigen::MatrixXd& a, const Eigen::VectorXd& b,
                                 const std::vector<bool>& passive) {
  std::vector<int> cols;
  for (int j = 0; j < static_cast<int>(passive.size()); ++j) {
    if (passive[j]) cols.push_back(j);
  }
  Eigen::VectorXd x = Eigen::VectorXd::Zero(a.cols());
  if (cols.empty()) return x;
  Eigen::MatrixXd sub(a.rows(), static_cast<Eigen::Index>(cols.size()));
  for (std::size_t k = 0; k < cols.size(); ++k) sub.col(static_cast<Eigen::Index>(k)) = a.col(cols[k]);
  const Eigen::VectorXd z = sub.colPivHouseholderQr().solve(b);
  for (std::size_t k = 0; k < cols.size(); ++k) x(cols[k]) = z(static_cast<Eigen::Index>(k));
  return x;
}

}  // namespace

Eigen::VectorXd solve_nonnegative(const Eigen::MatrixXd& a, const Eigen::VectorXd& b) {
  const Eigen::Index n = a.cols();
  Eigen::VectorXd x = Eigen::VectorXd::Zero(n);
  std::vector<bool> passive(static_cast<std::size_t>(n), false);
  // Gradient tolerance relative to the problem's scale, so the loop ends on round-off, not on exact zeros.
  const double tol = 1e-12 * std::max(1.0, a.norm() * b.norm());
  const int max_outer = 3 * static_cast<int>(n) + 10;
  for (int outer = 0; outer < max_outer; ++outer) {
    const Eigen::VectorXd w = a.transpose() * (b - a * x);
    Eigen::Index best = -1;
    for (Eigen::Index j = 0; j < n; ++j) {
      if (!passive[j] && w(j) > tol && (best < 0 || w(j) > w(best))) best = j;
    }
    if (best < 0) return x;  // Kuhn–Tucker conditions hold
    passive[best] = true;
    while (true) {
      Eigen::VectorXd z = passive_solution(a, b, passive);
      bool feasible = true;
      for (Eigen::Index j = 0; j < n; ++j) feasible = feasible && (!passive[j] || z(j) > 0);
      if (feasible) {
        x = z;
        break;
      }
      // Step from x towards z as far as feasibility allows, then free the variables that reached 0.
      double alpha = 1.0;
      for (Eigen::Index j = 0; j < n; ++j) {
        if (passive[j] && z(j) <= 0) alpha = std::min(alpha, x(j) / (x(j) - z(j)));
      }
      x += alpha * (z - x);
      for (Eigen::Index j = 0; j < n; ++j) {
        if (passive[j] && x(j) <= 1e-15 * std::max(1.0, x.cwiseAbs().maxCoeff())) {
          passive[j] = false;
          x(j) = 0;
        }
      }
    }
  }
  throw RuntimeError("non-negative least squares did not converge after " + std::to_string(max_outer) +
                     " iterations (" + std::to_string(a.rows()) + " x " + std::to_string(n) + " system)");
}

Eigen::VectorXd solve_lower_bounded(const Eigen::MatrixXd& a, const Eigen::VectorXd& b,
                                    const Eigen::VectorXd& lower) {
  return lower + solve_nonnegative(a, b - a * lower);
}

std::vector<int> independent_columns(const Eigen::MatrixXd& a, const std::vector<int>& order,
                                     double rel_tol) {
  std::vector<int> taken;
  for (int k : order) {
    const double norm = a.col(k).norm();
    if (!(norm > 0) || !std::isfinite(norm)) continue;
    if (!taken.empty()) {
      Eigen::MatrixXd basis(a.rows(), static_cast<Eigen::Index>(taken.size()));
      for (std::size_t i = 0; i < taken.size(); ++i)
        basis.col(static_cast<Eigen::Index>(i)) = a.col(taken[i]);
      const Eigen::VectorXd coef = basis.colPivHouseholderQr().solve(a.col(k));
      if ((a.col(k) - basis * coef).norm() <= rel_tol * norm) continue;
    }
    taken.push_back(k);
  }
  return taken;
}

Eigen::MatrixXd normal_inverse(const Eigen::MatrixXd& a) {
  const Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(a);
  const Eigen::Index n = a.cols();
  const Eigen::MatrixXd r = qr.matrixR().topLeftCorner(n, n).triangularView<Eigen::Upper>();
  const Eigen::MatrixXd r_inv = r.triangularView<Eigen::Upper>().solve(Eigen::MatrixXd::Identity(n, n));
  // A P = Q R, so (AᵀA)⁻¹ = P R⁻¹ R⁻ᵀ Pᵀ.
  const auto& perm = qr.colsPermutation();
  return perm * (r_inv * r_inv.transpose()) * perm.transpose();
}

}  // namespace dcpsim::analysis
