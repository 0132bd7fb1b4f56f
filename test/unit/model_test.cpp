// Run-time models (core/model): least squares, seed 001's iterative regression and the models
// over a job's parameters recover what was planted in synthetic runs, leave out what was not,
// and refuse degenerate input with a reason.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "model/app_model.h"
#include "model/linear.h"
#include "model/pmnf.h"
#include "model/regression.h"

using namespace pskel::model;

namespace {

// A deterministic noise source: uniform in [-1, 1).
struct Noise {
  uint64_t state = 0x2545f4914f6cdd1dULL;
  double next() {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return static_cast<double>(state >> 11) / static_cast<double>(1ULL << 52) - 1.0;
  }
};

Matrix matrix(const std::vector<std::vector<double>>& rows) {
  Matrix x(rows.size(), rows.empty() ? 0 : rows[0].size());
  for (size_t r = 0; r < rows.size(); ++r)
    for (size_t c = 0; c < rows[r].size(); ++c) x.at(r, c) = rows[r][c];
  return x;
}

}  // namespace

TEST_CASE("LeastSquaresSolvesAnOverdeterminedSystem") {
  // y = 2 a - 3 b exactly, four equations.
  const Matrix x = matrix({{1, 0}, {0, 1}, {1, 1}, {2, -1}});
  const std::vector<double> y = {2, -3, -1, 7};
  std::vector<double> a;
  REQUIRE(least_squares(x, y, 0, &a));
  CHECK(a[0] == doctest::Approx(2));
  CHECK(a[1] == doctest::Approx(-3));
}

TEST_CASE("LeastSquaresRefusesDependentColumnsWithoutRidge") {
  const Matrix x = matrix({{1, 2}, {2, 4}, {3, 6}});
  const std::vector<double> y = {1, 2, 3};
  std::vector<double> a;
  CHECK_FALSE(least_squares(x, y, 0, &a));
  CHECK(a.empty());
  // With a ridge the minimum-norm-like solution exists and reproduces y.
  REQUIRE(least_squares(x, y, 1e-9, &a));
  CHECK(a[0] + 2 * a[1] == doctest::Approx(1).epsilon(1e-6));
}

TEST_CASE("LeastSquaresWithMoreColumnsThanRowsNeedsRidgeAndFitsTheRows") {
  const Matrix x = matrix({{1, 0, 2, 1}, {0, 1, 1, 3}});
  const std::vector<double> y = {5, 7};
  std::vector<double> a;
  CHECK_FALSE(least_squares(x, y, 0, &a));
  REQUIRE(least_squares(x, y, 1e-9, &a));
  CHECK(a[0] + 2 * a[2] + a[3] == doctest::Approx(5).epsilon(1e-6));
  CHECK(a[1] + a[2] + 3 * a[3] == doctest::Approx(7).epsilon(1e-6));
}

TEST_CASE("LeastSquaresRefusesNonFiniteInput") {
  const Matrix x = matrix({{1, 0}, {0, NAN}, {1, 1}});
  const std::vector<double> y = {1, 2, 3};
  std::vector<double> a;
  CHECK_FALSE(least_squares(x, y, 0, &a));
  CHECK_FALSE(least_squares(matrix({{1}, {2}}), std::vector<double>{1}, 0, &a));
}

TEST_CASE("RegressionRecoversAPlantedModelAndDropsNoiseFeatures") {
  // 12 runs, 40 features: time = 0.5 + 2e-6 * f3 + 4e-9 * f17; the rest is noise unrelated to
  // the time (and feature 30 is f3 times 7: the same feature, counted twice).
  Noise noise;
  const size_t runs = 12, features = 40;
  Matrix x(runs, features);
  std::vector<double> y(runs);
  for (size_t r = 0; r < runs; ++r) {
    for (size_t c = 0; c < features; ++c) x.at(r, c) = 1000 + 900 * noise.next();
    x.at(r, 3) = 1e5 * static_cast<double>(r + 1);
    x.at(r, 17) = 1e8 * (1.5 + noise.next());
    x.at(r, 30) = 7 * x.at(r, 3);
    y[r] = 0.5 + 2e-6 * x.at(r, 3) + 4e-9 * x.at(r, 17);
  }
  auto fit = fit_regression(x, y, RegressionOptions{});
  REQUIRE(fit.ok());
  const LinearModel& model = fit.value();
  CHECK(model.duplicate_features == 1);
  CHECK(model.rounds.size() >= 3);
  CHECK(model.rounds.front().features == features - 1);
  REQUIRE(model.features == std::vector<size_t>{3, 17});
  CHECK(model.coefficients[0] == doctest::Approx(2e-6).epsilon(1e-6));
  CHECK(model.coefficients[1] == doctest::Approx(4e-9).epsilon(1e-6));
  CHECK(model.intercept == doctest::Approx(0.5).epsilon(1e-6));
  CHECK(model.rounds[model.chosen_round].loo_mean_error < 1e-6);
  std::vector<double> row(features, 0.0);
  row[3] = 3e6;
  row[17] = 2e8;
  CHECK(model.predict(row) == doctest::Approx(0.5 + 6 + 0.8));
}

