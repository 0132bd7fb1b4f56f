// Models of a quantity over a job's parameters (task count, numeric arguments) in Extra-P's
// performance-model normal form: c0 + sum of c_k * prod_l x_l^i * log2(x_l)^j, with i and j
// from small fixed sets. The hypotheses (one term of one parameter, a product of two or three
// parameters' terms, two terms added) are judged by their leave-one-out error on the runs, the
// simpler one winning unless a richer one is clearly better. Pure; reentrant.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "model/linear.h"
#include "util/result.h"

namespace pskel::model {

struct Factor {
  size_t parameter = 0;   // column of the parameters
  double exponent = 0;    // i: x^i
  int log_exponent = 0;   // j: log2(x)^j
};

struct Term {
  double coefficient = 0;
  std::vector<Factor> factors;  // their product; never empty
};

struct ParamModel {
  double constant = 0;
  std::vector<Term> terms;     // none: the quantity is the same for every job
  double loo_error = 0;        // mean |predicted - actual| / |actual| with each run left out
  double loo_max_error = 0;

  double evaluate(std::span<const double> parameters) const;
  // "3.2e-05 * n^2 * log2(n) + 0.4" with the parameters' names.
  std::string describe(std::span<const std::string> names) const;
};

// Fits `values` (one per run) over `parameters` (a row per run, a column per parameter).
// Parameters that are the same in every run, or not above zero in one, are not used. Needs
// three runs at least; more for hypotheses of more coefficients (one more run than
// coefficients, for the leave-one-out error).
Result<ParamModel> fit_param_model(const Matrix& parameters, std::span<const double> values);

// The coefficients of `shape`'s terms fitted again to other runs (its factors kept): to judge
// a chosen model on runs left out of its fit. Fails on a singular fit.
Result<ParamModel> refit_param_model(const ParamModel& shape, const Matrix& parameters,
                                     std::span<const double> values);

}  // namespace pskel::model
