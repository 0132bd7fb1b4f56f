#include "worker/worker.h"

#include <dirent.h>
#include <fcntl.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <thread>

#include "child/child.h"
#include "export/export.h"
#include "export/job_args.h"
#include "model/app_model.h"
#include "store/store.h"
#include "util/json_text.h"
#include "util/safe_dir.h"
#include "util/spool_names.h"
#include "util/text.h"
#include "worker/slurm_text.h"
#include "worker/trace_pick.h"

namespace pskel::worker {
namespace {

constexpr uint32_t kMaxAttempts = 3;
constexpr size_t kMaxJsonBytes = 1 << 20;
constexpr size_t kMaxModelFeatures = 4096;  // a trace has two per MPI function
constexpr const char* kQueueDir = "queue";

// --- small helpers -------------------------------------------------------------------------

child::Identity identity_of(const Ticket& t) {
  return child::Identity{static_cast<uid_t>(t.uid), static_cast<gid_t>(t.gid), t.user};
}

std::string home_of(uid_t uid) {
  struct passwd pw, *found = nullptr;
  char buf[4096];
  if (::getpwuid_r(uid, &pw, buf, sizeof buf, &found) == 0 && found && pw.pw_dir) return pw.pw_dir;
  return "/";
}

Result<nlohmann::json> parse_json(const std::string& text, const std::string& what) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return Error{"", what + ": output is not a JSON object"};
  return j;
}

Result<double> number(const nlohmann::json& j, const char* key, const std::string& what) {
  if (!j.contains(key) || !j[key].is_number()) return Error{"", what + ": JSON has no number " + key};
  const double v = j[key].get<double>();
  if (!exportfile::valid_predicted_seconds(v)) return Error{"", what + ": " + key + " out of range"};
  return v;
}

// --- the context of one worker -----------------------------------------------------------------

class Worker {
 public:
  Worker(const config::Config& conf, store::Store& store, const Log& log)
      : conf_(conf), store_(store), log_(log) {}

  void handle(const Ticket& queued);

 private:
  child::Result run_as_user(const Ticket& t, const std::vector<std::string>& argv, int timeout,
                            const std::string& cwd = "/") const {
    child::Options o;
    o.as = identity_of(t);
    o.env = child_environment(home_of(o.as->uid), t.user, conf_.worker_threads);
    o.cwd = cwd;
    o.timeout_seconds = timeout;
    return child::run(argv, o);
  }
  // Cancels the calibration jobs of the job (by name, as its user): an earlier attempt's.
  void cancel_calibrations(const Ticket& t) const;
  // Whether `pskel <command>` exists (asked once per worker).
  bool available(const Ticket& t, const std::string& command);
  std::optional<JobEnd> job_end(uint32_t job_id, uint32_t restarts) const;
  void fail(const Ticket& t, const std::string& step, const std::string& message);
  void record_outcome(const Ticket& t, const std::optional<JobEnd>& end);
  void run_pipeline(const Ticket& t, int64_t app_id, const std::optional<JobEnd>& end);
  void refresh_export();

  struct SkeletonOut {
    std::string dir, binary;
    double scale = 0;
  };
  struct Calibration {
    double skeleton_seconds = 0, scale = 0, predicted_seconds = 0;
  };
  Result<bool> step_compress(const Ticket& t, const TraceChoice& trace);
  void step_model(const Ticket& t, int64_t app_id, const TraceChoice& trace);
  Result<SkeletonOut> step_skeleton(const Ticket& t, const TraceChoice& trace, double scale);
  Result<Calibration> step_calibrate(const Ticket& t, const TraceChoice& trace,
                                     const SkeletonOut& skeleton, const std::string& partition);

