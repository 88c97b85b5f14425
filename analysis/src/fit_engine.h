#pragma once
// The machinery behind calibrate (private to analysis/src): the fit problem (measured figures and their
// simulated counterparts), parameter identification, Gauss–Newton with bounded, Huber-weighted steps, and
// standard errors.
#include <functional>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include "dcpsim/analysis/calibrate.h"
#include "dcpsim/analysis/observations.h"

namespace dcpsim::analysis::detail {

// Measured figures and the profile they are fitted from. Residuals are log(predicted / measured): symmetric
// in over- and under-prediction (a 20x slow kernel is as far off as a 20x fast one), equal to the relative
// error to first order.
struct Problem {
  const models::HardwareProfile& base;
  const std::vector<MeasuredSection>& sections;
  std::vector<Observation> obs;
  Eigen::VectorXd y;
  // The predictions of `obs` under a profile when they do not come from simulating `sections` (measured
  // communication tables: calibrate_comm.cc); empty: predict_all.
  std::function<Eigen::VectorXd(const models::HardwareProfile&)> predict;
  PredictOptions predict_options;  // how the sections are simulated (measured kernels)

  Eigen::VectorXd residuals(const models::HardwareProfile& p) const;
};

// Simulates every section that has an observation once; NaN where the simulator has no such figure.
Eigen::VectorXd predict_all(const models::HardwareProfile& p, const std::vector<MeasuredSection>& sections,
                            const std::vector<Observation>& obs, const PredictOptions& options = {});

// Keeps the observations the simulator predicts (> 0) under `base`; a warning per figure for the others.
Problem make_problem(const models::HardwareProfile& base, const std::vector<MeasuredSection>& sections,
                     const std::vector<Observation>& all, std::vector<std::string>& warnings,
                     const PredictOptions& options = {});

// The outcome of fitting one problem.
struct FitRun {
  std::vector<int> active;  // fitted parameters (indices into fit_parameters())
  models::HardwareProfile profile;
  Eigen::VectorXd residuals;  // log ratios at the solution
  Eigen::VectorXd weights;    // Huber weights at the solution (1: inlier)
  Eigen::VectorXd std_error;  // relative, per active parameter
  Eigen::VectorXd at_bound;   // 1 where the parameter sits on its lower bound
  int iterations = 0;
};

// Identifies, fits and prunes (weakly identified parameters revert to the base) the `candidates`; `results`
// (one per fit_parameters() entry) receive the status of every candidate that is not fitted. Throws
// InputError when no candidate is identified.
FitRun fit(const Problem& pb, const std::vector<int>& candidates, const CalibrateOptions& options,
           std::vector<ParameterResult>& results);

}  // namespace dcpsim::analysis::detail
