#include "guard/guard.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <map>
#include <thread>
#include <utility>

#include "guard/extend.h"
#include "guard/heartbeat.h"
#include "guard/slurm_jobs.h"
#include "store/store.h"
#include "util/safe_dir.h"
#include "worker/worker.h"

namespace pskel::guard {
namespace {

void record(const config::Config& conf, const worker::Log& log, uint32_t job_id, const Extension& e) {
  auto store = store::Store::open(conf.database);
  if (!store) return log.line("guard: job " + std::to_string(job_id) + ": store: " + store.error().line());
  store::Extension row;
  row.job_id = job_id;
  row.prediction_id = e.prediction_id;
  row.from_minutes = e.from_minutes;
  row.to_minutes = e.to_minutes;
  row.ceiling_minutes = e.ceiling_minutes;
  row.elapsed_seconds = e.elapsed_seconds;
  if (auto r = store.value().record_extension(row); !r)
    log.line("guard: job " + std::to_string(job_id) + ": store: " + r.error().line());
}

}  // namespace

RoundResult run_round(const config::Config& conf) {
  const worker::Log log(conf.log_file);
  RoundResult result;
  // A worker killed mid-pipeline leaves its ticket; so does an epilog that could not start one.
  if (worker::has_unclaimed_ticket(conf)) {
    log.line("guard: queued jobs no worker holds: starting a worker");
    worker::start_worker(conf);
  }
  auto jobs = running_pskel_jobs();
  if (!jobs) {
    static std::string last_error;
    if (jobs.error().line() != last_error) log.line("guard: " + jobs.error().line());
    last_error = jobs.error().line();
    return result;
  }
  result.reached_slurmctld = true;
  result.jobs = static_cast<int>(jobs.value().size());
  const GuardSettings settings{conf.guard_interval, conf.guard_step};
  for (const RunningJob& job : jobs.value()) {
    const auto e = decide(job, settings);
    if (!e) continue;
    const std::string comment = job.admin_comment + "; " + extension_comment(*e);
    const std::string name = "guard: job " + std::to_string(job.job_id);
    if (auto r = update_job(job.job_id, e->to_minutes, comment); !r) {
      // Said once per job and error: a guard without the right to update jobs must not write
      // a line per job every interval.
      static std::map<uint32_t, std::string> said;
      if (said.size() > 10000) said.clear();
      if (std::exchange(said[job.job_id], r.error().what) != r.error().what)
        log.line(name + ": " + r.error().what + " (the job keeps its limit)");
      continue;
    }
    ++result.extended;
    log.line(name + ": " + extension_comment(*e));
    record(conf, log, job.job_id, *e);
  }
  // StateDir as the epilog makes it (root's, not writable by others), if no job made it yet.
  // A failure is said once, not at every look, until it changes.
  static std::string heartbeat_error;
  std::string error;
  if (auto state = ensure_private_root(conf.state_dir, ::geteuid()); !state)
    error = "guard: state dir: " + state.error().line();
  else if (auto h = write_heartbeat(conf.heartbeat_file, conf.guard_interval); !h)
    error = "guard: heartbeat: " + h.error().line() + " (job_submit will take the guard for down)";
  if (!error.empty() && error != heartbeat_error) log.line(error);
  heartbeat_error = error;
  return result;
}

void run(const config::Config& conf, const std::atomic<bool>& stop) {
  const worker::Log log(conf.log_file);
  char step[32];
  std::snprintf(step, sizeof step, "%g", conf.guard_step);
  log.line("guard: started (every " + std::to_string(conf.guard_interval) + " s, step " + step + ", extending " +
           std::to_string(lead_seconds({conf.guard_interval, conf.guard_step})) +
           " s before a pskel limit)");
  bool reached = true;
  while (!stop) {
    const auto started = std::chrono::steady_clock::now();
    const RoundResult r = run_round(conf);
    if (r.reached_slurmctld && !reached) log.line("guard: slurmctld answers again");
    reached = r.reached_slurmctld;
    const auto next = started + std::chrono::seconds(conf.guard_interval);
    while (!stop && std::chrono::steady_clock::now() < next)
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  log.line("guard: stopped");
}

}  // namespace pskel::guard