  const config::Config& conf_;
  store::Store& store_;
  const Log& log_;
  std::map<std::string, bool> available_;
};

bool Worker::available(const Ticket& t, const std::string& command) {
  const auto it = available_.find(command);
  if (it != available_.end()) return it->second;
  const child::Result r = run_as_user(t, {conf_.pskel, command, "--help"}, 60);
  return available_[command] = r.started && !r.timed_out && r.exit_code == 0;
}

void Worker::cancel_calibrations(const Ticket& t) const {
  // scancel beside the configured sbatch: a site that moved one moved both.
  const std::string sbatch = conf_.sbatch;
  const std::string scancel = sbatch.substr(0, sbatch.rfind('/') + 1) + "scancel";
  const child::Result r = run_as_user(
      t, {scancel, "--name=pskel-calibrate." + std::to_string(t.job_id), "--user=" + t.user}, 60);
  log_.line("job " + std::to_string(t.job_id) + ": attempt " + std::to_string(t.attempts) +
            ": calibration jobs of earlier attempts cancelled" +
            (r.started && r.exit_code == 0 ? "" : " (scancel: " + r.failure() + ")"));
}

std::optional<JobEnd> Worker::job_end(uint32_t job_id, uint32_t restarts) const {
  // The epilog runs while the job is COMPLETING: wait (bounded) for its final state, or for
  // Slurm to have requeued it (it may be running again already).
  std::optional<JobEnd> end;
  for (int i = 0; i < 30; ++i) {
    child::Options o;
    o.env = child_environment("/", "root");
    o.timeout_seconds = 30;
    const child::Result r = child::run({conf_.scontrol, "show", "job", "-o", std::to_string(job_id)}, o);
    if (r.exit_code == 0) end = parse_job(r.out);
    if (end && ((end->state.find("COMPLETING") == std::string::npos && end->state != "RUNNING") ||
                end->restarts > restarts))
      break;
    std::this_thread::sleep_for(std::chrono::seconds(2));
  }
  return end;
}

void Worker::fail(const Ticket& t, const std::string& step, const std::string& message) {
  const std::string text = one_line(message);
  log_.line("job " + std::to_string(t.job_id) + ": " + step + ": failed: " + text);
  if (auto r = store_.set_trace_state(t.job_id, "failed", step, text); !r)
    log_.line("job " + std::to_string(t.job_id) + ": store: " + r.error().line());
}

void Worker::record_outcome(const Ticket& t, const std::optional<JobEnd>& end) {
  store::Outcome o;
  o.job_id = t.job_id;
  o.uid = t.uid;
  o.prediction_id = t.prediction_id;
  o.predicted_seconds = t.predicted_seconds;
  o.limit_minutes = t.limit_minutes;
  o.actual_seconds = end ? end->runtime_seconds : -1;
  o.state = end ? end->state : "UNKNOWN";
  if (auto r = store_.record_outcome(o); !r) {
    log_.line("job " + std::to_string(t.job_id) + ": outcome: store: " + r.error().line());
    return;
  }
  log_.line("job " + std::to_string(t.job_id) + ": outcome: predicted " +
            std::to_string(t.predicted_seconds) + " s, limit " + std::to_string(t.limit_minutes) +
            " min, actual " + std::to_string(o.actual_seconds) + " s, " + o.state);
}

Result<bool> Worker::step_compress(const Ticket& t, const TraceChoice& trace) {
  const child::Result r = run_as_user(t, {conf_.pskel, "compress", trace.dir, "--json"},
                                      static_cast<int>(conf_.step_timeout));
  if (!r.started || r.timed_out || r.exit_code != 0) return Error{"", "compress: " + r.failure()};
  auto j = parse_json(r.out, "compress");
  if (!j) return j.error();
  log_.line("job " + std::to_string(t.job_id) + ": compress: ok: " +
            json_text(j.value().value("merged_events", nlohmann::json())) + " merged events, " +
            json_text(j.value().value("compressed_length", nlohmann::json())) + " after compression");
  return true;
}

// The application's run-time model (docs/model.md): this run's inputs (task count, script
// arguments), its trace's features and wall time (read by `pskel model features` as the user)
// are stored, and the model is fitted again to the runs of the same command shape as
// this one once there are enough. A model is extra: nothing here fails the pipeline.
void Worker::step_model(const Ticket& t, int64_t app_id, const TraceChoice& trace) {
  const std::string job = "job " + std::to_string(t.job_id);
  if (!available(t, "model")) return;
  const child::Result r = run_as_user(t, {conf_.pskel, "model", "features", trace.dir},
                                      static_cast<int>(conf_.step_timeout));
  if (!r.started || r.timed_out || r.exit_code != 0) {
    log_.line(job + ": model: " + r.failure());
    return;
  }
  auto j = parse_json(r.out, "model features");
  if (!j || !j.value().contains("features") || !j.value()["features"].is_object() ||
      j.value()["features"].size() > kMaxModelFeatures) {
    log_.line(job + ": model: the trace's features are not readable");
    return;
  }
  for (const auto& [name, value] : j.value()["features"].items())
    if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() < 0) {
      log_.line(job + ": model: feature " + one_line(name, 80) + " is not a count");
      return;
    }
  // The trace's own wall time (MPI_Init to MPI_Finalize, in ns), not the job's run time
  // (whole seconds from scontrol): short runs need the precision.
  auto seconds = number(j.value(), "seconds", "model features");
  if (!seconds || !(seconds.value() > 0)) {
    log_.line(job + ": model: the trace has no wall time");
    return;
  }
  store::ModelRun run{t.job_id, app_id, t.uid, t.ntasks, t.job_args, seconds.value(),
                      json_text(j.value()["features"]), 0};
  if (auto stored = store_.put_model_run(run); !stored) {
    log_.line(job + ": model: store: " + stored.error().line());
    return;
  }
  auto rows = store_.model_runs(app_id);
  if (!rows) return log_.line(job + ": model: store: " + rows.error().line());
  // The runs of this job's command shape: "job" and its arguments, the task count.
  auto command_of = [](const store::ModelRun& row) {
    std::vector<std::string> command = {"job"}, args;
    if (exportfile::decode_job_args(row.args, &args))
      command.insert(command.end(), args.begin(), args.end());
    return command;
  };
  const auto shape = model::job_parameters(command_of(run), static_cast<int>(t.ntasks));
  if (!shape) return;
  std::vector<model::Run> runs;
  for (const store::ModelRun& row : rows.value()) {
    model::Run m;
    m.source = "job " + std::to_string(row.job_id);
    m.kind = "trace";
    m.ntasks = static_cast<int>(row.ntasks);
    m.seconds = row.seconds;
    if (!exportfile::batch_command(row.args, &m.command)) continue;
    const auto p = model::job_parameters(m.command, m.ntasks);
    const nlohmann::json f = nlohmann::json::parse(row.features, nullptr, false);
    if (!p || p.value().shape != shape.value().shape || !f.is_object()) continue;
    for (const auto& [name, value] : f.items())
      if (value.is_number()) m.features[name] = value.get<double>();
    runs.push_back(std::move(m));
  }
  if (runs.size() < model::kMinModelRuns) {
    log_.line(job + ": model: " + std::to_string(runs.size()) + " run(s) of this command shape, " +
              std::to_string(model::kMinModelRuns) + " make a model");
    return;
  }
  auto fitted = model::fit_app_model(runs, model::RegressionOptions{});
  if (!fitted) return log_.line(job + ": model: not fitted: " + fitted.error().line());
  const model::AppModel& m = fitted.value();
  const model::PathCheck& used = m.use_features_path ? *m.features_path : m.time_path;
  auto exported = model::export_model(m);
  if (!exported) return log_.line(job + ": model: " + exported.error().line());
  if (auto stored = store_.put_model(store::StoredModel{
          app_id, t.uid, json_text(model::model_to_json(m)),
          exportfile::model_line(exported.value()), static_cast<uint32_t>(runs.size()), 0});
      !stored)
    return log_.line(job + ": model: store: " + stored.error().line());
  refresh_export();
  char error[32];
  std::snprintf(error, sizeof error, "%.1f", 100 * used.loo_mean_error);
  log_.line(job + ": model: fitted to " + std::to_string(runs.size()) + " runs, through " +
            (m.use_features_path ? "the trace's counts" : "the run time's model") +
            ", leave-one-out error " + error + " %");
}

