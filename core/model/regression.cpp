#include "regression.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

namespace pskel::model {
namespace {

constexpr size_t kMinRuns = 3;
// Standardised columns closer than this in every run are the same feature (a loop inside
// another whose trip count is fixed counts in proportion to it): one stands for all.
constexpr double kDuplicateTolerance = 1e-9;

struct Fit {
  double intercept = 0;
  std::vector<double> coefficients;  // original units, per column asked for
  std::vector<double> standardised;  // per column asked for (0 where constant on these rows)
};

// Mean and population standard deviation of column c over `rows`.
void column_stats(const Matrix& x, std::span<const size_t> rows, size_t c, double* mean,
                  double* sd) {
  double sum = 0;
  for (size_t r : rows) sum += x.at(r, c);
  *mean = sum / static_cast<double>(rows.size());
  double squares = 0;
  for (size_t r : rows) squares += (x.at(r, c) - *mean) * (x.at(r, c) - *mean);
  *sd = std::sqrt(squares / static_cast<double>(rows.size()));
}

bool varies(double mean, double sd) { return sd > 1e-12 * std::max(1.0, std::fabs(mean)); }

// Least squares of y over columns `cols` on `rows`, on standardised values with an intercept.
bool fit_on(const Matrix& x, std::span<const double> y, std::span<const size_t> rows,
            std::span<const size_t> cols, double ridge, Fit* fit) {
  const size_t m = rows.size();
  double mean_y = 0;
  for (size_t r : rows) mean_y += y[r];
  mean_y /= static_cast<double>(m);
  std::vector<double> mean(cols.size()), sd(cols.size());
  std::vector<size_t> used;  // indices into cols
  for (size_t j = 0; j < cols.size(); ++j) {
    column_stats(x, rows, cols[j], &mean[j], &sd[j]);
    if (varies(mean[j], sd[j])) used.push_back(j);
  }
  fit->coefficients.assign(cols.size(), 0.0);
  fit->standardised.assign(cols.size(), 0.0);
  fit->intercept = mean_y;
  if (used.empty()) return true;  // nothing varies on these rows: the mean is the model
  Matrix z(m, used.size());
  std::vector<double> centred(m);
  for (size_t i = 0; i < m; ++i) {
    centred[i] = y[rows[i]] - mean_y;
    for (size_t u = 0; u < used.size(); ++u) {
      const size_t j = used[u];
      z.at(i, u) = (x.at(rows[i], cols[j]) - mean[j]) / sd[j];
    }
  }
  std::vector<double> a;
  if (!least_squares(z, centred, ridge * static_cast<double>(m), &a)) return false;
  for (size_t u = 0; u < used.size(); ++u) {
    const size_t j = used[u];
    fit->standardised[j] = a[u];
    fit->coefficients[j] = a[u] / sd[j];
    fit->intercept -= fit->coefficients[j] * mean[j];
  }
  return true;
}

double evaluate(const Matrix& x, size_t row, std::span<const size_t> cols, const Fit& fit) {
  double value = fit.intercept;
  for (size_t j = 0; j < cols.size(); ++j) value += fit.coefficients[j] * x.at(row, cols[j]);
  return value;
}

// Leave-one-out relative errors of a fit over `cols`; infinite where a fold cannot be fitted.
RegressionRound judge(const Matrix& x, std::span<const double> y, std::span<const size_t> cols,
                      double ridge) {
  const size_t m = x.rows();
  RegressionRound round;
  round.features = cols.size();
  std::vector<size_t> rows;
  double sum = 0;
  for (size_t left_out = 0; left_out < m; ++left_out) {
    rows.clear();
    for (size_t r = 0; r < m; ++r)
      if (r != left_out) rows.push_back(r);
    Fit fit;
    double error = std::numeric_limits<double>::infinity();
    if (fit_on(x, y, rows, cols, ridge, &fit))
      error = std::fabs(evaluate(x, left_out, cols, fit) - y[left_out]) / y[left_out];
    sum += error;
    round.loo_max_error = std::max(round.loo_max_error, error);
  }
  round.loo_mean_error = sum / static_cast<double>(m);
  return round;
}

std::string check_input(const Matrix& x, std::span<const double> y) {
  if (y.size() != x.rows()) return "internal: one run time per row is needed";
  if (x.rows() < kMinRuns)
    return "a model needs at least " + std::to_string(kMinRuns) + " runs, there are " +
           std::to_string(x.rows());
  for (double v : y)
    if (!(v > 0) || !std::isfinite(v)) return "a run time is not above zero";
  for (size_t r = 0; r < x.rows(); ++r)
    for (size_t c = 0; c < x.cols(); ++c)
      if (!std::isfinite(x.at(r, c))) return "a feature is not a finite number";
  return "";
}

LinearModel model_of(const Matrix& x, std::span<const double> y, std::vector<size_t> cols,
                     double ridge, bool* ok) {
  std::vector<size_t> all(x.rows());
  std::iota(all.begin(), all.end(), 0);
  Fit fit;
  *ok = fit_on(x, y, all, cols, ridge, &fit);
  LinearModel model;
  model.intercept = fit.intercept;
  model.features = std::move(cols);
  model.coefficients = fit.coefficients;
  return model;
}

}  // namespace

double LinearModel::predict(std::span<const double> row) const {
  double value = intercept;
  for (size_t j = 0; j < features.size(); ++j) value += coefficients[j] * row[features[j]];
  return value;
}

Result<LinearModel> fit_regression(const Matrix& x, std::span<const double> y,
                                   const RegressionOptions& options) {
  if (const std::string bad = check_input(x, y); !bad.empty()) return Error{"", bad};
  if (!(options.keep_share > 0 && options.keep_share < 1))
    return Error{"", "the share of features kept per round must be between 0 and 1"};
  const size_t m = x.rows();
  std::vector<size_t> all(m);
  std::iota(all.begin(), all.end(), 0);

  // The candidates: columns that vary, one of each set of proportional ones.
  std::vector<size_t> active;
  std::vector<std::vector<double>> standardised;  // of each active column
  size_t constant = 0, duplicate = 0;
  for (size_t c = 0; c < x.cols(); ++c) {
    double mean, sd;
    column_stats(x, all, c, &mean, &sd);
    if (!varies(mean, sd)) {
      ++constant;
      continue;
    }
    std::vector<double> z(m);
    for (size_t r = 0; r < m; ++r) z[r] = (x.at(r, c) - mean) / sd;
    const bool same_as_one = std::any_of(standardised.begin(), standardised.end(), [&](auto& s) {
      double plus = 0, minus = 0;
      for (size_t r = 0; r < m; ++r) {
        plus = std::max(plus, std::fabs(s[r] - z[r]));
        minus = std::max(minus, std::fabs(s[r] + z[r]));
      }
      return std::min(plus, minus) < kDuplicateTolerance;
    });
    if (same_as_one) {
      ++duplicate;
      continue;
    }
    active.push_back(c);
    standardised.push_back(std::move(z));
  }
  if (active.empty())
    return Error{"", "every feature is the same in every run: nothing explains the run times"};

  const size_t target = std::max<size_t>(1, options.target_features);
  std::vector<std::vector<size_t>> kept_per_round;
  std::vector<RegressionRound> rounds;
  for (;;) {
    Fit fit;
    if (!fit_on(x, y, all, active, options.ridge, &fit))
      return Error{"", "the regression has no solution (features dependent on each other)"};
    rounds.push_back(judge(x, y, active, options.ridge));
    kept_per_round.push_back(active);
    if (active.size() <= target) break;
    size_t next = static_cast<size_t>(std::floor(static_cast<double>(active.size()) *
                                                 options.keep_share));
    next = std::clamp<size_t>(next, target, active.size() - 1);
    std::vector<size_t> order(active.size());
    std::iota(order.begin(), order.end(), 0);
    // Largest |standardised coefficient| first; on a tie the earlier column, so that the
    // result does not depend on the sort's stability.
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      const double ca = std::fabs(fit.standardised[a]), cb = std::fabs(fit.standardised[b]);
      return ca != cb ? ca > cb : a < b;
    });
    std::vector<size_t> kept;
    for (size_t k = 0; k < next; ++k) kept.push_back(active[order[k]]);
    std::sort(kept.begin(), kept.end());
    active = std::move(kept);
  }

  size_t chosen = rounds.size() - 1;
  if (options.target_features == 0)
    for (size_t r = rounds.size(); r-- > 0;)  // from the fewest features: they win a tie
      if (rounds[r].loo_mean_error < rounds[chosen].loo_mean_error) chosen = r;
  bool ok = false;
  LinearModel model = model_of(x, y, kept_per_round[chosen], options.ridge, &ok);
  if (!ok) return Error{"", "the regression has no solution (features dependent on each other)"};
  model.rounds = std::move(rounds);
  model.chosen_round = chosen;
  model.constant_features = constant;
  model.duplicate_features = duplicate;
  return model;
}

Result<LinearModel> refit_regression(const Matrix& x, std::span<const double> y,
                                     std::span<const size_t> features, double ridge) {
  if (const std::string bad = check_input(x, y); !bad.empty()) return Error{"", bad};
  for (size_t c : features)
    if (c >= x.cols()) return Error{"", "internal: a feature index outside the runs' columns"};
  bool ok = false;
  LinearModel model =
      model_of(x, y, std::vector<size_t>(features.begin(), features.end()), ridge, &ok);
  if (!ok) return Error{"", "the regression has no solution (features dependent on each other)"};
  model.rounds.push_back(judge(x, y, features, ridge));
  return model;
}

}  // namespace pskel::model
