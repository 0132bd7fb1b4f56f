// pskel model fit|predict|show: run-time models of an application over its inputs and task
// count (seed 001's regression over counters, each kept counter and the time modelled over the
// job's parameters). A thin shell over core/model; docs/model.md.
#include <fmt/format.h>

#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "model/app_model.h"
#include "model/trace_run.h"
#include "util/file_read.h"
#include "util/json_text.h"

namespace pskel::cli {
namespace {

// A model is a few hundred kB at most (the kept features and the runs).
constexpr uint64_t kMaxModelBytes = 64ull << 20;

struct FitOptions {
  std::vector<std::string> dirs;
  std::string output;
  double keep_share = 0.5;
  size_t features = 0;
  bool json = false;
};

struct ModelPredictOptions {
  std::string model;
  std::vector<std::string> rest;  // a counter directory, or after --: the job's command
  int ntasks = 0;
  bool json = false;
};

struct FeaturesOptions {
  std::string dir;
};

struct ShowOptions {
  std::string model;
  bool json = false;
};

std::string percent(double share) {
  return std::isfinite(share) ? fmt::format("{:.1f} %", 100 * share) : "none (a fit failed)";
}

Result<model::AppModel> load_model(const std::string& path) {
  auto text = read_regular_file(path, kMaxModelBytes);
  if (!text.ok()) return text.error();
  const nlohmann::json j = nlohmann::json::parse(text.value(), nullptr, false);
  if (j.is_discarded()) return Error{path, "not JSON"};
  auto model = model::model_from_json(j);
  if (!model.ok()) return Error{path, model.error().what};
  return model;
}

void print_model(const model::AppModel& m) {
  size_t given = 0;
  for (const model::FittedRun& run : m.runs) given += run.repeats;
  if (given == m.runs.size())
    fmt::print("model of {} from {} runs (parameters: {})\n", m.program, m.runs.size(),
               fmt::join(m.parameter_names, ", "));
  else
    fmt::print("model of {} from {} runs of {} inputs, each input's median run (parameters: "
               "{})\n",
               m.program, given, m.runs.size(), fmt::join(m.parameter_names, ", "));
  if (m.regression) {
    const model::LinearModel& r = *m.regression;
    fmt::print("regression over the counters ({} the same in every run, {} proportional to "
               "another, left out):\n",
               r.constant_features, r.duplicate_features);
    for (size_t i = 0; i < r.rounds.size(); ++i)
      fmt::print("  round {}: {:>5} features, leave-one-out error {} (max {}){}\n", i + 1,
                 r.rounds[i].features, percent(r.rounds[i].loo_mean_error),
                 percent(r.rounds[i].loo_max_error), i == r.chosen_round ? "  <- kept" : "");
    fmt::print("run time = {:.6g} s", r.intercept);
    for (size_t k = 0; k < m.feature_names.size(); ++k)
      fmt::print(" + {:.6g} s x [{}]", r.coefficients[k], m.feature_names[k]);
    fmt::print("\n");
    for (size_t k = 0; k < m.feature_names.size(); ++k)
      fmt::print("  [{}] = {}  (leave-one-out {})\n", m.feature_names[k],
                 m.feature_models[k].describe(m.parameter_names),
                 percent(m.feature_models[k].loo_error));
  } else {
    fmt::print("no regression over counters: no counter varied between the runs\n");
  }
  fmt::print("run time over the parameters: {} s  (leave-one-out {})\n",
             m.time_model.describe(m.parameter_names), percent(m.time_model.loo_error));
  fmt::print("from a command line, each run left out and the coefficients refitted:\n");
  if (m.features_path)
    fmt::print("  through the counters  {}{}\n", percent(m.features_path->loo_mean_error),
               m.use_features_path ? "  <- used" : "");
  fmt::print("  time directly         {}{}\n", percent(m.time_path.loo_mean_error),
             m.use_features_path ? "" : "  <- used");
}

int run_fit(const FitOptions& opt) {
  std::vector<model::Run> runs;
  for (const std::string& dir : opt.dirs) {
    auto run = model::read_run(dir);
    if (!run.ok()) return fail(run.error().line());
    runs.push_back(std::move(run.value()));
  }
  model::RegressionOptions options;
  options.keep_share = opt.keep_share;
  options.target_features = opt.features;
  auto fitted = model::fit_app_model(runs, options);
  if (!fitted.ok()) return fail(fitted.error().line());
  const nlohmann::json j = model::model_to_json(fitted.value());
  if (const std::string why = write_file_replacing(opt.output, json_text(j, 1) + "\n");
      !why.empty())
    return fail(why);
  if (opt.json) {
    fmt::print("{}\n", json_text(j, 2));
    return 0;
  }
  print_model(fitted.value());
  fmt::print("wrote {}\n", opt.output);
  return 0;
}

int run_model_predict(const ModelPredictOptions& opt) {
  auto loaded = load_model(opt.model);
  if (!loaded.ok()) return fail(loaded.error().line());
  const model::AppModel& m = loaded.value();
  Result<model::Prediction> prediction = Error{"", ""};
  if (opt.ntasks > 0) {
    if (opt.rest.empty()) {
      fail("model predict: --ntasks needs the job's command after --");
      return 2;
    }
    prediction = model::predict_from_parameters(m, opt.rest, opt.ntasks);
  } else {
    if (opt.rest.size() != 1) {
      fail("model predict: give a counter directory, or --ntasks N -- PROGRAM ARGS...");
      return 2;
    }
    auto run = model::read_run(opt.rest[0]);
    if (!run.ok()) return fail(run.error().line());
    prediction = model::predict_from_features(m, run.value());
  }
  if (!prediction.ok()) {
    const Error& e = prediction.error();
    return fail(e.file.empty() ? opt.model + ": " + e.what : e.line());
  }
  const model::Prediction& p = prediction.value();
  if (opt.json) {
    fmt::print("{}\n", json_text({{"predicted_seconds", p.seconds},
                                  {"low_seconds", p.low_seconds},
                                  {"high_seconds", p.high_seconds},
                                  {"via", p.via},
                                  {"program", m.program},
                                  {"runs", m.runs.size()}},
                                 2));
    return 0;
  }
  const char* how = p.via == "features" ? "through the counters' models"
                    : p.via == "time"   ? "from the run time's model"
                                        : "from the measured counters";
  fmt::print("predicted {:.3f} s ({:.3f} - {:.3f} s), {}\n", p.seconds, p.low_seconds,
             p.high_seconds, how);
  return 0;
}

// One run as the models read it, as JSON: what the epilog worker stores per traced job (run as
// the job's user: the trace is the user's to read).
int run_features(const FeaturesOptions& opt) {
  auto run = model::read_run(opt.dir);
  if (!run.ok()) return fail(run.error().line());
  const model::Run& r = run.value();
  fmt::print("{}\n", json_text({{"kind", r.kind},
                                {"command", r.command},
                                {"ntasks", r.ntasks},
                                {"seconds", r.seconds},
                                {"features", r.features}},
                               2));
  return 0;
}

int run_show(const ShowOptions& opt) {
  auto loaded = load_model(opt.model);
  if (!loaded.ok()) return fail(loaded.error().line());
  if (opt.json) {
    fmt::print("{}\n", json_text(model::model_to_json(loaded.value()), 2));
    return 0;
  }
  print_model(loaded.value());
  return 0;
}

}  // namespace

Subcommand add_model_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "model", "Run-time models over an application's inputs and task count (docs/model.md)");
  cmd->require_subcommand(1);

  auto fit = std::make_shared<FitOptions>();
  CLI::App* fit_cmd = cmd->add_subcommand(
      "fit", "Fit a model to runs of one application (counter or trace directories)");
  fit_cmd->add_option("DIR", fit->dirs,
                      "One directory per run (4 at least): PSKEL_COUNTERS's or a trace's")
      ->required();
  fit_cmd->add_option("-o,--output", fit->output, "Write the model here (JSON)")->required();
  fit_cmd->add_option("--keep-share", fit->keep_share,
                      "Share of the features each regression round keeps (default 0.5)")
      ->check(CLI::Range(0.01, 0.99));
  fit_cmd->add_option("--features", fit->features,
                      "Stop the regression at this many features (default: the round with the "
                      "smallest leave-one-out error)")
      ->check(CLI::Range(1, 1000000));
  fit_cmd->add_flag("--json", fit->json, "Print the model as JSON instead of the summary");

  auto predict = std::make_shared<ModelPredictOptions>();
  CLI::App* predict_cmd = cmd->add_subcommand(
      "predict",
      "Predict a job's run time: MODEL --ntasks N -- PROGRAM ARGS..., or MODEL COUNTER_DIR");
  predict_cmd->add_option("MODEL", predict->model, "The model (pskel model fit)")->required();
  predict_cmd->add_option("ARGS", predict->rest,
                          "A counter directory, or after --: the job's command line");
  predict_cmd->add_option("--ntasks", predict->ntasks, "The job's task count")
      ->check(CLI::Range(1, 1 << 24));
  predict_cmd->add_flag("--json", predict->json,
                        "Print JSON (keys: predicted_seconds, low_seconds, high_seconds, via)");

  auto features = std::make_shared<FeaturesOptions>();
  CLI::App* features_cmd = cmd->add_subcommand(
      "features", "Print one run's features, task count, command and time as JSON");
  features_cmd->add_option("DIR", features->dir, "A counter or trace directory")->required();

  auto show = std::make_shared<ShowOptions>();
  CLI::App* show_cmd =
      cmd->add_subcommand("show", "Print a model: kept features by source location, terms");
  show_cmd->add_option("MODEL", show->model, "The model (pskel model fit)")->required();
  show_cmd->add_flag("--json", show->json, "Print the model's JSON");

  return {cmd, [=]() {
            if (fit_cmd->parsed()) return run_fit(*fit);
            if (predict_cmd->parsed()) return run_model_predict(*predict);
            if (features_cmd->parsed()) return run_features(*features);
            return run_show(*show);
          }};
}

}  // namespace pskel::cli