Result<Worker::SkeletonOut> Worker::step_skeleton(const Ticket& t, const TraceChoice& trace,
                                                  double scale) {
  if (!available(t, "skeleton")) return Error{"", "skeleton: not available"};
  // OUT is created by root inside the verified job directory, owned by the user.
  auto out = ensure_owned_dir(trace.job_dir.get(), trace.job_path, "skeleton", t.uid, t.gid);
  if (!out) return Error{"", "skeleton: " + out.error().line()};
  const std::string out_path = trace.job_path + "/skeleton";
  char scale_text[32];
  std::snprintf(scale_text, sizeof scale_text, "%g", scale);
  const child::Result r =
      run_as_user(t, {conf_.pskel, "skeleton", trace.dir, "-o", out_path, "--scale", scale_text, "--json"},
                  static_cast<int>(conf_.step_timeout));
  if (!r.started || r.timed_out || r.exit_code != 0) return Error{"", "skeleton: " + r.failure()};
  auto j = parse_json(r.out, "skeleton");
  if (!j) return j.error();
  auto k = number(j.value(), "scale", "skeleton");
  if (!k) return k.error();
  if (!j.value().contains("binary") || !j.value()["binary"].is_string())
    return Error{"", "skeleton: JSON has no binary"};
  return SkeletonOut{out_path, j.value()["binary"].get<std::string>(), k.value()};
}

