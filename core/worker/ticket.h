// A job handed from the epilog to the worker: what the EpilogSlurmctld environment says about it.
// slurmctld runs it once per job with SLURM_JOB_ID, SLURM_JOB_UID, SLURM_JOB_GID, SLURM_JOB_USER,
// SLURM_JOB_PARTITION, SLURM_JOB_NUM_NODES, SLURM_JOB_EXIT_CODE2 (no task count: the worker asks
// scontrol) and the job's spank_job_env as SPANK_<name>: SPANK_PSKEL_PREDICT / SPANK_PSKEL_APP
// (set by spank_pskel.so in sbatch/srun), SPANK_PSKEL_APP_KEY / SPANK_PSKEL_SCRIPT_KEY /
// SPANK_PSKEL_JOB_ARGS / SPANK_PSKEL_LIMITED (set by job_submit_pskel.so). Pure functions; reentrant.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "util/result.h"

namespace pskel::worker {

struct Ticket {
  uint32_t job_id = 0;
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::string user;
  std::string partition;
  uint32_t ntasks = 0;             // 0: not in the environment (EpilogSlurmctld); scontrol says
  uint32_t nodes = 1;              // SLURM_JOB_NUM_NODES
  uint32_t restarts = 0;           // SLURM_JOB_RESTART_COUNT: the run of a requeued job that ended
  std::string exit_code;           // SLURM_JOB_EXIT_CODE2, "0:0"
  bool traced = false;             // --predict: run the pipeline
  std::string app_key;             // the application key ("" : not known)
  std::string script_key;          // its batch script's key, when app_key is a --predict name
  std::string job_args;            // its script's arguments, exportfile::encode_job_args
                                   // (SPANK_PSKEL_JOB_ARGS; "": none or not known)
  bool limited = false;            // pskel set this job's limit: record the outcome
  int64_t prediction_id = 0;
  double predicted_seconds = 0;
  uint32_t limit_minutes = 0;
  uint32_t attempts = 0;           // workers that started on it (a crash-looping job stops at 3)
};

using Env = std::map<std::string, std::string, std::less<>>;

// Where `pskel epilog` was started from: slurmctld's EpilogSlurmctld (once per job, the only
// one that queues), slurmd's Epilog (once per node: ignored, so that a multi-node job is never
// processed twice), or by hand (no SLURM_SCRIPT_CONTEXT: treated as EpilogSlurmctld).
enum class EpilogContext { Controller, Node };
EpilogContext epilog_context(const Env& env);

// nullopt for a job pskel has nothing to do with (the common case: the epilog returns at once);
// an Error for an environment that claims a pskel job but is malformed.
Result<std::optional<Ticket>> ticket_from_env(const Env& env);

// The queue file's text (Key=Value lines) and back.
std::string format_ticket(const Ticket& t);
Result<Ticket> parse_ticket(std::string_view text, const std::string& origin);

}  // namespace pskel::worker