TEST_CASE("RegressionWithATargetStopsThere") {
  Noise noise;
  Matrix x(8, 10);
  std::vector<double> y(8);
  for (size_t r = 0; r < 8; ++r) {
    for (size_t c = 0; c < 10; ++c) x.at(r, c) = 50 + 40 * noise.next();
    y[r] = 1 + 0.1 * x.at(r, 2) + 0.05 * x.at(r, 5) + 0.001 * noise.next();
  }
  RegressionOptions options;
  options.target_features = 3;
  auto fit = fit_regression(x, y, options);
  REQUIRE(fit.ok());
  CHECK(fit.value().features.size() == 3);
  CHECK(fit.value().chosen_round == fit.value().rounds.size() - 1);
  const auto& kept = fit.value().features;
  CHECK(std::count(kept.begin(), kept.end(), 2) == 1);
  CHECK(std::count(kept.begin(), kept.end(), 5) == 1);
}

TEST_CASE("RegressionRefusesDegenerateInputWithAReason") {
  std::vector<double> y = {1, 2};
  auto two_runs = fit_regression(matrix({{1}, {2}}), y, RegressionOptions{});
  REQUIRE_FALSE(two_runs.ok());
  CHECK(two_runs.error().what.find("at least 3 runs") != std::string::npos);

  y = {1, 2, 3};
  auto constant = fit_regression(matrix({{4, 1}, {4, 1}, {4, 1}}), y, RegressionOptions{});
  REQUIRE_FALSE(constant.ok());
  CHECK(constant.error().what.find("the same in every run") != std::string::npos);

  y = {1, 0, 3};
  auto zero_time = fit_regression(matrix({{1}, {2}, {3}}), y, RegressionOptions{});
  REQUIRE_FALSE(zero_time.ok());
  CHECK(zero_time.error().what.find("not above zero") != std::string::npos);

  y = {1, 2, 3};
  auto not_a_number = fit_regression(matrix({{1}, {NAN}, {3}}), y, RegressionOptions{});
  REQUIRE_FALSE(not_a_number.ok());
  CHECK(not_a_number.error().what.find("finite") != std::string::npos);
}

TEST_CASE("ParamModelRecoversNLogN") {
  const std::vector<double> n = {64, 128, 256, 512, 1024, 2048};
  Matrix p(n.size(), 1);
  std::vector<double> v;
  for (size_t r = 0; r < n.size(); ++r) {
    p.at(r, 0) = n[r];
    v.push_back(3 + 0.25 * n[r] * std::log2(n[r]));
  }
  auto fit = fit_param_model(p, v);
  REQUIRE(fit.ok());
  const ParamModel& model = fit.value();
  REQUIRE(model.terms.size() == 1);
  REQUIRE(model.terms[0].factors.size() == 1);
  CHECK(model.terms[0].factors[0].exponent == 1);
  CHECK(model.terms[0].factors[0].log_exponent == 1);
  CHECK(model.terms[0].coefficient == doctest::Approx(0.25));
  CHECK(model.constant == doctest::Approx(3).epsilon(1e-6));
  const std::vector<double> larger = {65536};
  CHECK(model.evaluate(larger) == doctest::Approx(3 + 0.25 * 65536 * 16));
  const std::vector<std::string> names = {"n"};
  CHECK(model.describe(names) == "0.25 * n * log2(n) + 3");
}