Result<Worker::Calibration> Worker::step_calibrate(const Ticket& t, const TraceChoice& trace,
                                                   const SkeletonOut& skeleton,
                                                   const std::string& partition) {
  const std::string what = "calibrate " + partition;
  if (!available(t, "predict")) return Error{"", what + ": predict not available"};
  std::string launcher = trace.mpi == "openmpi" ? conf_.launcher_openmpi : conf_.launcher_mpich;
  for (size_t at; (at = launcher.find("{ntasks}")) != std::string::npos;)
    launcher.replace(at, 8, std::to_string(trace.ranks));
  // A worker killed while its calibration job ran left that job running, writing to its own
  // files: each attempt has its own, and the earlier attempts' jobs are cancelled first.
  const std::string attempt = t.attempts > 1 ? "." + std::to_string(t.attempts) : "";
  const std::string result_name = "calibrate." + partition + attempt + ".json";
  if (t.attempts > 1) cancel_calibrations(t);
  const std::string command = "exec " + shell_quote(conf_.pskel) + " predict " +
                              shell_quote(skeleton.dir) + " --launcher " + shell_quote(launcher) +
                              " --json";
  // The traced layout: as many nodes as the trace has hosts, as many ranks on each (what
  // crosses the network between nodes is part of what the skeleton reproduces).
  std::vector<std::string> layout = {"--nodes=" + std::to_string(trace.hosts)};
  if (trace.ranks_per_host > 0) {
    layout.push_back("--ntasks=" + std::to_string(trace.ranks));
    layout.push_back("--ntasks-per-node=" + std::to_string(trace.ranks_per_host));
  } else {
    layout.push_back("--ntasks=" + std::to_string(std::max<uint32_t>(t.ntasks, static_cast<uint32_t>(trace.ranks))));
  }
  std::vector<std::string> argv = {conf_.sbatch, "--wait", "--parsable", "--quiet",
                                   "--job-name=pskel-calibrate." + std::to_string(t.job_id),
                                   "--partition=" + partition};
  argv.insert(argv.end(), layout.begin(), layout.end());
  for (std::string arg : {"--time=" + std::to_string(conf_.calibration_time_limit), std::string("--export=ALL"),
                          "--chdir=" + skeleton.dir, "--output=" + skeleton.dir + "/" + result_name,
                          "--error=" + skeleton.dir + "/calibrate." + partition + attempt + ".err",
                          "--wrap=" + command})
    argv.push_back(std::move(arg));
  std::string layout_text;
  for (const std::string& a : layout) layout_text += " " + a;
  log_.line("job " + std::to_string(t.job_id) + ": " + what + ": sbatch --partition=" + partition +
            layout_text + " (" + launcher + ")");
  const child::Result r = run_as_user(t, argv, static_cast<int>(conf_.calibration_time_limit) * 60 + 600,
                                      skeleton.dir);
  if (!r.started || r.timed_out || r.exit_code != 0) return Error{"", what + ": " + r.failure()};
  auto out_dir = open_owned_dir(trace.job_dir.get(), trace.job_path, "skeleton", t.uid);
  if (!out_dir) return Error{"", what + ": " + out_dir.error().line()};
  auto text = read_owned_file(out_dir.value().get(), skeleton.dir, result_name, t.uid, kMaxJsonBytes);
  if (!text) return Error{"", what + ": " + text.error().line()};
  auto j = parse_json(text.value(), what);
  if (!j) return j.error();
  auto seconds = number(j.value(), "skeleton_seconds", what);
  auto scale = number(j.value(), "scale", what);
  auto predicted = number(j.value(), "predicted_seconds", what);
  if (!seconds) return seconds.error();
  if (!scale) return scale.error();
  if (!predicted) return predicted.error();
  return Calibration{seconds.value(), scale.value(), predicted.value()};
}

