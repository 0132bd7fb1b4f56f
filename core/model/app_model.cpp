#include "app_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

namespace pskel::model {
namespace {

constexpr int kFormatVersion = 1;
constexpr double kInfinity = std::numeric_limits<double>::infinity();
// The run time's own model is used instead of the counters' when its leave-one-out error is
// below half theirs and half a point lower.
constexpr double kTimePathMargin = 0.5;
constexpr double kTimePathFloor = 0.005;

std::string joined(std::span<const std::string> words) {
  std::string text;
  for (const auto& w : words) text += (text.empty() ? "" : " ") + w;
  return text;
}

// The check of a path from each left-out run's prediction (or an infinite error if a fold
// could not be fitted).
PathCheck check_of(std::span<const double> predicted, std::span<const double> actual) {
  PathCheck check;
  double sum = 0, low = 1, high = 1;
  for (size_t i = 0; i < actual.size(); ++i) {
    if (!std::isfinite(predicted[i])) {
      check.loo_mean_error = kInfinity;
      return check;
    }
    if (!(predicted[i] > 0)) {  // no time at all: as wrong as predicting 0, no ratio
      sum += 1;
      continue;
    }
    sum += std::fabs(predicted[i] - actual[i]) / actual[i];
    low = std::min(low, actual[i] / predicted[i]);
    high = std::max(high, actual[i] / predicted[i]);
  }
  check.loo_mean_error = sum / static_cast<double>(actual.size());
  check.low_ratio = std::min(low, 1 - kMinIntervalShare);
  check.high_ratio = std::max(high, 1 + kMinIntervalShare);
  return check;
}

Matrix without_row(const Matrix& x, size_t row) {
  Matrix out(x.rows() - 1, x.cols());
  for (size_t r = 0, o = 0; r < x.rows(); ++r) {
    if (r == row) continue;
    for (size_t c = 0; c < x.cols(); ++c) out.at(o, c) = x.at(r, c);
    ++o;
  }
  return out;
}

std::vector<double> without(std::span<const double> v, size_t i) {
  std::vector<double> out(v.begin(), v.end());
  out.erase(out.begin() + static_cast<std::ptrdiff_t>(i));
  return out;
}

std::vector<double> column(const Matrix& x, size_t c) {
  std::vector<double> out(x.rows());
  for (size_t r = 0; r < x.rows(); ++r) out[r] = x.at(r, c);
  return out;
}

std::vector<double> row_of(const Matrix& x, size_t r) {
  std::vector<double> out(x.cols());
  for (size_t c = 0; c < x.cols(); ++c) out[c] = x.at(r, c);
  return out;
}

// Time from parameters through the features: each kept feature from its model (a count is
// never below zero), then the regression.
double time_through_features(const LinearModel& regression,
                             std::span<const ParamModel> feature_models,
                             std::span<const double> parameters) {
  std::vector<double> features;
  for (const ParamModel& m : feature_models)
    features.push_back(std::max(0.0, m.evaluate(parameters)));
  return regression.predict(features);
}

nlohmann::json param_model_json(const ParamModel& m, std::span<const std::string> names) {
  nlohmann::json terms = nlohmann::json::array();
  for (const Term& t : m.terms) {
    nlohmann::json factors = nlohmann::json::array();
    for (const Factor& f : t.factors)
      factors.push_back({{"parameter", f.parameter},
                         {"exponent", f.exponent},
                         {"log_exponent", f.log_exponent}});
    terms.push_back({{"coefficient", t.coefficient}, {"factors", factors}});
  }
  return {{"constant", m.constant},
          {"terms", terms},
          {"loo_error", m.loo_error},
          {"loo_max_error", m.loo_max_error},
          {"text", m.describe(names)}};
}

nlohmann::json check_json(const PathCheck& c) {
  return {{"loo_mean_error", c.loo_mean_error},
          {"low_ratio", c.low_ratio},
          {"high_ratio", c.high_ratio}};
}

// The strict reader's helpers: each throws nothing and names the field that is wrong.
struct Reader {
  std::string error;
  bool failed() const { return !error.empty(); }
  const nlohmann::json* field(const nlohmann::json& j, const char* key, const std::string& where) {
    if (failed()) return nullptr;
    if (!j.is_object() || !j.contains(key)) {
      error = where + "." + key + " is missing";
      return nullptr;
    }
    return &j[key];
  }
  double number(const nlohmann::json& j, const char* key, const std::string& where) {
    const nlohmann::json* v = field(j, key, where);
    if (v == nullptr) return 0;
    if (!v->is_number() || !std::isfinite(v->get<double>())) {
      error = where + "." + key + " is not a finite number";
      return 0;
    }
    return v->get<double>();
  }
  std::string text(const nlohmann::json& j, const char* key, const std::string& where) {
    const nlohmann::json* v = field(j, key, where);
    if (v == nullptr) return "";
    if (!v->is_string()) {
      error = where + "." + key + " is not a string";
      return "";
    }
    return v->get<std::string>();
  }
  const nlohmann::json* array(const nlohmann::json& j, const char* key, const std::string& where) {
    const nlohmann::json* v = field(j, key, where);
    if (v != nullptr && !v->is_array()) {
      error = where + "." + key + " is not a list";
      return nullptr;
    }
    return v;
  }
  std::vector<std::string> strings(const nlohmann::json& j, const char* key,
                                   const std::string& where) {
    std::vector<std::string> out;
    const nlohmann::json* v = array(j, key, where);
    if (v == nullptr) return out;
    for (const auto& s : *v) {
      if (!s.is_string()) {
        error = where + "." + key + " holds something other than strings";
        return {};
      }
      out.push_back(s.get<std::string>());
    }
    return out;
  }
  ParamModel param_model(const nlohmann::json& j, const std::string& where, size_t parameters) {
    ParamModel m;
    m.constant = number(j, "constant", where);
    m.loo_error = number(j, "loo_error", where);
    m.loo_max_error = number(j, "loo_max_error", where);
    const nlohmann::json* terms = array(j, "terms", where);
    if (terms == nullptr) return m;
    for (const auto& t : *terms) {
      Term term;
      term.coefficient = number(t, "coefficient", where + ".terms[]");
      const nlohmann::json* factors = array(t, "factors", where + ".terms[]");
      if (factors == nullptr) return m;
      for (const auto& f : *factors) {
        const std::string at = where + ".terms[].factors[]";
        const double parameter = number(f, "parameter", at);
        const double exponent = number(f, "exponent", at);
        const double log_exponent = number(f, "log_exponent", at);
        if (failed()) return m;
        if (parameter < 0 || parameter >= static_cast<double>(parameters) ||
            parameter != std::floor(parameter) || std::fabs(exponent) > 8 ||
            (log_exponent != 0 && log_exponent != 1 && log_exponent != 2)) {
          error = at + " is out of range";
          return m;
        }
        term.factors.push_back(Factor{static_cast<size_t>(parameter), exponent,
                                      static_cast<int>(log_exponent)});
      }
      if (term.factors.empty()) {
        error = where + ".terms[].factors is empty";
        return m;
      }
      m.terms.push_back(std::move(term));
    }
    return m;
  }
  PathCheck check(const nlohmann::json& j, const std::string& where) {
    PathCheck c;
    // An infinite error was written as null: that path could not be checked.
    const nlohmann::json* error_value = field(j, "loo_mean_error", where);
    if (error_value == nullptr) return c;
    c.loo_mean_error = error_value->is_null() ? kInfinity : number(j, "loo_mean_error", where);
    c.low_ratio = number(j, "low_ratio", where);
    c.high_ratio = number(j, "high_ratio", where);
    if (!failed() && !(c.low_ratio > 0 && c.low_ratio <= 1 && c.high_ratio >= 1))
      error = where + " has an interval that does not hold 1";
    return c;
  }
};

}  // namespace

Result<AppModel> fit_app_model(const std::vector<Run>& given, const RegressionOptions& options) {
  AppModel model;
  std::vector<std::vector<double>> values;  // each given run's parameters
  for (size_t r = 0; r < given.size(); ++r) {
    auto p = job_parameters(given[r].command, given[r].ntasks);
    if (!p.ok()) return Error{given[r].source, p.error().what};
    if (given[r].kind != given[0].kind)
      return Error{given[r].source, "is a " + given[r].kind + " run and " + given[0].source +
                                        " a " + given[0].kind + " run; a model is fitted to one "
                                        "kind (their features differ)"};
    if (r == 0) {
      model.features_from = given[0].kind;
      model.program = p.value().program;
      model.shape = p.value().shape;
      model.parameter_names = p.value().names;
    } else if (p.value().shape != model.shape) {
      return Error{given[r].source, "is a run of another command (" + joined(p.value().shape) +
                                        ") than " + given[0].source + " (" +
                                        joined(model.shape) + "); a model is of one application"};
    }
    values.push_back(std::move(p.value().values));
  }
  // Runs of one input are one point: its median run. A run slowed by a busy machine then moves
  // nothing, where as a point of its own it would pull the fitted shape (and its extrapolation).
  std::map<std::vector<double>, std::vector<size_t>> by_input;
  for (size_t r = 0; r < given.size(); ++r) by_input[values[r]].push_back(r);
  if (by_input.size() < kMinModelRuns)
    return Error{"", "a model needs at least " + std::to_string(kMinModelRuns) +
                         " runs of the application with different inputs, there are " +
                         std::to_string(given.size()) + " runs of " +
                         std::to_string(by_input.size()) + " input" +
                         (by_input.size() == 1 ? "" : "s")};
  std::vector<Run> runs;
  Matrix parameters(by_input.size(), model.parameter_names.size());
  for (auto& [input, members] : by_input) {
    std::sort(members.begin(), members.end(), [&](size_t a, size_t b) {
      return given[a].seconds < given[b].seconds;
    });
    const Run& median = given[members[(members.size() - 1) / 2]];
    for (size_t c = 0; c < input.size(); ++c) parameters.at(runs.size(), c) = input[c];
    model.runs.push_back(FittedRun{median.source, input, median.seconds, members.size()});
    runs.push_back(median);
  }
  const size_t m = runs.size();
  std::set<std::string> names;
  for (const Run& run : runs)
    for (const auto& [name, value] : run.features) names.insert(name);
  std::vector<double> seconds;
  for (const Run& run : runs) seconds.push_back(run.seconds);

  // Seed 001: the run time over every feature, down to the few that explain it.
  const std::vector<std::string> all_names(names.begin(), names.end());
  Matrix features(m, all_names.size());
  for (size_t r = 0; r < m; ++r)
    for (size_t c = 0; c < all_names.size(); ++c) {
      const auto it = runs[r].features.find(all_names[c]);
      features.at(r, c) = it == runs[r].features.end() ? 0.0 : it->second;
    }
  Matrix kept;  // the kept features' columns
  if (!all_names.empty()) {
    auto regression = fit_regression(features, seconds, options);
    if (regression.ok()) {
      LinearModel linear = std::move(regression.value());
      kept = Matrix(m, linear.features.size());
      for (size_t k = 0; k < linear.features.size(); ++k) {
        model.feature_names.push_back(all_names[linear.features[k]]);
        for (size_t r = 0; r < m; ++r) kept.at(r, k) = features.at(r, linear.features[k]);
        linear.features[k] = k;
      }
      model.regression = std::move(linear);
    }
  }

  // Each kept feature, and the time, over the job's parameters.
  for (size_t k = 0; k < model.feature_names.size(); ++k) {
    auto fit = fit_param_model(parameters, column(kept, k));
    if (!fit.ok()) return Error{"", "feature " + model.feature_names[k] + ": " + fit.error().what};
    model.feature_models.push_back(std::move(fit.value()));
  }
  auto time_fit = fit_param_model(parameters, seconds);
  if (!time_fit.ok()) return Error{"", "run time: " + time_fit.error().what};
  model.time_model = std::move(time_fit.value());

  // Both paths judged alike: each run left out, every chosen model's coefficients fitted again
  // without it (the shapes and the kept features stay: searching them again on five runs mostly
  // measures the search's own instability).
  std::vector<double> by_time(m), by_features(m);
  bool features_checked = model.regression.has_value();
  std::vector<size_t> all_kept(kept.cols());
  for (size_t k = 0; k < all_kept.size(); ++k) all_kept[k] = k;
  for (size_t i = 0; i < m; ++i) {
    const Matrix p = without_row(parameters, i);
    const std::vector<double> y = without(seconds, i);
    const std::vector<double> at = row_of(parameters, i);
    auto t = refit_param_model(model.time_model, p, y);
    by_time[i] = t.ok() ? t.value().evaluate(at) : kInfinity;
    if (!features_checked) continue;
    const Matrix x = without_row(kept, i);
    auto linear = refit_regression(x, y, all_kept, options.ridge);
    std::vector<ParamModel> fold_models;
    for (size_t k = 0; k < kept.cols() && linear.ok(); ++k) {
      auto f = refit_param_model(model.feature_models[k], p, column(x, k));
      if (!f.ok()) break;
      fold_models.push_back(std::move(f.value()));
    }
    by_features[i] = linear.ok() && fold_models.size() == kept.cols()
                         ? time_through_features(linear.value(), fold_models, at)
                         : kInfinity;
  }
  model.time_path = check_of(by_time, seconds);
  if (features_checked) model.features_path = check_of(by_features, seconds);
  // The counters' path unless the time's own model is clearly better: a count is an exact
  // function of the inputs and extrapolates, where a shape fitted to a few noisy run times
  // often fits them best by chance.
  model.use_features_path =
      model.features_path && std::isfinite(model.features_path->loo_mean_error) &&
      !(model.time_path.loo_mean_error <
        kTimePathMargin * model.features_path->loo_mean_error - kTimePathFloor);
  return model;
}

Result<Prediction> predict_from_parameters(const AppModel& model,
                                           std::span<const std::string> command, int ntasks) {
  auto p = job_parameters(command, ntasks);
  if (!p.ok()) return p.error();
  if (p.value().shape != model.shape)
    return Error{"", "the command (" + joined(p.value().shape) +
                         ") is not of the modelled application (" + joined(model.shape) + ")"};
  const std::vector<double>& values = p.value().values;
  for (size_t i = 0; i < values.size(); ++i)
    if (!(values[i] > 0))
      return Error{"", "parameter " + model.parameter_names[i] + " is " +
                           std::to_string(values[i]) + ": the models need values above zero"};
  struct Way {
    bool usable;
    double seconds;
    const PathCheck* check;
    const char* via;
  };
  Way features{model.regression.has_value() && model.features_path.has_value(), 0, nullptr,
               "features"};
  if (features.usable) {
    features.seconds = time_through_features(*model.regression, model.feature_models, values);
    features.check = &*model.features_path;
  }
  Way time{true, model.time_model.evaluate(values), &model.time_path, "time"};
  Way order[2] = {model.use_features_path ? features : time,
                  model.use_features_path ? time : features};
  for (const Way& way : order) {
    if (!way.usable || !(way.seconds > 0) || !std::isfinite(way.seconds) ||
        !std::isfinite(way.check->loo_mean_error))
      continue;
    return Prediction{way.seconds, way.seconds * way.check->low_ratio,
                      way.seconds * way.check->high_ratio, way.via};
  }
  return Error{"", "the model gives no time above zero for these parameters (runs nearer to "
                   "them would help)"};
}

Result<Prediction> predict_from_features(const AppModel& model, const Run& run) {
  if (!model.regression)
    return Error{run.source, "the model has no regression over features (no feature varied "
                             "in the runs it was fitted to)"};
  auto p = job_parameters(run.command, run.ntasks);
  if (!p.ok()) return Error{run.source, p.error().what};
  if (p.value().program != model.program)
    return Error{run.source, "is a run of " + p.value().program + ", the model is of " +
                                 model.program};
  if (run.kind != model.features_from)
    return Error{run.source, "is a " + run.kind + " run, the model was fitted to " +
                                 model.features_from + " runs"};
  std::vector<double> row;
  for (const std::string& name : model.feature_names) {
    const auto it = run.features.find(name);
    row.push_back(it == run.features.end() ? 0.0 : it->second);
  }
  const double seconds = model.regression->predict(row);
  if (!(seconds > 0) || !std::isfinite(seconds))
    return Error{run.source, "the model gives no time above zero for these counters"};
  const RegressionRound& round = model.regression->rounds.at(model.regression->chosen_round);
  const double share = std::max(kMinIntervalShare, round.loo_max_error);
  return Prediction{seconds, seconds * std::max(0.0, 1 - share), seconds * (1 + share),
                    "counters"};
}

Result<exportfile::Model> export_model(const AppModel& model) {
  exportfile::Model out;
  out.shape_key = exportfile::shape_key(model.shape);
  out.parameters = static_cast<uint32_t>(model.parameter_names.size());
  auto group_of = [](const ParamModel& m, double weight, bool clamp) {
    exportfile::ModelGroup g{weight, clamp, m.constant, {}};
    for (const Term& t : m.terms) {
      exportfile::ModelTerm term{t.coefficient, {}};
      for (const Factor& f : t.factors)
        term.factors.push_back({static_cast<uint32_t>(f.parameter), f.exponent, f.log_exponent});
      g.terms.push_back(std::move(term));
    }
    return g;
  };
  const PathCheck* used = &model.time_path;
  if (model.use_features_path && model.regression && model.features_path) {
    used = &*model.features_path;
    out.intercept = model.regression->intercept;
    for (size_t k = 0; k < model.feature_models.size(); ++k)
      out.groups.push_back(group_of(model.feature_models[k], model.regression->coefficients[k],
                                    /*clamp=*/true));  // a count is never below zero
  } else {
    out.groups.push_back(group_of(model.time_model, 1, false));
  }
  out.low_ratio = std::clamp(used->low_ratio, 1e-3, 1.0);
  out.high_ratio = std::clamp(used->high_ratio, 1.0, 100.0);
  out.app = "-";  // the caller's
  if (!exportfile::valid_model(out))
    return Error{"", "the model does not fit the export (" + std::to_string(out.groups.size()) +
                         " kept features, at most " +
                         std::to_string(exportfile::kMaxModelGroups) + ")"};
  return out;
}

nlohmann::json model_to_json(const AppModel& model) {
  nlohmann::json runs = nlohmann::json::array();
  for (const FittedRun& r : model.runs)
    runs.push_back({{"source", r.source},
                    {"parameters", r.parameters},
                    {"seconds", r.seconds},
                    {"repeats", r.repeats}});
  nlohmann::json j = {{"format", "pskel-model"},
                      {"version", kFormatVersion},
                      {"program", model.program},
                      {"features_from", model.features_from},
                      {"shape", model.shape},
                      {"parameters", model.parameter_names},
                      {"runs", runs},
                      {"time_model", param_model_json(model.time_model, model.parameter_names)},
                      {"time_path", check_json(model.time_path)},
                      {"chosen", model.use_features_path ? "features" : "time"}};
  if (model.regression) {
    const LinearModel& r = *model.regression;
    nlohmann::json features = nlohmann::json::array();
    for (size_t k = 0; k < model.feature_names.size(); ++k)
      features.push_back({{"name", model.feature_names[k]},
                          {"coefficient", r.coefficients[k]},
                          {"model", param_model_json(model.feature_models[k],
                                                     model.parameter_names)}});
    nlohmann::json rounds = nlohmann::json::array();
    for (const RegressionRound& round : r.rounds)
      rounds.push_back({{"features", round.features},
                        {"loo_mean_error", round.loo_mean_error},
                        {"loo_max_error", round.loo_max_error}});
    j["regression"] = {{"intercept", r.intercept},
                       {"features", features},
                       {"rounds", rounds},
                       {"chosen_round", r.chosen_round},
                       {"constant_features", r.constant_features},
                       {"duplicate_features", r.duplicate_features}};
    if (model.features_path) j["features_path"] = check_json(*model.features_path);
  }
  // JSON has no infinity: a path that could not be checked is written as null.
  for (const char* path : {"time_path", "features_path"})
    if (j.contains(path) && !std::isfinite(j[path]["loo_mean_error"].get<double>()))
      j[path]["loo_mean_error"] = nullptr;
  return j;
}

Result<AppModel> model_from_json(const nlohmann::json& j) {
  Reader in;
  AppModel model;
  if (!j.is_object() || j.value("format", "") != "pskel-model")
    return Error{"", "not a pskel model (\"format\" is not \"pskel-model\")"};
  if (in.number(j, "version", "model") != kFormatVersion)
    return Error{"", in.failed() ? in.error : "model version is not " +
                                                  std::to_string(kFormatVersion)};
  model.program = in.text(j, "program", "model");
  model.features_from = in.text(j, "features_from", "model");
  if (!in.failed() && model.features_from != "counters" && model.features_from != "trace")
    in.error = "model.features_from is neither \"counters\" nor \"trace\"";
  model.shape = in.strings(j, "shape", "model");
  model.parameter_names = in.strings(j, "parameters", "model");
  const size_t parameters = model.parameter_names.size();
  if (!in.failed()) {
    // One parameter per number slot of the shape, and ntasks.
    size_t slots = 1;
    for (const std::string& word : model.shape)
      slots += word == kNumberSlot || word.ends_with(std::string("=") + kNumberSlot);
    if (model.shape.empty() || parameters != slots)
      in.error = "model.parameters does not match model.shape's numbers";
  }
  if (const nlohmann::json* runs = in.array(j, "runs", "model"))
    for (const auto& r : *runs) {
      FittedRun run;
      run.source = in.text(r, "source", "model.runs[]");
      run.seconds = in.number(r, "seconds", "model.runs[]");
      // Models written before runs of one input were merged have no "repeats": one run each.
      if (r.is_object() && r.contains("repeats")) {
        const double repeats = in.number(r, "repeats", "model.runs[]");
        if (!in.failed() && !(repeats >= 1 && repeats == std::floor(repeats)))
          in.error = "model.runs[].repeats is not a count of runs";
        run.repeats = static_cast<size_t>(repeats);
      }
      if (const nlohmann::json* values = in.array(r, "parameters", "model.runs[]"))
        for (const auto& v : *values) {
          if (!v.is_number()) in.error = "model.runs[].parameters holds a non-number";
          if (in.failed()) break;
          run.parameters.push_back(v.get<double>());
        }
      model.runs.push_back(std::move(run));
    }
  if (const nlohmann::json* time = in.field(j, "time_model", "model"))
    model.time_model = in.param_model(*time, "model.time_model", parameters);
  if (const nlohmann::json* path = in.field(j, "time_path", "model"))
    model.time_path = in.check(*path, "model.time_path");
  const std::string chosen = in.text(j, "chosen", "model");
  if (!in.failed() && chosen != "features" && chosen != "time")
    in.error = "model.chosen is neither \"features\" nor \"time\"";
  if (!in.failed() && j.contains("regression")) {
    const nlohmann::json& r = j["regression"];
    LinearModel linear;
    linear.intercept = in.number(r, "intercept", "model.regression");
    const double chosen_round = in.number(r, "chosen_round", "model.regression");
    if (const nlohmann::json* rounds = in.array(r, "rounds", "model.regression"))
      for (const auto& round : *rounds) {
        RegressionRound rr;
        rr.features = static_cast<size_t>(in.number(round, "features", "model.regression.rounds[]"));
        rr.loo_mean_error = in.number(round, "loo_mean_error", "model.regression.rounds[]");
        rr.loo_max_error = in.number(round, "loo_max_error", "model.regression.rounds[]");
        linear.rounds.push_back(rr);
      }
    if (!in.failed() && !(chosen_round >= 0 && chosen_round < static_cast<double>(linear.rounds.size())))
      in.error = "model.regression.chosen_round is not one of its rounds";
    linear.chosen_round = static_cast<size_t>(chosen_round);
    if (const nlohmann::json* features = in.array(r, "features", "model.regression"))
      for (const auto& f : *features) {
        model.feature_names.push_back(in.text(f, "name", "model.regression.features[]"));
        linear.features.push_back(linear.coefficients.size());
        linear.coefficients.push_back(in.number(f, "coefficient", "model.regression.features[]"));
        if (const nlohmann::json* fm = in.field(f, "model", "model.regression.features[]"))
          model.feature_models.push_back(
              in.param_model(*fm, "model.regression.features[].model", parameters));
      }
    if (const nlohmann::json* path = in.field(j, "features_path", "model"))
      model.features_path = in.check(*path, "model.features_path");
    model.regression = std::move(linear);
  }
  if (in.failed()) return Error{"", in.error};
  model.use_features_path = chosen == "features";
  if (model.use_features_path && !model.features_path)
    return Error{"", "model.chosen is \"features\" but the model has no features path"};
  return model;
}

}  // namespace pskel::model
