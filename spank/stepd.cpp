// slurmstepd (remote context): in jobs tagged with --predict, every task gets the tracer built
// for its MPI prepended to LD_PRELOAD and PSKEL_TRACE_DIR pointing at
// <SpoolDir>/job.<id>/step.<step>. The batch step counts as a task: its script's environment
// carries both variables, so the ranks `mpiexec` starts from the script inherit them.
//
//   task_init_privileged (root): create <SpoolDir>/job.<id>, owned by the job's user, 0700,
//                                without following symlinks
//   task_init (the job's user):  choose the tracer from the task's executable and set the env
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <optional>
#include <string>

#include "flavour/flavour.h"
#include "args.h"
#include "plugin.h"
#include "util/safe_dir.h"
#include "util/spool_names.h"

namespace pskel::spank {
namespace {

std::optional<config::Config> g_conf;  // unset: the plugin is misconfigured, nothing is traced
bool g_job_dir_ok = false;

constexpr size_t kMaxScriptBytes = 1 << 20;
constexpr int kEnvBytes = 64 * 1024;

bool tagged(spank_t sp) {
  char* arg = nullptr;
  return spank_option_getopt(sp, predict_option(), &arg) == ESPANK_SUCCESS;
}

std::string getenv_job(spank_t sp, const char* name) {
  std::string buf(kEnvBytes, '\0');
  if (spank_getenv(sp, name, buf.data(), kEnvBytes) != ESPANK_SUCCESS) return "";
  buf.resize(strnlen(buf.data(), buf.size()));
  return buf;
}

// The words of a (batch) script, if `path` is a small regular file that is not ELF.
std::vector<std::string> script_words_of(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  struct stat st;
  if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return {};
  std::string text(std::min<size_t>(static_cast<size_t>(st.st_size), kMaxScriptBytes), '\0');
  const ssize_t got = ::pread(fd.get(), text.data(), text.size(), 0);
  if (got <= 0) return {};
  text.resize(static_cast<size_t>(got));
  if (text.starts_with("\177ELF")) return {};
  return flavour::script_words(text);
}

std::string choose_flavour(spank_t sp, const config::Config& conf) {
  if (conf.mpi != "auto") return conf.mpi;
  int argc = 0;
  char** argv = nullptr;
  if (spank_get_item(sp, S_JOB_ARGV, &argc, &argv) != ESPANK_SUCCESS || argc < 1 || !argv[0])
    return "";
  const std::string path_env = getenv_job(sp, "PATH");
  char cwd_buf[4096];
  const std::string cwd = ::getcwd(cwd_buf, sizeof cwd_buf) ? cwd_buf : "";
  std::vector<std::string> words(argv, argv + argc);
  std::string flavour = flavour::detect_flavour(words, path_env, cwd);
  if (!flavour.empty()) return flavour;
  // A batch script (or any script): look for the MPI program among its words.
  const std::string program = flavour::resolve_program(argv[0], path_env, cwd);
  if (program.empty()) return "";
  return flavour::detect_flavour(script_words_of(program), path_env, cwd);
}

}  // namespace

int stepd_init(spank_t, const std::vector<std::string>& args) {
  auto parsed = parse_plugstack_args(args);
  if (!parsed) {
    log_error("plugstack.conf: " + parsed.error().what + ": nothing will be traced");
    return ESPANK_SUCCESS;
  }
  auto conf = config::load_given_config(parsed.value().conf);
  if (!conf) {
    log_error("config: " + conf.error().line() + ": nothing will be traced");
    return ESPANK_SUCCESS;
  }
  g_conf = apply_overrides(std::move(conf).value(), parsed.value());
  return ESPANK_SUCCESS;
}

int stepd_task_init_privileged(spank_t sp) {
  if (!g_conf || !tagged(sp)) return ESPANK_SUCCESS;
  uint32_t job_id = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  if (spank_get_item(sp, S_JOB_ID, &job_id) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_GID, &gid) != ESPANK_SUCCESS) {
    log_error("trace dir: job id/uid/gid not available: job runs untraced");
    return ESPANK_SUCCESS;
  }
  auto spool = ensure_private_root(g_conf->spool_dir);
  if (!spool) {
    log_error("trace dir: " + spool.error().line() + ": job runs untraced");
    return ESPANK_SUCCESS;
  }
  auto dir = ensure_owned_dir(spool.value().get(), g_conf->spool_dir, job_dir_name(job_id), uid, gid);
  if (!dir) {
    log_error("trace dir: " + dir.error().line() + ": job runs untraced");
    return ESPANK_SUCCESS;
  }
  g_job_dir_ok = true;
  return ESPANK_SUCCESS;
}

int stepd_task_init(spank_t sp) {
  if (!g_conf || !g_job_dir_ok || !tagged(sp)) return ESPANK_SUCCESS;
  uint32_t job_id = 0, step_id = 0;
  if (spank_get_item(sp, S_JOB_ID, &job_id) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_STEPID, &step_id) != ESPANK_SUCCESS)
    return ESPANK_SUCCESS;
  const std::string preload = getenv_job(sp, "LD_PRELOAD");
  const std::string flavour = choose_flavour(sp, *g_conf);
  std::string tracer = flavour == flavour::kMpich     ? g_conf->tracer_mpich
                       : flavour == flavour::kOpenMpi ? g_conf->tracer_openmpi
                                                      : inherited_tracer(preload);
  if (tracer.empty()) {
    log_debug("task_init: no MPI program found in this task: not traced");
    return ESPANK_SUCCESS;
  }
  if (::access(tracer.c_str(), R_OK) != 0) {
    log_error("task_init: tracer: " + tracer + ": not readable: job runs untraced");
    return ESPANK_SUCCESS;
  }
  uint64_t restarts = 0;
  if (!config::parse_u64(getenv_job(sp, "SLURM_RESTART_COUNT"), &restarts) || restarts > 0xffff) restarts = 0;
  const std::string job_dir = g_conf->spool_dir + "/" + job_dir_name(job_id);
  std::string dir = job_dir + "/" + step_dir_name(step_id, static_cast<uint32_t>(restarts));
  int argc = 0;
  char** argv = nullptr;
  const std::string inherited = getenv_job(sp, "PSKEL_TRACE_DIR");
  if (spank_get_item(sp, S_JOB_ARGV, &argc, &argv) == ESPANK_SUCCESS && argc >= 1 && argv[0] &&
      keeps_inherited_trace_dir(argv[0], inherited, job_dir))
    dir = inherited;
  // The directory first: a tracer without it would write into the working directory.
  if (spank_setenv(sp, "PSKEL_TRACE_DIR", dir.c_str(), 1) != ESPANK_SUCCESS ||
      spank_setenv(sp, "LD_PRELOAD", with_tracer(preload, tracer).c_str(), 1) != ESPANK_SUCCESS)
    log_error("task_init: spank_setenv failed: job runs untraced");
  // The site's choice, unless the job made its own (overwrite 0: a set variable is kept).
  if (g_conf->trace_files != "auto")
    spank_setenv(sp, "PSKEL_TRACE_FILES", g_conf->trace_files.c_str(), 0);
  return ESPANK_SUCCESS;
}

}  // namespace pskel::spank
