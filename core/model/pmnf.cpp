#include "pmnf.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace pskel::model {
namespace {

// Extra-P's exponent sets, the simple ones first: among hypotheses that fit equally well the
// first one found stays. -1 and -1/2 are for per-rank quantities of a fixed problem spread over
// more tasks (n / p).
constexpr double kExponents[] = {1,        2,        3,        -1,       0.5,      1.5,
                                 2.5,      1.0 / 3,  2.0 / 3,  4.0 / 3,  5.0 / 3,  7.0 / 3,
                                 8.0 / 3,  0.25,     0.75,     1.25,     1.75,     2.25,
                                 2.75,     -0.5,     0};
constexpr int kLogExponents[] = {0, 1, 2};
// A hypothesis with more coefficients must cut the leave-one-out error by this share to be
// taken: with a handful of runs, a richer one often fits noise a little better.
constexpr double kRicherMargin = 0.1;
// ... and by this much in absolute terms: a run time's noise is about 1 %, and below it any
// hypothesis can look better than the true one by chance (n^(2/3) log2(n)^2 for n).
constexpr double kRicherFloor = 0.005;
constexpr double kStageMargin = 0.5;
constexpr size_t kMaxSearchedParameters = 4;
constexpr double kTieTolerance = 1e-9;
constexpr double kInfinity = std::numeric_limits<double>::infinity();

struct Shape {
  double exponent;
  int log_exponent;
  // How plain the shape is: 0 for an integer power, 1 with one logarithm, 2 otherwise. The
  // plainer shapes are searched first; the others win only when clearly better (kRicherMargin,
  // kRicherFloor): log2(n) of n from 512 to 1024 is nearly a constant, and noise decides.
  int plainness() const {
    if (exponent != std::round(exponent) || log_exponent > 1) return 2;
    return log_exponent;
  }
};

std::vector<Shape> all_shapes() {
  std::vector<Shape> shapes;
  for (int j : kLogExponents)
    for (double i : kExponents)
      if (i != 0 || j != 0) shapes.push_back({i, j});
  return shapes;
}

double factor_value(double x, double exponent, int log_exponent) {
  double value = exponent == 0 ? 1.0 : std::pow(x, exponent);
  if (log_exponent > 0) value *= std::pow(std::log2(x), log_exponent);
  return value;
}

struct Candidate {
  std::vector<std::vector<Factor>> terms;
  std::vector<std::vector<double>> columns;  // per term, its value in each run
  double error = kInfinity;
  double max_error = kInfinity;
};

// Relative error with a floor, so that a quantity that is 0 in one run does not divide by 0.
double relative_error(double predicted, double actual, double scale) {
  return std::fabs(predicted - actual) / std::max(std::fabs(actual), 1e-9 * scale);
}

// Least squares with an intercept over `columns` on the runs in `rows`; false if singular.
bool fit_rows(const std::vector<std::vector<double>>& columns, std::span<const double> values,
              std::span<const size_t> rows, double* constant, std::vector<double>* coefficients) {
  const size_t k = columns.size(), m = rows.size();
  double mean_v = 0;
  for (size_t r : rows) mean_v += values[r];
  mean_v /= static_cast<double>(m);
  std::vector<double> mean(k, 0.0);
  for (size_t t = 0; t < k; ++t) {
    for (size_t r : rows) mean[t] += columns[t][r];
    mean[t] /= static_cast<double>(m);
  }
  coefficients->assign(k, 0.0);
  if (k == 1) {  // the common case, in closed form
    double sxx = 0, sxy = 0;
    for (size_t r : rows) {
      sxx += (columns[0][r] - mean[0]) * (columns[0][r] - mean[0]);
      sxy += (columns[0][r] - mean[0]) * (values[r] - mean_v);
    }
    if (!(sxx > 0) || !std::isfinite(sxx) || !std::isfinite(sxy)) return false;
    (*coefficients)[0] = sxy / sxx;
  } else if (k > 1) {
    // Scaled to unit size per column: the terms' magnitudes differ by many orders.
    std::vector<double> scale(k, 0.0);
    for (size_t t = 0; t < k; ++t) {
      for (size_t r : rows) scale[t] = std::max(scale[t], std::fabs(columns[t][r] - mean[t]));
      if (!(scale[t] > 0) || !std::isfinite(scale[t])) return false;
    }
    Matrix x(m, k);
    std::vector<double> y(m);
    for (size_t i = 0; i < m; ++i) {
      y[i] = values[rows[i]] - mean_v;
      for (size_t t = 0; t < k; ++t) x.at(i, t) = (columns[t][rows[i]] - mean[t]) / scale[t];
    }
    std::vector<double> a;
    if (!least_squares(x, y, 0.0, &a)) return false;
    for (size_t t = 0; t < k; ++t) (*coefficients)[t] = a[t] / scale[t];
  }
  *constant = mean_v;
  for (size_t t = 0; t < k; ++t) *constant -= (*coefficients)[t] * mean[t];
  return std::isfinite(*constant);
}

// The leave-one-out errors of a candidate (or of the mean alone, for no columns).
void judge(Candidate& candidate, std::span<const double> values, double scale) {
  const size_t m = values.size();
  std::vector<size_t> rows;
  double sum = 0, worst = 0;
  std::vector<double> coefficients;
  for (size_t left_out = 0; left_out < m; ++left_out) {
    rows.clear();
    for (size_t r = 0; r < m; ++r)
      if (r != left_out) rows.push_back(r);
    double constant = 0;
    if (!fit_rows(candidate.columns, values, rows, &constant, &coefficients)) return;
    double predicted = constant;
    for (size_t t = 0; t < coefficients.size(); ++t)
      predicted += coefficients[t] * candidate.columns[t][left_out];
    const double error = relative_error(predicted, values[left_out], scale);
    if (!std::isfinite(error)) return;
    sum += error;
    worst = std::max(worst, error);
  }
  candidate.error = sum / static_cast<double>(m);
  candidate.max_error = worst;
}

bool better(const Candidate& challenger, const Candidate& incumbent, double margin) {
  return challenger.error < incumbent.error * (1 - margin) - kTieTolerance;
}

// A later stage's shapes must halve the error: they are many (62 per parameter, their products
// thousands), and over six noisy run times one of them always fits the noise, or a cache
// boundary inside the training range, that extrapolation then multiplies.
bool clearly_better(const Candidate& challenger, const Candidate& incumbent) {
  return challenger.error < incumbent.error * kStageMargin - kRicherFloor;
}

}  // namespace

