// `pskel guard`: the daemon on the controller (etc/pskel-guard.service) that keeps pskel's
// time limits from ever costing a job. Every GuardInterval seconds it asks slurmctld for the
// running jobs whose limit pskel set and extends those near it (extend.h), records each
// extension in the job's AdminComment, the log and the store, and rewrites its heartbeat.
// It also starts the epilog worker for tickets no worker holds (one killed, or queued while the
// epilog could not start one), so that a queued job is never forgotten.
#pragma once

#include <atomic>

#include "config/config.h"

namespace pskel::guard {

struct RoundResult {
  bool reached_slurmctld = false;
  int jobs = 0;        // running jobs with a pskel limit
  int extended = 0;
};

// One look at the jobs (and the queue).
RoundResult run_round(const config::Config& conf);

// Rounds every conf.guard_interval seconds until `stop` is set (by SIGTERM or SIGINT).
void run(const config::Config& conf, const std::atomic<bool>& stop);

}  // namespace pskel::guard