TEST_CASE("ParamModelRecoversNSquaredBesideAParameterThatDoesNotMatter") {
  // n matters, iterations vary too but the quantity does not depend on them (a setup phase).
  const std::vector<std::vector<double>> rows = {{100, 10}, {200, 30}, {300, 10}, {400, 20},
                                                 {500, 30}, {600, 20}};
  Matrix p = matrix(rows);
  std::vector<double> v;
  for (const auto& row : rows) v.push_back(1e-3 * row[0] * row[0]);
  auto fit = fit_param_model(p, v);
  REQUIRE(fit.ok());
  REQUIRE(fit.value().terms.size() == 1);
  REQUIRE(fit.value().terms[0].factors.size() == 1);
  CHECK(fit.value().terms[0].factors[0].parameter == 0);
  CHECK(fit.value().terms[0].factors[0].exponent == 2);
  CHECK(fit.value().terms[0].factors[0].log_exponent == 0);
  const std::vector<double> larger = {2000, 50};
  CHECK(fit.value().evaluate(larger) == doctest::Approx(4000).epsilon(1e-6));
}

TEST_CASE("ParamModelRecoversAProductOfTwoParameters") {
  // Per-rank work of a fixed grid over tasks: c * n^2 * iterations / tasks.
  const std::vector<std::vector<double>> rows = {{2, 64, 100},  {4, 128, 100}, {2, 128, 200},
                                                 {4, 64, 300},  {8, 256, 100}, {8, 64, 200},
                                                 {2, 256, 300}};
  Matrix p = matrix(rows);
  std::vector<double> v;
  for (const auto& row : rows) v.push_back(5e-4 * row[1] * row[1] * row[2] / row[0]);
  auto fit = fit_param_model(p, v);
  REQUIRE(fit.ok());
  CHECK(fit.value().loo_error < 1e-6);
  const std::vector<double> larger = {16, 512, 1000};
  CHECK(fit.value().evaluate(larger) ==
        doctest::Approx(5e-4 * 512 * 512 * 1000 / 16).epsilon(1e-6));
  const std::vector<std::string> names = {"ntasks", "n", "i"};
  CHECK(fit.value().describe(names).find("ntasks^-1") != std::string::npos);
}

TEST_CASE("ParamModelOfTwoParametersProduct") {
  const std::vector<std::vector<double>> rows = {{10, 3}, {20, 3}, {10, 6}, {40, 9},
                                                 {20, 12}, {30, 6}};
  Matrix p = matrix(rows);
  std::vector<double> v;
  for (const auto& row : rows) v.push_back(2 + 0.5 * row[0] * row[1]);
  auto fit = fit_param_model(p, v);
  REQUIRE(fit.ok());
  REQUIRE(fit.value().terms.size() == 1);
  CHECK(fit.value().terms[0].factors.size() == 2);
  const std::vector<double> larger = {100, 50};
  CHECK(fit.value().evaluate(larger) == doctest::Approx(2 + 0.5 * 5000).epsilon(1e-6));
}

TEST_CASE("ParamModelOfAConstantOrNoisyQuantityIsItsMean") {
  Noise noise;
  const std::vector<double> n = {10, 20, 30, 40, 50, 60};
  Matrix p(n.size(), 1);
  std::vector<double> v;
  for (size_t r = 0; r < n.size(); ++r) {
    p.at(r, 0) = n[r];
    v.push_back(100 * (1 + 0.01 * noise.next()));
  }
  auto fit = fit_param_model(p, v);
  REQUIRE(fit.ok());
  CHECK(fit.value().terms.empty());
  CHECK(fit.value().loo_error < 0.03);
}

TEST_CASE("ParamModelRefusesTooFewRunsAndIgnoresUnusableParameters") {
  auto two = fit_param_model(matrix({{1}, {2}}), std::vector<double>{1, 2});
  REQUIRE_FALSE(two.ok());
  CHECK(two.error().what.find("at least 3 runs") != std::string::npos);
  // A parameter of 0 in one run cannot take a logarithm or a root: it is left out, and the
  // model is the mean.
  auto zero = fit_param_model(matrix({{0}, {2}, {4}}), std::vector<double>{1, 2, 3});
  REQUIRE(zero.ok());
  CHECK(zero.value().terms.empty());
  CHECK(zero.value().constant == doctest::Approx(2));
}