double ParamModel::evaluate(std::span<const double> parameters) const {
  double value = constant;
  for (const Term& term : terms) {
    double product = term.coefficient;
    for (const Factor& f : term.factors) {
      if (f.parameter >= parameters.size()) return std::numeric_limits<double>::quiet_NaN();
      product *= factor_value(parameters[f.parameter], f.exponent, f.log_exponent);
    }
    value += product;
  }
  return value;
}

std::string ParamModel::describe(std::span<const std::string> names) const {
  auto number = [](double v) {
    char text[32];
    std::snprintf(text, sizeof text, "%.4g", v);
    return std::string(text);
  };
  auto exponent_text = [](double e) {
    for (int denominator : {1, 2, 3, 4}) {
      const double numerator = e * denominator;
      if (std::fabs(numerator - std::round(numerator)) < 1e-9) {
        const long n = std::lround(numerator);
        return denominator == 1 ? std::to_string(n)
                                : "(" + std::to_string(n) + "/" + std::to_string(denominator) + ")";
      }
    }
    return std::to_string(e);
  };
  std::string text;
  for (const Term& term : terms) {
    if (!text.empty()) text += " + ";
    text += number(term.coefficient);
    for (const Factor& f : term.factors) {
      const std::string name = f.parameter < names.size() ? names[f.parameter] : "?";
      if (f.exponent != 0) {
        text += " * " + name;
        if (f.exponent != 1) text += "^" + exponent_text(f.exponent);
      }
      if (f.log_exponent > 0) {
        text += " * log2(" + name + ")";
        if (f.log_exponent > 1) text += "^" + std::to_string(f.log_exponent);
      }
    }
  }
  if (!text.empty()) text += " + ";
  return text + number(constant);
}

