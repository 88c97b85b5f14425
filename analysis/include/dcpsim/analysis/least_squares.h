#pragma once
// Linear least squares with bounds, on Eigen's rank-revealing QR: the solver behind calibrate.
#include <vector>

#include <Eigen/Dense>

namespace dcpsim::analysis {

// argmin ||A x − b||₂ subject to x >= 0 (Lawson & Hanson, "Solving Least Squares Problems", 1974, ch. 23: the
// active-set method; each passive-set subproblem is solved with Eigen::ColPivHouseholderQR). Throws
// RuntimeError if it has not converged after 3·cols outer iterations (it terminates in finitely many steps in
// exact arithmetic).
Eigen::VectorXd solve_nonnegative(const Eigen::MatrixXd& a, const Eigen::VectorXd& b);

// argmin ||A x − b||₂ subject to x >= lower, by shifting to the non-negative problem.
Eigen::VectorXd solve_lower_bounded(const Eigen::MatrixXd& a, const Eigen::VectorXd& b,
                                    const Eigen::VectorXd& lower);

// The columns of A, taken in `order`, that add rank: column k joins when it is not within `rel_tol` (relative
// to its own norm) of the span of the columns already taken. Zero columns never join.
std::vector<int> independent_columns(const Eigen::MatrixXd& a, const std::vector<int>& order,
                                     double rel_tol = 1e-6);

// (AᵀA)⁻¹ for a matrix of full column rank (the parameter covariance per unit residual variance).
Eigen::MatrixXd normal_inverse(const Eigen::MatrixXd& a);

}  // namespace dcpsim::analysis