TEST_CASE("AppModelRoundTripsThroughJsonAndRefusesAMismatchedShape") {
  // Four runs of "prog -n N" on 2 tasks: time = 0.1 + 1e-3 * n, one counter = n.
  std::vector<pskel::model::Run> runs;
  for (int n : {100, 200, 300, 500, 700}) {
    pskel::model::Run run;
    run.source = "run" + std::to_string(n);
    run.command = {"./prog", "-n", std::to_string(n)};
    run.ntasks = 2;
    run.seconds = 0.1 + 1e-3 * n;
    run.features = {{"prog.c:10:for", static_cast<double>(n)}, {"prog.c:3:then", 1}};
    runs.push_back(run);
  }
  auto fitted = pskel::model::fit_app_model(runs, RegressionOptions{});
  REQUIRE(fitted.ok());
  const nlohmann::json j = pskel::model::model_to_json(fitted.value());
  auto back = pskel::model::model_from_json(j);
  REQUIRE(back.ok());
  const std::vector<std::string> command = {"./prog", "-n", "2000"};
  auto p = pskel::model::predict_from_parameters(back.value(), command, 2);
  REQUIRE(p.ok());
  CHECK(p.value().seconds == doctest::Approx(2.1).epsilon(1e-6));
  CHECK(p.value().low_seconds <= p.value().seconds);
  CHECK(p.value().high_seconds >= p.value().seconds);

  // The form job_submit evaluates gives the same time, for the same command shape.
  auto exported = pskel::model::export_model(back.value());
  REQUIRE_MESSAGE(exported.ok(), exported.error().line());
  CHECK(exported.value().shape_key ==
        pskel::exportfile::shape_key(pskel::exportfile::job_parameters(command, 2).value().shape));
  const std::vector<double> parameters = {2, 2000};
  CHECK(pskel::exportfile::model_seconds(exported.value(), parameters) ==
        doctest::Approx(p.value().seconds));

  nlohmann::json broken = j;
  broken["parameters"] = {"ntasks"};  // the shape has a number: two parameters
  auto refused = pskel::model::model_from_json(broken);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().what.find("match") != std::string::npos);
  broken = j;
  broken["time_model"]["terms"] = {{{"coefficient", 1}, {"factors", {{{"parameter", 9},
                                                                       {"exponent", 1},
                                                                       {"log_exponent", 0}}}}}};
  CHECK_FALSE(pskel::model::model_from_json(broken).ok());
  const std::vector<std::string> other = {"./prog", "-m", "2000"};
  CHECK_FALSE(pskel::model::predict_from_parameters(back.value(), other, 2).ok());
  const std::vector<std::string> zero = {"./prog", "-n", "0"};
  CHECK_FALSE(pskel::model::predict_from_parameters(back.value(), zero, 2).ok());
}

TEST_CASE("RefitKeepsTheShapeAndFitsTheCoefficientsAgain") {
  const std::vector<double> n = {64, 128, 256, 512, 1024};
  Matrix p(n.size(), 1);
  std::vector<double> v, w;
  for (size_t r = 0; r < n.size(); ++r) {
    p.at(r, 0) = n[r];
    v.push_back(3 + 0.25 * n[r] * n[r]);
    w.push_back(1 + 2 * n[r] * n[r]);  // same shape, other coefficients
  }
  auto fit = fit_param_model(p, v);
  REQUIRE(fit.ok());
  auto refit = refit_param_model(fit.value(), p, w);
  REQUIRE(refit.ok());
  REQUIRE(refit.value().terms.size() == 1);
  CHECK(refit.value().terms[0].factors[0].exponent == 2);
  CHECK(refit.value().terms[0].coefficient == doctest::Approx(2));
  CHECK(refit.value().constant == doctest::Approx(1).epsilon(1e-6));
  CHECK_FALSE(refit_param_model(fit.value(), matrix({{1}}), std::vector<double>{1}).ok());
}

