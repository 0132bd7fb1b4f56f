// job_submit_pskel.so: inside slurmctld, gives submissions a time limit from pskel's
// predictions (policy in policy.h, predictions from the in-memory cache in cache.h): a
// skeleton's for the traced layout, else the application's run-time model evaluated for the
// job's task count and script arguments.
// job_submit runs under slurmctld's locks and serialises every submission: it only stat()s the
// export file and looks up a hash map. Jobs pskel knows nothing about are left alone; nothing
// here ever rejects a job.
//
// What it adds to a job's spank_job_env (the epilog sees these as SPANK_<name>):
//   PSKEL_APP_KEY=<key>      for jobs tagged with --predict: the application key they are
//                            stored under (export/app_key.h)
//   PSKEL_SCRIPT_KEY=<key>   and, when that key is a --predict name, the key of their script:
//                            the same script resubmitted without --predict finds the prediction
//   PSKEL_JOB_ARGS=<args>    for tagged batch jobs: their script's arguments
//                            (export/job_args.h), the inputs run-time models are fitted over
//   PSKEL_LIMITED=<prediction id>:<predicted seconds>:<limit minutes>
//                            for jobs whose limit pskel set: the epilog records the outcome
#include <stdint.h>

extern "C" {
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
}

#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <span>
#include <string_view>
#include <vector>

#include "cache.h"
#include "config/config.h"
#include "export/app_key.h"
#include "export/job_args.h"
#include "guard/extend.h"
#include "policy.h"
#include "slurm_alloc.h"

#define PSKEL_EXPORT __attribute__((visibility("default")))