Result<ParamModel> fit_param_model(const Matrix& parameters, std::span<const double> values) {
  const size_t m = values.size();
  if (parameters.rows() != m) return Error{"", "internal: one parameter row per value is needed"};
  if (m < 3)
    return Error{"", "a model of the job's parameters needs at least 3 runs, there are " +
                         std::to_string(m)};
  double scale = 0;
  for (double v : values) {
    if (!std::isfinite(v)) return Error{"", "a modelled value is not a finite number"};
    scale += std::fabs(v) / static_cast<double>(m);
  }

  // The parameters a hypothesis may use: they vary, and are above zero (logarithms, roots).
  std::vector<size_t> usable;
  for (size_t p = 0; p < parameters.cols(); ++p) {
    bool positive = true, varies = false;
    for (size_t r = 0; r < m; ++r) {
      positive = positive && parameters.at(r, p) > 0 && std::isfinite(parameters.at(r, p));
      varies = varies || parameters.at(r, p) != parameters.at(0, p);
    }
    if (positive && varies) usable.push_back(p);
  }
  const std::vector<Shape> shapes = all_shapes();
  // Products of pairs and triples grow with the parameters' count: a job of many varying
  // numbers keeps the kMaxSearchedParameters whose best single term fits best.
  if (usable.size() > kMaxSearchedParameters) {
    std::vector<std::pair<double, size_t>> ranked;
    for (size_t p : usable) {
      double best_error = kInfinity;
      for (const Shape& shape : shapes) {
        Candidate c{{{Factor{p, shape.exponent, shape.log_exponent}}}, {std::vector<double>(m)}};
        for (size_t r = 0; r < m; ++r)
          c.columns[0][r] = factor_value(parameters.at(r, p), shape.exponent, shape.log_exponent);
        judge(c, values, scale);
        best_error = std::min(best_error, c.error);
      }
      ranked.push_back({best_error, p});
    }
    std::sort(ranked.begin(), ranked.end());
    usable.clear();
    for (size_t k = 0; k < kMaxSearchedParameters; ++k) usable.push_back(ranked[k].second);
    std::sort(usable.begin(), usable.end());
  }
  // columns[u][s]: shape s of usable parameter u in every run.
  std::vector<std::vector<std::vector<double>>> columns(usable.size());
  for (size_t u = 0; u < usable.size(); ++u)
    for (const Shape& s : shapes) {
      std::vector<double> column(m);
      for (size_t r = 0; r < m; ++r)
        column[r] = factor_value(parameters.at(r, usable[u]), s.exponent, s.log_exponent);
      columns[u].push_back(std::move(column));
    }
  auto factor = [&](size_t u, size_t s) {
    return Factor{usable[u], shapes[s].exponent, shapes[s].log_exponent};
  };

  Candidate best;  // the mean alone
  judge(best, values, scale);
  if (scale == 0) best.error = best.max_error = 0;  // zero in every run

  // Three stages: integer powers, then with one logarithm, then every shape; a later stage's
  // best replaces the one before only when clearly better.
  constexpr int kStages = 3;
  Candidate by_stage[kStages];
  // A stage needs runs to be told from the one before: with four runs a fractional power and a
  // logarithm fit whatever noise the four hold, so logarithms need 5 runs, other powers 6.
  const int stages = std::min<int>(kStages, static_cast<int>(m) - 3);
  for (int stage = 0; stage < std::max(1, stages); ++stage) {
    auto allowed = [&](size_t s) { return shapes[s].plainness() <= stage; };
    Candidate stage_best = best;  // the mean alone
    // One term: a shape of one parameter, then products of two and of three parameters'.
    Candidate best_one;
    auto consider_one = [&](Candidate&& candidate) {
      judge(candidate, values, scale);
      if (better(candidate, best_one, 0)) best_one = std::move(candidate);
    };
    for (size_t u = 0; u < usable.size(); ++u)
      for (size_t s = 0; s < shapes.size(); ++s)
        if (allowed(s)) consider_one(Candidate{{{factor(u, s)}}, {columns[u][s]}});
    std::vector<double> product(m);
    for (size_t u = 0; u < usable.size(); ++u)
      for (size_t v = u + 1; v < usable.size(); ++v)
        for (size_t s = 0; s < shapes.size(); ++s)
          for (size_t t = 0; t < shapes.size(); ++t) {
            if (!allowed(s) || !allowed(t)) continue;
            for (size_t r = 0; r < m; ++r) product[r] = columns[u][s][r] * columns[v][t][r];
            consider_one(Candidate{{{factor(u, s), factor(v, t)}}, {product}});
          }
    // Three parameters' products only among three usable ones: 62^3 hypotheses per triple.
    if (m >= 4 && usable.size() <= 3)
      for (size_t u = 0; u < usable.size(); ++u)
        for (size_t v = u + 1; v < usable.size(); ++v)
          for (size_t w = v + 1; w < usable.size(); ++w)
            for (size_t s = 0; s < shapes.size(); ++s)
              for (size_t t = 0; t < shapes.size(); ++t)
                for (size_t q = 0; q < shapes.size(); ++q) {
                  if (!allowed(s) || !allowed(t) || !allowed(q)) continue;
                  for (size_t r = 0; r < m; ++r)
                    product[r] = columns[u][s][r] * columns[v][t][r] * columns[w][q][r];
                  consider_one(
                      Candidate{{{factor(u, s), factor(v, t), factor(w, q)}}, {product}});
                }
    if (better(best_one, stage_best, kRicherMargin)) stage_best = std::move(best_one);

    // Two terms of two parameters added (three coefficients: five runs at least).
    if (m >= 5) {
      Candidate best_two;
      for (size_t u = 0; u < usable.size(); ++u)
        for (size_t v = u + 1; v < usable.size(); ++v)
          for (size_t s = 0; s < shapes.size(); ++s)
            for (size_t t = 0; t < shapes.size(); ++t) {
              if (!allowed(s) || !allowed(t)) continue;
              Candidate candidate{{{factor(u, s)}, {factor(v, t)}},
                                  {columns[u][s], columns[v][t]}};
              judge(candidate, values, scale);
              if (better(candidate, best_two, 0)) best_two = std::move(candidate);
            }
      if (better(best_two, stage_best, kRicherMargin)) stage_best = std::move(best_two);
    }
    by_stage[stage] = std::move(stage_best);
  }
  best = std::move(by_stage[0]);
  for (int stage = 1; stage < stages; ++stage)
    if (clearly_better(by_stage[stage], best)) best = std::move(by_stage[stage]);

  std::vector<size_t> rows(m);
  for (size_t r = 0; r < m; ++r) rows[r] = r;
  ParamModel model;
  std::vector<double> coefficients;
  if (!fit_rows(best.columns, values, rows, &model.constant, &coefficients))
    return Error{"", "no model of the job's parameters fits the runs"};
  for (size_t t = 0; t < best.terms.size(); ++t)
    model.terms.push_back(Term{coefficients[t], best.terms[t]});
  model.loo_error = best.error;
  model.loo_max_error = best.max_error;
  return model;
}

Result<ParamModel> refit_param_model(const ParamModel& shape, const Matrix& parameters,
                                     std::span<const double> values) {
  const size_t m = values.size();
  if (parameters.rows() != m || m < shape.terms.size() + 1)
    return Error{"", "too few runs to refit the model"};
  std::vector<std::vector<double>> columns;
  for (const Term& term : shape.terms) {
    std::vector<double> column(m, 1.0);
    for (size_t r = 0; r < m; ++r)
      for (const Factor& f : term.factors) {
        if (f.parameter >= parameters.cols()) return Error{"", "internal: parameter index"};
        column[r] *= factor_value(parameters.at(r, f.parameter), f.exponent, f.log_exponent);
      }
    columns.push_back(std::move(column));
  }
  std::vector<size_t> rows(m);
  for (size_t r = 0; r < m; ++r) rows[r] = r;
  ParamModel model = shape;
  std::vector<double> coefficients;
  if (!fit_rows(columns, values, rows, &model.constant, &coefficients))
    return Error{"", "the model cannot be refitted to these runs"};
  for (size_t t = 0; t < coefficients.size(); ++t) model.terms[t].coefficient = coefficients[t];
  return model;
}

}  // namespace pskel::model