void Worker::refresh_export() {
  std::string note;
  auto r = publish(conf_, store_, &note);
  if (!note.empty()) log_.line(note);
  log_.line(r ? "export: written to " + conf_.export_file : "export: " + r.error().line());
}

void Worker::run_pipeline(const Ticket& t, int64_t app_id, const std::optional<JobEnd>& end) {
  const std::string job = "job " + std::to_string(t.job_id);
  store::Trace row;
  row.job_id = t.job_id;
  row.app_id = app_id;
  row.uid = t.uid;
  row.ntasks = t.ntasks;
  row.nodes = t.nodes;
  row.partition = t.partition;
  row.state = "running";
  row.step = "trace";
  row.runtime_seconds = end ? end->runtime_seconds : -1;
  if (auto r = store_.put_trace(row); !r) {
    log_.line(job + ": store: " + r.error().line());
    return;
  }
  log_.line(job + ": trace: looking in " + conf_.spool_dir + "/" + job_dir_name(t.job_id));
  auto trace = pick_trace(conf_.spool_dir, t.job_id, t.uid, conf_.max_trace_bytes, t.restarts);
  if (!trace)
    return fail(t, "trace", trace.error().line() + (end && end->state != "COMPLETED"
                                                         ? " (the job ended " + end->state + ")"
                                                         : ""));
  row.trace_dir = trace.value().dir;
  (void)store_.put_trace(row);
  log_.line(job + ": trace: " + trace.value().dir + " (" + std::to_string(trace.value().ranks) +
            " ranks on " + std::to_string(trace.value().hosts) + " host(s), " + trace.value().mpi +
            ", " + std::to_string(trace.value().bytes) + " bytes)");

  step_model(t, app_id, trace.value());

  (void)store_.set_trace_state(t.job_id, "running", "compress", "");
  if (auto c = step_compress(t, trace.value()); !c) return fail(t, "compress", c.error().what);

  (void)store_.set_trace_state(t.job_id, "running", "skeleton", "");
  const double scale = choose_scale(row.runtime_seconds, conf_.target_skeleton_seconds);
  auto skeleton = step_skeleton(t, trace.value(), scale);
  if (!skeleton) return fail(t, "skeleton", skeleton.error().what);
  char k[32];
  std::snprintf(k, sizeof k, "%g", skeleton.value().scale);  // K is whole: "K = 10", not 10.000000
  log_.line(job + ": skeleton: " + skeleton.value().binary + " (K = " + k + ")");

  std::vector<std::string> partitions = conf_.calibrate_partitions;
  if (partitions.empty()) partitions.push_back(t.partition);
  std::vector<store::Prediction> predictions;
  for (const std::string& partition : partitions) {
    (void)store_.set_trace_state(t.job_id, "running", "calibrate " + partition, "");
    auto c = step_calibrate(t, trace.value(), skeleton.value(), partition);
    if (!c) return fail(t, "calibrate " + partition, c.error().what);
    log_.line(job + ": calibrate " + partition + ": skeleton " +
              std::to_string(c.value().skeleton_seconds) + " s x " +
              std::to_string(c.value().scale) + " = " +
              std::to_string(c.value().predicted_seconds) + " s predicted");
    store::Prediction p;
    p.app_id = app_id;
    p.uid = t.uid;
    p.ntasks = t.ntasks;
    p.nodes = t.nodes;
    p.partition = partition;
    p.skeleton_seconds = c.value().skeleton_seconds;
    p.scale = c.value().scale;
    p.predicted_seconds = c.value().predicted_seconds;
    p.input = t.job_args.empty() ? "-" : exportfile::input_key(t.job_args);
    predictions.push_back(p);
  }
  store::Skeleton sk;
  sk.job_id = t.job_id;
  sk.dir = skeleton.value().dir;
  sk.binary = skeleton.value().binary;
  sk.scale = skeleton.value().scale;
  auto ids = store_.add_predictions(t.job_id, sk, predictions);
  if (!ids) return fail(t, "store", ids.error().line());
  log_.line(job + ": done: " + std::to_string(ids.value().size()) + " prediction(s) stored");
  refresh_export();
}