namespace pskel::jobsubmit {
namespace {

static_assert(kNoVal == NO_VAL && kInfinite == INFINITE, "Slurm's special values changed");
static_assert(kAnyNodes == 0, "requested_nodes() returns 0 for a job without a node count");

constexpr std::string_view kOptionEnv = "_SLURM_SPANK_OPTION_pskel_predict=";
constexpr std::string_view kTagEnv = "PSKEL_PREDICT=";
constexpr std::string_view kAppEnv = "PSKEL_APP=";
constexpr const char* kAppKeyName = "PSKEL_APP_KEY";
constexpr const char* kLimitedName = "PSKEL_LIMITED";
constexpr const char* kScriptKeyName = "PSKEL_SCRIPT_KEY";
constexpr const char* kJobArgsName = "PSKEL_JOB_ARGS";

struct State {
  config::Config conf;
  Limits limits;
  PredictionCache cache;
  State(config::Config c, Limits l)
      : conf(std::move(c)),
        limits(l),
        cache(
            conf.export_file, [](const std::string& line) { slurm_info("pskel: %s", line.c_str()); },
            conf.guard_required ? conf.heartbeat_file : std::string()) {}
};
std::unique_ptr<State> g_state;

// Sets NAME=value in the job's spank_job_env (replacing an entry of that name, which a user
// could have sent), growing the array with Slurm's allocator.
void set_job_env(job_desc_msg_t* job, const char* name, const std::string& value) {
  const std::string entry = std::string(name) + "=" + value;
  const size_t prefix = std::strlen(name) + 1;
  for (uint32_t i = 0; i < job->spank_job_env_size; ++i) {
    char*& e = job->spank_job_env[i];
    if (e && std::strncmp(e, entry.c_str(), prefix) == 0) {
      slurm_xfree(reinterpret_cast<void**>(&e));
      e = slurm_xstrdup(entry.c_str());
      return;
    }
  }
  const uint32_t n = job->spank_job_env_size;
  // n + 2: the new entry and the NULL terminator unpackstr_array-style arrays carry.
  slurm_xrecalloc(reinterpret_cast<void**>(&job->spank_job_env), n + 2, sizeof(char*), true,
                  false, __FILE__, __LINE__, __func__);
  job->spank_job_env[n] = slurm_xstrdup(entry.c_str());
  job->spank_job_env[n + 1] = nullptr;
  job->spank_job_env_size = n + 1;
}

// Removes every NAME=... entry from the job's spank_job_env: names only this plugin may set
// (a user's own client could send them).
void drop_job_env(job_desc_msg_t* job, const char* name) {
  const size_t prefix = std::strlen(name);
  uint32_t kept = 0;
  for (uint32_t i = 0; i < job->spank_job_env_size; ++i) {
    char* e = job->spank_job_env[i];
    if (e && std::strncmp(e, name, prefix) == 0 && e[prefix] == '=') {
      slurm_xfree(reinterpret_cast<void**>(&e));
      continue;
    }
    job->spank_job_env[kept++] = e;
  }
  for (uint32_t i = kept; i < job->spank_job_env_size; ++i) job->spank_job_env[i] = nullptr;
  job->spank_job_env_size = kept;
}

// Appends `text` to an xmalloc'd string field (admin_comment, err_msg).
void append_text(char** field, const std::string& text, const char* separator) {
  std::string joined = *field && **field ? std::string(*field) + separator + text : text;
  if (*field) slurm_xfree(reinterpret_cast<void**>(field));
  *field = slurm_xstrdup(joined.c_str());
}

struct Tag {
  bool tagged = false;
  std::string_view name;
};

Tag read_tag(const job_desc_msg_t* job) {
  Tag tag;
  for (uint32_t i = 0; i < job->spank_job_env_size && job->spank_job_env; ++i) {
    const char* e = job->spank_job_env[i];
    if (!e) break;
    const std::string_view entry(e);
    if (entry.starts_with(kOptionEnv)) {
      tag.tagged = true;
      if (tag.name.empty()) tag.name = entry.substr(kOptionEnv.size());
    } else if (entry.starts_with(kTagEnv)) {
      tag.tagged = true;
    } else if (entry.starts_with(kAppEnv)) {
      tag.name = entry.substr(kAppEnv.size());
    }
  }
  return tag;
}

std::string first_partition(const char* partition) {
  if (!partition) return "";
  const std::string_view p(partition);
  return std::string(p.substr(0, p.find(',')));
}

int submit(job_desc_msg_t* job, char** err_msg) {
  State& st = *g_state;
  // The epilog records the outcome of a job carrying PSKEL_LIMITED: only a limit set here may.
  if (job->spank_job_env) {
    drop_job_env(job, kLimitedName);
    drop_job_env(job, kJobArgsName);  // only what the submission itself says
  }
  const Tag tag = read_tag(job);
  const std::string app = exportfile::app_key(tag.name, job->script, job->name);
  if (app.empty()) return SLURM_SUCCESS;
  // A batch job's inputs: its script's arguments (argv[0] is the script's name).
  const bool batch = job->script && job->argv && job->argc >= 1;
  const std::string job_args =
      batch ? exportfile::encode_job_args(
                  std::span<const char* const>(job->argv + 1, job->argc - 1))
            : std::string();
  if (tag.tagged) {
    set_job_env(job, kAppKeyName, app);
    const std::string script_key = exportfile::app_key("", job->script, nullptr);
    if (script_key.starts_with("script:") && script_key != app)
      set_job_env(job, kScriptKeyName, script_key);
    if (!job_args.empty()) set_job_env(job, kJobArgsName, job_args);
  }
  if (st.conf.policy == config::Policy::Off) return SLURM_SUCCESS;
  // A limit nobody will extend could cost the job: none while the guard is down (the loader
  // thread logged it once).
  if (!st.cache.guard_alive()) return SLURM_SUCCESS;

  st.cache.poll();
  const std::shared_ptr<const Snapshot> snap = st.cache.snapshot();
  std::string partition = first_partition(job->partition);
  if (partition.empty()) partition = snap->default_partition();
  if (partition.empty()) return SLURM_SUCCESS;
  const uint32_t ntasks = job->num_tasks == NO_VAL || job->num_tasks == 0 ? 1 : job->num_tasks;
  const uint32_t nodes = requested_nodes(job->min_nodes, job->max_nodes);
  // The skeleton's prediction for this layout; else the application's run-time model for this
  // job's task count and script arguments (docs/model.md), from the high end of its interval:
  // a model of inputs nobody traced is less sure than a skeleton of the job itself.
  double predicted_seconds = 0;
  int64_t prediction_id = 0;
  std::string source;
  std::string layout;
  // Other inputs than the skeleton's traced job: the model.
  const std::string input = job_args.empty() ? "-" : exportfile::input_key(job_args);
  const Prediction* pred = snap->find(job->user_id, app, ntasks, nodes, partition);
  if (pred && pred->input != "-" && input != "-" && pred->input != input) pred = nullptr;
  if (pred) {
    predicted_seconds = pred->predicted_seconds;
    prediction_id = pred->prediction_id;
    source = "skeleton";
    // The layout of the prediction used; for a job without one node count, the longest.
    layout = exportfile::layout_text(ntasks, pred->nodes);
    if (nodes == kAnyNodes) layout += " (no single node count requested: the longest)";
  } else {
    // Arguments too many or too long to encode are not modelled (the worker did not see them).
    std::vector<std::string> command;
    if (!batch || (job->argc > 1 && job_args.empty()) ||
        !exportfile::batch_command(job_args, &command))
      return SLURM_SUCCESS;
    const auto parameters = exportfile::job_parameters(command, static_cast<int>(ntasks));
    if (!parameters.ok()) return SLURM_SUCCESS;
    const exportfile::Model* model = snap->find_model(
        job->user_id, app, exportfile::shape_key(parameters.value().shape));
    if (!model) return SLURM_SUCCESS;
    predicted_seconds = exportfile::model_seconds(*model, parameters.value().values) *
                        model->high_ratio;
    prediction_id = -model->model_id;
    source = "model";
    layout = std::to_string(ntasks) + " tasks, this job's arguments";
  }

  const Decision d = decide(st.conf.policy, predicted_seconds, st.limits, job->time_limit,
                            snap->partition_max(partition));
  if (!d.change) {
    slurm_debug("pskel: uid %u app %s: %s", job->user_id, app.c_str(), d.why.c_str());
    return SLURM_SUCCESS;
  }
  const std::string predicted = seconds_text(predicted_seconds);
  if (predicted.empty()) return SLURM_SUCCESS;
  const uint32_t asked = job->time_limit;
  job->time_limit = d.limit;
  set_job_env(job, kLimitedName,
              std::to_string(prediction_id) + ":" + predicted + ":" + std::to_string(d.limit));
  // The guard reads the first part back: the limit, and the one the job had without pskel.
  const std::string comment =
      guard::limit_comment(d.limit, prediction_id,
                           asked == NO_VAL ? std::nullopt : std::optional<uint32_t>(asked)) +
      " (" + predicted + "s for " + app + " by its " + source + ", " + layout + ", partition " +
      partition + "; policy " + config::policy_name(st.conf.policy) + ": " + d.why + ")";
  append_text(&job->admin_comment, comment, "; ");
  append_text(err_msg,
              "pskel: time limit set to " + std::to_string(d.limit) + " min from the " + source +
                  " prediction for " + app + " (" + predicted + " s)",
              "\n");
  slurm_info("%s, uid %u", comment.c_str(), job->user_id);
  return SLURM_SUCCESS;
}

template <class F>
int guarded(const char* what, F f) {
  try {
    return f();
  } catch (const std::exception& e) {
    slurm_error("pskel: %s: %s", what, e.what());
  } catch (...) {
    slurm_error("pskel: %s: unknown exception", what);
  }
  return SLURM_SUCCESS;
}

}  // namespace
}  // namespace pskel::jobsubmit

