// The guard's only contact with Slurm: libslurm's RPCs to slurmctld (never command output).
// Loads the running jobs with their partitions' limits, and changes a job's time limit and
// AdminComment as root or SlurmUser may (what `scontrol update JobId=N TimeLimit=M` does).
// Not thread-safe: one guard thread uses it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "guard/extend.h"
#include "util/result.h"

namespace pskel::guard {

// Initialises libslurm once (slurm_init: reads $SLURM_CONF or the default slurm.conf).
void init_slurm();

// Every job in state RUNNING whose AdminComment holds pskel's limit.
Result<std::vector<RunningJob>> running_pskel_jobs();

// Sets the job's time limit (minutes) and AdminComment.
Result<bool> update_job(uint32_t job_id, uint32_t time_limit_minutes, const std::string& admin_comment);

}  // namespace pskel::guard