void Worker::handle(const Ticket& queued) {
  Ticket t = queued;
  const std::string job = "job " + std::to_string(t.job_id);
  const std::optional<JobEnd> end = job_end(t.job_id, t.restarts);
  if (end && (end->restarts > t.restarts || end->state == "PENDING" || end->state == "REQUEUED")) {
    // A node failed and Slurm runs the job again under the same id: this run's trace is
    // partial and its run time is not the job's. The next run's epilog queues it again.
    log_.line(job + ": run " + std::to_string(t.restarts) + " ended and Slurm requeued the job (now " +
              end->state + "): nothing recorded for this run; its next run is traced and predicted");
    return;
  }
  // EpilogSlurmctld's environment has no task count; scontrol has both.
  if (end && end->ntasks > 0 && t.ntasks == 0) t.ntasks = end->ntasks;
  if (end && end->nodes > 0) t.nodes = end->nodes;
  if (t.ntasks == 0) t.ntasks = 1;
  log_.line(job + ": start (user " + t.user + ", app " + t.app_key + ", " +
            exportfile::layout_text(t.ntasks, t.nodes) + ", partition " + t.partition + (t.traced ? ", traced" : "") +
            (t.limited ? ", limit set by pskel" : "") + ")");
  if (t.limited) record_outcome(t, end);
  if (!t.traced) return;
  const std::string key = t.app_key.empty() ? "unnamed" : t.app_key;
  auto app = store_.ensure_application(t.uid, t.user, key, t.script_key);
  if (!app) {
    log_.line(job + ": store: " + app.error().line());
    return;
  }
  if (t.attempts > kMaxAttempts) {
    store::Trace row;
    row.job_id = t.job_id;
    row.app_id = app.value();
    row.uid = t.uid;
    row.ntasks = t.ntasks;
    row.nodes = t.nodes;
    row.partition = t.partition;
    row.state = "failed";
    row.step = "worker";
    row.message = "gave up after " + std::to_string(kMaxAttempts) + " attempts";
    (void)store_.put_trace(row);
    log_.line(job + ": " + row.message);
    return;
  }
  run_pipeline(t, app.value(), end);
}

// --- the queue ---------------------------------------------------------------------------------

struct Claimed {
  UniqueFd fd;
  std::string path;
  Ticket ticket;
};

// Calls take(name, fd) for each queued ticket no worker holds, with its lock (flock) taken on
// fd (the lock goes with fd), until take returns true; returns whether one did.
template <class Take>
bool each_unclaimed_ticket(int queue_fd, Take take) {
  DIR* d = ::fdopendir(::dup(queue_fd));
  if (!d) return false;
  bool taken = false;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (!name.ends_with(".job")) continue;
    UniqueFd fd(::openat(queue_fd, name.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC));
    if (fd.get() < 0 || ::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) continue;
    if ((taken = take(name, fd))) break;
  }
  ::closedir(d);
  return taken;
}

