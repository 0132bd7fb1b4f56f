// sbatch, salloc and srun (allocator and local context): --predict[=NAME] tags the job.
// The option reaches slurmctld by itself (spank_job_env: _SLURM_SPANK_OPTION_pskel_predict);
// slurmd drops that entry before the epilog runs, so the tag is also set in the job control
// environment, which the epilog sees as SPANK_PSKEL_PREDICT / SPANK_PSKEL_APP.
#include <string>

#include "export/app_key.h"
#include "plugin.h"

namespace pskel::spank {
namespace {

bool g_predict = false;
std::string g_app;

extern "C" {
static int predict_cb(int, const char* optarg, int remote) {
  if (remote) return ESPANK_SUCCESS;  // slurmstepd asks spank_option_getopt instead
  // A bare --predict reaches the sruns inside the job as the text "(null)"
  // (SLURM_SPANK__SLURM_SPANK_OPTION_pskel_predict): that is no name, not a bad one.
  std::string name = optarg ? optarg : "";
  if (name == "(null)") name.clear();
  if (!name.empty() && !exportfile::valid_app_name(name)) {
    slurm_error("pskel: --predict: bad application name: %s: use 1-64 letters, digits, '.', "
                "'_', '+' or '-', starting with a letter or digit", name.c_str());
    return -1;
  }
  g_predict = true;
  g_app = name;
  return ESPANK_SUCCESS;
}
}

char g_name[] = "predict";
char g_arginfo[] = "NAME";
char g_usage[] =
    "Trace this job's MPI ranks so that pskel can predict its run time (NAME names the "
    "application; default: the job script). Later submissions get a time limit from it.";
struct spank_option g_option = {g_name, g_arginfo, g_usage, 2, 0, predict_cb};

}  // namespace

struct spank_option* predict_option() { return &g_option; }

int alloc_init_post_opt(spank_t sp) {
  if (!g_predict) return ESPANK_SUCCESS;
  spank_err_t rc = spank_job_control_setenv(sp, "PSKEL_PREDICT", "1", 1);
  if (rc == ESPANK_SUCCESS && !g_app.empty())
    rc = spank_job_control_setenv(sp, "PSKEL_APP", g_app.c_str(), 1);
  if (rc != ESPANK_SUCCESS)
    log_error(std::string("tag job: spank_job_control_setenv: ") + spank_strerror(rc));
  return ESPANK_SUCCESS;
}

}  // namespace pskel::spank
