// pskel predict OUT [--launcher "mpiexec -n N"] [--repeat R | --min-seconds S] [--json]: runs the
// skeleton that `pskel skeleton` built in OUT and turns its time into a prediction of the
// original's.
//
// The skeleton prints (skeletons/pskel_runtime.h) its raw time from the end of MPI_Init to the
// start of MPI_Finalize and that time weighted back (scaled loops x N/run, compute outside them
// x K). What the launcher, MPI_Init and MPI_Finalize cost does not scale: it is the run's wall
// time minus the skeleton's own time (and its warm-up, pskel_runtime.h), added back once. So
//     predicted_seconds = weighted time + (wall time - skeleton time - warm-up).
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "child/child.h"
#include "commands.h"
#include "progress/progress.h"
#include "util/json_text.h"

namespace pskel::cli {
namespace {

namespace fs = std::filesystem;

// Below this the skeleton's own time is too short to measure steadily (see run_predict()).
constexpr double kSteadySkeletonSeconds = 0.5;
// Without --repeat, runs until the skeleton's timed parts add up to --min-seconds, but no more
// runs than this: a K = 10 skeleton of a 6 s program (0.6 s) varied by +-3 % from run to run
// here, and the prediction multiplies that by K. With 2 s (four such runs) 4 of the accuracy
// bench's 32 idle cells missed 3 %; with 6 s (ten), none did (docs/skeleton.md). Six seconds
// of skeleton are little beside the jobs predicted; a skeleton longer than that runs once.
constexpr int kMaxAutoRuns = 10;
// Seconds a skeleton run that printed its result has to exit: MPI_Finalize, after the
// finalize pause (skeletons/finalize_pause.h), takes well under one.
constexpr double kExitGraceSeconds = 10;
constexpr double kDefaultMinSeconds = 6.0;

struct PredictOptions {
  std::string out, launcher;
  int repeat = 0;  // 0: as many as --min-seconds needs
  double min_seconds = kDefaultMinSeconds;
  double timeout = 0;
  bool json = false;
};

struct Run {
  double wall = 0, skeleton = 0, scaled = 0, unscaled = 0, weighted = 0, warmup = 0;
  double startup = 0;    // what the skeleton did not account: launcher, MPI_Init, MPI_Finalize
  double predicted = 0;  // weighted + startup
  double stream_ratio = 0;  // the memory part's streaming against the probe (skeletons/stream.h)
  long errors = 0;
};

// The values of "key=value" words on the runtime's line.
bool parse_line(const std::string& out, Run& run) {
  const size_t at = out.rfind("pskel-skeleton: ranks=");
  if (at == std::string::npos) return false;
  std::istringstream words(out.substr(at, out.find('\n', at) - at));
  std::string word;
  int found = 0;
  while (words >> word) {
    const size_t eq = word.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = word.substr(0, eq);
    const double value = std::strtod(word.c_str() + eq + 1, nullptr);
    if (key == "skeleton_seconds") run.skeleton = value, ++found;
    else if (key == "scaled_seconds") run.scaled = value;
    else if (key == "unscaled_seconds") run.unscaled = value;
    else if (key == "predicted_seconds") run.weighted = value, ++found;
    else if (key == "errors") run.errors = static_cast<long>(value);
    else if (key == "warmup_seconds") run.warmup = value;
    else if (key == "stream_ratio") run.stream_ratio = value;
  }
  return found == 2;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string last_line(const std::string& text) {
  size_t end = text.find_last_not_of(" \n");
  if (end == std::string::npos) return "";
  const size_t start = text.rfind('\n', end);
  return text.substr(start == std::string::npos ? 0 : start + 1, end - (start == std::string::npos ? 0 : start + 1) + 1);
}

// Splits a launcher string ("mpiexec -n 4", "srun --mpi=pmi2") at blanks; single and double
// quotes group words. Not a shell.
std::vector<std::string> split_words(const std::string& text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (char c : text) {
    if (quote) {
      if (c == quote) quote = 0;
      else word += c;
      continue;
    }
    if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(word);
      word.clear();
      in_word = false;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (in_word) words.push_back(word);
  return words;
}

int run_predict(const PredictOptions& opt) {
  const fs::path dir(opt.out);
  const fs::path json_path = dir / "skeleton.json";
  std::ifstream in(json_path);
  if (!in) return fail(fmt::format("{}: missing (not a directory `pskel skeleton` wrote)", json_path.string()));
  nlohmann::json desc = nlohmann::json::parse(in, nullptr, false);
  if (!desc.is_object() || !desc.contains("scale") || !desc["scale"].is_number() ||
      !desc.contains("binary") || !desc["binary"].is_string() || !desc.contains("ranks") ||
      !desc["ranks"].is_number_integer())
    return fail(fmt::format("{}: not a skeleton description (needs scale, binary, ranks)", json_path.string()));
  const std::string binary = desc["binary"].get<std::string>();
  if (!fs::exists(binary)) return fail(fmt::format("{}: missing (build it with `pskel skeleton`)", binary));
  const std::string mpi = desc.contains("mpi") && desc["mpi"].is_string() ? desc["mpi"].get<std::string>() : "";
  std::vector<std::string> command =
      opt.launcher.empty()
          ? std::vector<std::string>{mpi == "openmpi" ? "mpiexec.openmpi" : mpi == "mpich" ? "mpiexec.mpich" : "mpiexec",
                                     "-n", std::to_string(desc["ranks"].get<int>())}
          : split_words(opt.launcher);
  command.push_back(binary);
  double timeout = opt.timeout;
  if (timeout <= 0) {
    const double estimate = desc.contains("estimated_skeleton_seconds") && desc["estimated_skeleton_seconds"].is_number()
                                ? desc["estimated_skeleton_seconds"].get<double>()
                                : 60.0;
    timeout = 120.0 + 10.0 * estimate;
  }

  child::Options launch;
  launch.search_path = true;
  launch.stop_on_interrupt = true;
  launch.timeout_seconds = timeout;
  // The skeleton prints its result before MPI_Finalize. A run that then does not exit (MPICH
  // 4.0's finalize hang across nodes, docs/cluster.md) is ended after a grace of seconds, and
  // its result kept: time to the result line stands for its wall time.
  launch.done_line = "pskel-skeleton: ranks=";
  launch.exit_grace_seconds = kExitGraceSeconds;
  int hung_in_finalize = 0;
  std::vector<Run> runs;
  double measured = 0;  // the skeleton's timed parts so far
  const auto more = [&] {
    if (opt.repeat > 0) return static_cast<int>(runs.size()) < opt.repeat;
    return runs.empty() || (measured < opt.min_seconds && static_cast<int>(runs.size()) < kMaxAutoRuns);
  };
  progress::Progress progress_line("pskel predict", progress::wanted(opt.json));
  progress_line.phase("skeleton runs");
  while (more()) {
    progress_line.detail(
        fmt::format("run {}, {:.1f} s of skeleton time measured", runs.size() + 1, measured));
    const child::Result p = child::run(command, launch);
    if (!p.started || p.interrupted) return fail(p.failure());
    if (p.timed_out) return fail(binary + ": " + p.failure());
    Run r;
    hung_in_finalize += p.killed_after_done ? 1 : 0;
    if ((p.exit_code != 0 && !p.killed_after_done) || !parse_line(p.out, r)) {
      const std::string why = last_line(p.err);
      return fail(fmt::format("{}: exited with status {}{}{}", binary, p.exit_code, why.empty() ? "" : ": ", why));
    }
    r.wall = p.killed_after_done ? p.done_seconds : p.seconds;
    r.startup = std::max(0.0, r.wall - r.skeleton - r.warmup);
    r.predicted = r.weighted + r.startup;
    measured += r.skeleton;
    runs.push_back(r);
  }
  progress_line.detail(fmt::format("{} run(s), {:.1f} s of skeleton time", runs.size(), measured));
  progress_line.done();
  std::vector<double> walls, predicted, skeletons, weighted, startups;
  long errors = 0;
  for (const Run& r : runs) {
    walls.push_back(r.wall);
    predicted.push_back(r.predicted);
    skeletons.push_back(r.skeleton);
    weighted.push_back(r.weighted);
    startups.push_back(r.startup);
    errors += r.errors;
  }
  const double prediction = median(predicted);
  // Measured under a CPU quota, a skeleton whose scaled part lasts a few 100 ms scheduler
  // periods came out 5-11 % low at K = 10 (where its compute falls in the run/throttle rhythm
  // does not average out, and the error is multiplied by K); from 0.6 s on, cg was within 1 %.
  const double scaled = median(skeletons);
  std::string short_note =
      scaled < kSteadySkeletonSeconds && desc["scale"].get<double>() > 1
          ? fmt::format("the skeleton ran {:.2f} s: under a CPU quota or on a busy node, errors of "
                        "scheduling are multiplied by the scale; a smaller --scale (or --scale auto) "
                        "gives one of at least {:.1f} s",
                        scaled, kSteadySkeletonSeconds)
          : "";
  if (hung_in_finalize > 0)
    short_note += fmt::format("{}{} of {} run(s) printed their result and did not exit within {:g} s "
                              "(killed; an MPI_Finalize hang, docs/cluster.md)",
                              short_note.empty() ? "" : "; ", hung_in_finalize, runs.size(),
                              kExitGraceSeconds);
  if (opt.json) {
    nlohmann::json runs_json = nlohmann::json::array();
    for (const Run& r : runs)
      runs_json.push_back({{"wall_seconds", r.wall},
                           {"skeleton_elapsed_seconds", r.skeleton},
                           {"scaled_seconds", r.scaled},
                           {"unscaled_seconds", r.unscaled},
                           {"weighted_seconds", r.weighted},
                           {"warmup_seconds", r.warmup},
                           {"stream_ratio", r.stream_ratio},
                           {"predicted_seconds", r.predicted}});
    nlohmann::json out = {
        {"skeleton_seconds", median(walls)},
        {"scale", desc["scale"]},
        {"predicted_seconds", prediction},
        {"predicted_elapsed_seconds", median(weighted)},
        {"startup_seconds", median(startups)},
        {"skeleton_elapsed_seconds", median(skeletons)},
        {"repeat", runs.size()},
        {"errors", errors},
        {"launcher", command},
        {"runs", runs_json},
        {"note", short_note},
    };
    fmt::print("{}\n", json_text(out, 2));
    return 0;
  }
  fmt::print("skeleton   {:.3f} s (median of {}, scale {})\n", median(walls), runs.size(),
             json_text(desc["scale"]));
  fmt::print("startup    {:.3f} s (launcher, MPI_Init, MPI_Finalize: not scaled)\n", median(startups));
  fmt::print("predicted  {:.3f} s\n", prediction);
  if (errors > 0) fmt::print("warning    {} MPI call(s) of the skeleton failed\n", errors);
  if (!short_note.empty()) fmt::print("note       {}\n", short_note);
  return 0;
}

}  // namespace

Subcommand add_predict_command(CLI::App& app) {
  auto opt = std::make_shared<PredictOptions>();
  CLI::App* cmd = app.add_subcommand("predict", "Run a skeleton and predict the original's run time");
  cmd->footer(fmt::format(
      "Runs OUT/skeleton under the launcher (default: mpiexec of the trace's MPI with the traced\n"
      "number of ranks) and prints predicted_seconds = the skeleton's weighted time + what the\n"
      "launcher, MPI_Init and MPI_Finalize took (not scaled): the median of the runs. Without\n"
      "--repeat it runs the skeleton until its timed parts add up to --min-seconds (at most {}\n"
      "runs), so that a short skeleton, whose errors are multiplied by the scale, is measured\n"
      "several times.\n"
      "--json keys: skeleton_seconds (wall time of a skeleton run), scale, predicted_seconds,\n"
      "predicted_elapsed_seconds, startup_seconds, repeat (runs made), runs (per run; its\n"
      "stream_ratio: what the memory part's streaming cost against the tracer's memory probe,\n"
      "0 without one), note (empty, or why the figure may be off).",
      kMaxAutoRuns));
  cmd->add_option("OUT", opt->out, "Directory written by `pskel skeleton`")->required();
  cmd->add_option("--launcher", opt->launcher, "Launcher command, e.g. \"mpiexec -n 4\" or \"srun\"")
      ->type_name("CMD");
  CLI::Option* repeat = cmd->add_option("--repeat", opt->repeat, "Exactly this many runs (the median counts)")
                             ->check(CLI::Range(1, 1000));
  cmd->add_option("--min-seconds", opt->min_seconds,
                  fmt::format("Without --repeat: run until the skeleton ran this long in all (default {})",
                              kDefaultMinSeconds))
      ->check(CLI::Range(0.0, 86400.0))
      ->type_name("S")
      ->excludes(repeat);
  cmd->add_option("--timeout", opt->timeout, "Kill a run after this many seconds (default: from the estimate)")
      ->type_name("S");
  cmd->add_flag("--json", opt->json, "Print JSON (keys below)");
  return {cmd, [opt]() { return run_predict(*opt); }};
}

}  // namespace pskel::cli