// Claims one queued ticket, counting the attempt in the file; nullopt when none is left.
std::optional<Claimed> claim(int queue_fd, const std::string& queue_path, const Log& log) {
  std::optional<Claimed> claimed;
  each_unclaimed_ticket(queue_fd, [&](const std::string& name, UniqueFd& fd) {
    struct stat st;
    if (::fstat(fd.get(), &st) != 0 || st.st_nlink == 0 || st.st_size > 65536) return false;
    std::string text(static_cast<size_t>(st.st_size), '\0');
    if (::pread(fd.get(), text.data(), text.size(), 0) != st.st_size) return false;
    auto ticket = parse_ticket(text, queue_path + "/" + name);
    if (!ticket) {
      log.line("queue: " + ticket.error().line() + ": dropped");
      ::unlinkat(queue_fd, name.c_str(), 0);
      return false;
    }
    ticket.value().attempts += 1;
    const std::string updated = format_ticket(ticket.value());
    if (::ftruncate(fd.get(), 0) != 0 ||
        ::pwrite(fd.get(), updated.data(), updated.size(), 0) != static_cast<ssize_t>(updated.size()))
      return false;
    ::fsync(fd.get());
    claimed = Claimed{std::move(fd), queue_path + "/" + name, std::move(ticket).value()};
    return true;
  });
  return claimed;
}

