// Seed 001's model: the run time as a linear function of a program's counters (loop and branch
// counts, MPI calls and bytes per call site), fitted by iterative multiple regression: fit on
// every feature, keep the share whose standardised coefficients are largest, fit again, until
// few are left. Each round is judged by its leave-one-out error on the runs. Pure; reentrant.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "model/linear.h"
#include "util/result.h"

namespace pskel::model {

struct RegressionOptions {
  // The share of a round's features the next round keeps (the seed's p, as a share so that the
  // rounds shrink the set whatever its size): at most this share, and always one fewer at least.
  double keep_share = 0.5;
  // Stop at this many features (the seed's target). 0: go down to one and keep the round with the
  // smallest leave-one-out error (fewer features on a tie).
  size_t target_features = 0;
  // Ridge in standardised units, per run: keeps the first rounds (more features than runs)
  // determined, and is too small to matter once there are fewer features than runs.
  double ridge = 1e-6;
};

struct RegressionRound {
  size_t features = 0;
  double loo_mean_error = 0;  // mean |predicted - actual| / actual, each run left out in turn
  double loo_max_error = 0;
};

struct LinearModel {
  double intercept = 0;
  std::vector<size_t> features;       // the kept columns of the fit's input, ascending
  std::vector<double> coefficients;   // per kept feature, in its own units (seconds per count)
  std::vector<RegressionRound> rounds;
  size_t chosen_round = 0;            // the round the model is from
  size_t constant_features = 0;       // columns left out as the same in every run
  size_t duplicate_features = 0;      // columns left out as proportional to another one

  // The modelled value for a row of all the fit's input columns.
  double predict(std::span<const double> row) const;
};

// Fits y (one value per run, above zero) over the columns of x (a row per run). Needs at least
// three runs and one column that is not the same in every run.
Result<LinearModel> fit_regression(const Matrix& x, std::span<const double> y,
                                   const RegressionOptions& options);

// Refits the coefficients of `features` alone (a model's kept set) on the runs of x; used to
// judge a model on runs it was not fitted to. Fails as fit_regression does.
Result<LinearModel> refit_regression(const Matrix& x, std::span<const double> y,
                                     std::span<const size_t> features, double ridge);

}  // namespace pskel::model