TEST_CASE("ParamModelOfManyVaryingParametersSearchesTheBestFew") {
  // Eight parameters vary; the value follows the fifth alone (n^2). The search keeps the four
  // whose single terms fit best and still finds it, quickly.
  Noise noise;
  const size_t runs = 8, params = 8;
  Matrix p(runs, params);
  std::vector<double> v;
  for (size_t r = 0; r < runs; ++r) {
    for (size_t c = 0; c < params; ++c) p.at(r, c) = 10 + 5 * (noise.next() + 1);
    p.at(r, 4) = 100 * static_cast<double>(r + 1);
    v.push_back(7 + 0.01 * p.at(r, 4) * p.at(r, 4));
  }
  auto fit = fit_param_model(p, v);
  REQUIRE(fit.ok());
  REQUIRE(fit.value().terms.size() == 1);
  REQUIRE(fit.value().terms[0].factors.size() == 1);
  CHECK(fit.value().terms[0].factors[0].parameter == 4);
  CHECK(fit.value().terms[0].factors[0].exponent == 2);
}

TEST_CASE("AppModelFitsEachInputsMedianRun") {
  // "prog -n N" on 2 tasks, time = 0.1 + 1e-3 * n, each input run three times; one run of every
  // input is twice as slow (a busy machine). The medians are the clean times.
  auto run_of = [](int n, int repeat, double seconds) {
    pskel::model::Run run;
    run.source = "run" + std::to_string(n) + "." + std::to_string(repeat);
    run.command = {"./prog", "-n", std::to_string(n)};
    run.ntasks = 2;
    run.seconds = seconds;
    run.features = {{"prog.c:10:for", static_cast<double>(n)}};
    return run;
  };
  std::vector<pskel::model::Run> runs;
  for (int repeat = 0; repeat < 3; ++repeat)
    for (int n : {100, 200, 300, 500, 700}) {
      const double clean = 0.1 + 1e-3 * n;
      runs.push_back(run_of(n, repeat, repeat == n % 3 ? 2 * clean : clean));
    }
  auto fitted = pskel::model::fit_app_model(runs, RegressionOptions{});
  REQUIRE_MESSAGE(fitted.ok(), fitted.error().line());
  REQUIRE(fitted.value().runs.size() == 5);
  for (const pskel::model::FittedRun& r : fitted.value().runs) {
    CHECK(r.repeats == 3);
    CHECK(r.seconds == doctest::Approx(0.1 + 1e-3 * r.parameters[1]));
  }
  const std::vector<std::string> command = {"./prog", "-n", "2000"};
  auto p = pskel::model::predict_from_parameters(fitted.value(), command, 2);
  REQUIRE(p.ok());
  CHECK(p.value().seconds == doctest::Approx(2.1).epsilon(1e-6));
  // The repeats survive the model's file; a model written without them reads as one run each.
  nlohmann::json j = pskel::model::model_to_json(fitted.value());
  auto back = pskel::model::model_from_json(j);
  REQUIRE(back.ok());
  CHECK(back.value().runs[0].repeats == 3);
  for (auto& r : j["runs"]) r.erase("repeats");
  back = pskel::model::model_from_json(j);
  REQUIRE(back.ok());
  CHECK(back.value().runs[0].repeats == 1);
  j["runs"][0]["repeats"] = 0.5;
  CHECK_FALSE(pskel::model::model_from_json(j).ok());

  // Four runs of one input are one input: refused, saying so.
  std::vector<pskel::model::Run> same(4, run_of(100, 0, 0.2));
  auto refused = pskel::model::fit_app_model(same, RegressionOptions{});
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().what.find("there are 4 runs of 1 input") != std::string::npos);

  // Inputs that differ but change nothing: the time's mean, and a model file without NaN.
  std::vector<pskel::model::Run> flat;
  for (int n : {100, 200, 300, 500}) {
    flat.push_back(run_of(n, 0, 0.25));
    flat.back().features = {{"prog.c:3:then", 1}};
  }
  auto mean = pskel::model::fit_app_model(flat, RegressionOptions{});
  REQUIRE_MESSAGE(mean.ok(), mean.error().line());
  CHECK_FALSE(mean.value().regression.has_value());
  CHECK(pskel::model::model_to_json(mean.value()).dump().find("NaN") == std::string::npos);
  CHECK(pskel::model::model_to_json(mean.value()).dump().find("null") == std::string::npos);
  auto flat_p = pskel::model::predict_from_parameters(mean.value(), command, 2);
  REQUIRE(flat_p.ok());
  CHECK(flat_p.value().seconds == doctest::Approx(0.25));
}
