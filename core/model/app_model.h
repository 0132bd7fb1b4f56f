// The run-time model of one application, fitted from its runs (runs.h): seed 001's regression
// of the run time over the runs' features, each kept feature modelled over the job's parameters
// (pmnf.h), and the run time modelled over the parameters directly. A job's time is predicted
// from its command line and task count alone (before it runs: what a scheduler needs) through
// whichever of the two paths predicted the runs left out better, or from the features of a run
// measured (the seed's own use). Pure functions over data; reentrant.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "export/export.h"
#include "model/pmnf.h"
#include "model/regression.h"
#include "model/runs.h"
#include "util/result.h"

namespace pskel::model {

// How well one way of predicting did on the runs, each left out in turn (refitted without it).
struct PathCheck {
  double loo_mean_error = 0;  // mean |predicted - actual| / actual
  double low_ratio = 1;       // the interval the left-out runs fell in: actual / predicted,
  double high_ratio = 1;      // widened to at least kMinIntervalShare on each side
};

inline constexpr size_t kMinModelRuns = 4;
inline constexpr double kMinIntervalShare = 0.02;

// One input of the application: the median of its runs (source and seconds are that run's).
struct FittedRun {
  std::string source;
  std::vector<double> parameters;
  double seconds = 0;
  size_t repeats = 1;  // the runs given of this input
};

struct AppModel {
  std::string program;
  std::string features_from;                  // Run::kind of every run
  std::vector<std::string> shape;             // JobParameters::shape of every run
  std::vector<std::string> parameter_names;   // JobParameters::names
  std::vector<FittedRun> runs;
  // The regression over features (absent when no feature varies); its feature indices are
  // into feature_names, which holds the kept features only.
  std::optional<LinearModel> regression;
  std::vector<std::string> feature_names;
  std::vector<ParamModel> feature_models;     // per kept feature, over the parameters
  ParamModel time_model;                      // the run time over the parameters
  std::optional<PathCheck> features_path;     // parameters -> features -> time
  PathCheck time_path;                        // parameters -> time
  bool use_features_path = false;             // for predictions from parameters
};

struct Prediction {
  double seconds = 0;
  double low_seconds = 0;
  double high_seconds = 0;
  std::string via;  // "features" or "time" (from parameters), "counters" (from a measured run)
};

// Fits the model of the runs, which must be of one application (one command shape) and of at
// least kMinModelRuns inputs (command lines and task counts). Runs of one input count as one,
// their median.
Result<AppModel> fit_app_model(const std::vector<Run>& runs, const RegressionOptions& options);

// The time of a job not yet run.
Result<Prediction> predict_from_parameters(const AppModel& model,
                                           std::span<const std::string> command, int ntasks);
// The time of a run whose features were measured (an instrumented run's counters).
Result<Prediction> predict_from_features(const AppModel& model, const Run& run);

// The model in the form job_submit evaluates (export/export.h's Model): the path used for
// predictions from parameters, its interval, and the key of its command shape; uid, app and
// model_id are the caller's to fill. Fails for a model the export cannot carry (more kept
// features than exportfile::kMaxModelGroups).
Result<exportfile::Model> export_model(const AppModel& model);

nlohmann::json model_to_json(const AppModel& model);
// Strict: any missing or mistyped field is an error naming it.
Result<AppModel> model_from_json(const nlohmann::json& j);

}  // namespace pskel::model