extern "C" {

PSKEL_EXPORT extern const char plugin_name[] = "pskel time limits from skeleton predictions";
PSKEL_EXPORT extern const char plugin_type[] = "job_submit/pskel";
PSKEL_EXPORT extern const uint32_t plugin_version = SLURM_VERSION_NUMBER;  // must match exactly

PSKEL_EXPORT int init(void) {
  using namespace pskel;
  return jobsubmit::guarded("init", [] {
    const std::string path = config::default_config_path();
    auto conf = config::load_config(path);
    if (!conf) {
      slurm_error("pskel: config: %s: time limits are left alone", conf.error().line().c_str());
      return SLURM_SUCCESS;
    }
    jobsubmit::Limits limits{conf.value().margin, conf.value().pad_seconds, conf.value().cap_factor};
    if (jobsubmit::g_state) jobsubmit::g_state->cache.stop();
    jobsubmit::g_state = std::make_unique<jobsubmit::State>(std::move(conf).value(), limits);
    jobsubmit::g_state->cache.start();
    slurm_info("pskel: policy %s, margin %g, pad %us, export %s",
               config::policy_name(jobsubmit::g_state->conf.policy), limits.margin,
               limits.pad_seconds, jobsubmit::g_state->conf.export_file.c_str());
    return SLURM_SUCCESS;
  });
}

PSKEL_EXPORT int fini(void) {
  return pskel::jobsubmit::guarded("fini", [] {
    pskel::jobsubmit::g_state.reset();  // stops and joins the loader thread
    return SLURM_SUCCESS;
  });
}

PSKEL_EXPORT int job_submit(job_desc_msg_t* job_desc, uint32_t, char** err_msg) {
  return pskel::jobsubmit::guarded("job_submit", [&] {
    if (!pskel::jobsubmit::g_state || !job_desc) return SLURM_SUCCESS;
    return pskel::jobsubmit::submit(job_desc, err_msg);
  });
}

// Required by slurmctld (a job_submit plugin without it is fatal). Changes of running or
// pending jobs (scontrol update) are the administrator's: left alone.
PSKEL_EXPORT int job_modify(job_desc_msg_t*, void* /*job_record_t*/, uint32_t, char**) {
  return SLURM_SUCCESS;
}

}  // extern "C"