// The queue directory, StateDir/queue. As root (SlurmUser=root): created if needed inside a
// StateDir that only root may change. As anyone else (SlurmUser=slurm): it must exist, belong
// to this user and be private, as the install made it; a user's own directory is never taken.
Result<UniqueFd> open_queue(const config::Config& conf) {
  const std::string path = conf.state_dir + "/" + kQueueDir;
  if (::geteuid() == 0) {
    auto state = ensure_private_root(conf.state_dir, 0);
    if (!state) return state.error();
    if (::mkdirat(state.value().get(), kQueueDir, 0700) != 0 && errno != EEXIST)
      return Error{path, std::strerror(errno)};
    UniqueFd queue(::openat(state.value().get(), kQueueDir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (queue.get() < 0) return Error{path, std::strerror(errno)};
    return queue;
  }
  UniqueFd queue(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st;
  if (queue.get() < 0 || ::fstat(queue.get(), &st) != 0 || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0)
    return Error{path, "must be a directory of uid " + std::to_string(::geteuid()) +
                           " (SlurmUser), mode 0700: install -d -o <SlurmUser> -m 0700 " + path};
  return queue;
}

void worker_body(void* arg) {
  work(*static_cast<const config::Config*>(arg));
}

}  // namespace

// Whatever the text quotes (a step directory's name, a child's error) stays on this one line:
// a name holding a newline must not forge lines of root's log.
void Log::line(const std::string& text) const {
  char stamp[32];
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
  const std::string line =
      std::string(stamp) + " pskel[" + std::to_string(::getpid()) + "]: " + one_line(text, 4096) + "\n";
  const int fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0640);
  if (fd < 0) return;
  (void)!::write(fd, line.data(), line.size());
  ::close(fd);
}

Result<bool> publish(const config::Config& conf, store::Store& store, std::string* note) {
  child::Options o;
  o.env = child_environment("/", "root");
  o.timeout_seconds = 60;
  const child::Result r = child::run({conf.scontrol, "show", "partition", "-o"}, o);
  const auto partitions = r.exit_code == 0 ? parse_partitions(r.out) : std::vector<exportfile::Partition>{};
  if (partitions.empty()) {
    *note = "partitions: scontrol: " + (r.exit_code == 0 ? "no partitions" : r.failure()) +
            " (keeping the stored ones)";
  } else if (auto s = store.set_partitions(partitions); !s) {
    *note = "partitions: " + s.error().line();
  }
  return store::write_export(store, conf.export_file);
}

std::vector<std::string> child_environment(const std::string& home, const std::string& user,
                                           uint32_t threads) {
  std::vector<std::string> env = {
      "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
      "HOME=" + home, "USER=" + user, "LOGNAME=" + user, "LC_ALL=C",
      "PSKEL_THREADS=" + std::to_string(threads)};
  for (const char* name : {"SLURM_CONF", "PSKEL_CONF"})
    if (const char* v = std::getenv(name)) env.push_back(std::string(name) + "=" + v);
  return env;
}

std::string shell_quote(const std::string& word) {
  std::string out = "'";
  for (const char c : word) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

double choose_scale(double runtime_seconds, double target_seconds) {
  if (!(runtime_seconds > 0) || !(target_seconds > 0)) return 1;
  return std::max(1.0, std::round(runtime_seconds / target_seconds));
}

EpilogResult epilog(const config::Config& conf, const Env& env, bool detach) {
  EpilogResult result;
  auto ticket = ticket_from_env(env);
  const Log log(conf.log_file);
  if (!ticket) {
    result.message = ticket.error().line();
    log.line("epilog: " + result.message);
    return result;
  }
  if (!ticket.value()) {
    result.message = "not a pskel job";
    return result;
  }
  const Ticket& t = *ticket.value();
  const std::string job = "job " + std::to_string(t.job_id);
  if (epilog_context(env) == EpilogContext::Node) {
    // slurmd runs Epilog on every node of a job: queueing here would process a 2-node job twice.
    result.message = job + ": node epilog ignored: pskel's epilog is EpilogSlurmctld (once per job, on "
                     "the controller); remove it from Epilog in slurm.conf";
    log.line("epilog: " + result.message);
    return result;
  }
  const bool root = ::geteuid() == 0;
  auto queue = open_queue(conf);
  if (!queue) {
    result.message = job + ": not queued: " + queue.error().line();
    log.line("epilog: " + result.message);
    return result;
  }
  // Each run of a requeued job has its own ticket: a worker busy with the first run's must not
  // lose the second's.
  const std::string name =
      std::to_string(t.job_id) + (t.restarts ? "." + std::to_string(t.restarts) : "") + ".job";
  const std::string tmp = name + "." + std::to_string(::getpid()) + ".tmp";
  const std::string text = format_ticket(t);
  const int q = queue.value().get();
  UniqueFd fd(::openat(q, tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (fd.get() < 0 || ::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()) ||
      ::fsync(fd.get()) != 0 || ::renameat(q, tmp.c_str(), q, name.c_str()) != 0) {
    result.message = "queue: cannot write " + name + ": " + std::strerror(errno);
    log.line("epilog: " + result.message);
    ::unlinkat(q, tmp.c_str(), 0);
    return result;
  }
  result.queued = true;
  // As SlurmUser the epilog cannot start a worker that acts as the job's user: the guard
  // (root) starts one within GuardInterval.
  result.message = job + " queued" + (root ? "" : " for the guard (the epilog is not root)");
  log.line("epilog: " + result.message);
  if (detach && root) start_worker(conf);
  return result;
}

void start_worker(const config::Config& conf) {
  child::spawn_detached(worker_body, const_cast<config::Config*>(&conf));
}

bool has_unclaimed_ticket(const config::Config& conf) {
  auto queue = open_queue(conf);
  return queue && each_unclaimed_ticket(queue.value().get(), [](const std::string&, UniqueFd&) { return true; });
}

void work(const config::Config& conf) {
  const Log log(conf.log_file);
  auto opened = open_queue(conf);
  if (!opened) return log.line("worker: " + opened.error().line());
  const int queue = opened.value().get();
  const std::string queue_path = conf.state_dir + "/" + kQueueDir;
  auto store = store::Store::open(conf.database);
  if (!store) return log.line("worker: store: " + store.error().line());
  Worker worker(conf, store.value(), log);
  while (auto claimed = claim(queue, queue_path, log)) {
    try {
      worker.handle(claimed->ticket);
    } catch (const std::exception& e) {
      log.line("job " + std::to_string(claimed->ticket.job_id) + ": worker: " + e.what());
    }
    ::unlinkat(queue, claimed->path.substr(queue_path.size() + 1).c_str(), 0);
  }
}

}  // namespace pskel::worker
