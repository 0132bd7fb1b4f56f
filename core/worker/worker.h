// The epilog side of pskel (docs/design.md, "Data flow"): the epilog hands the job to a
// detached worker and returns at once; the worker merges, compresses, builds and compiles the
// skeleton and calibrates it.
//
// epilog():   reads the epilog environment, writes a ticket into <StateDir>/queue and starts a
//             detached worker. Milliseconds; never fails (a non-zero epilog drains the node).
// work():     claims queued tickets one by one (flock) and for each
//               - records the outcome of a job whose limit pskel set (predicted vs actual), and
//               - for a traced job: picks its trace safely, then runs the steps below as the
//                 job's user, each logged and its failure recorded in the store:
//                   compress   `pskel compress DIR --json`
//                   skeleton   `pskel skeleton DIR -o OUT --scale K --json`
//                   calibrate  per partition: `sbatch --wait ... pskel predict OUT --json`
//                 and stores skeleton + predictions in one transaction, then rewrites the
//                 export atomically. A worker killed at any point leaves no half-written
//                 prediction; its ticket is retried by the next worker (at most 3 attempts).
#pragma once

#include <string>
#include <vector>

#include "config/config.h"
#include "store/store.h"
#include "worker/ticket.h"

namespace pskel::worker {

// Appends "<UTC time> pskel[<pid>]: <text>" lines to the log file (O_APPEND, one write each).
class Log {
 public:
  explicit Log(std::string path) : path_(std::move(path)) {}
  void line(const std::string& text) const;

 private:
  std::string path_;
};

struct EpilogResult {
  bool queued = false;
  std::string message;  // what happened, for the log
};

// REQUIRES: running as root (or as the owner of StateDir). `env` is the epilog's environment.
EpilogResult epilog(const config::Config& conf, const Env& env, bool detach = true);

// Processes every queued ticket, then returns.
void work(const config::Config& conf);

// Whether the queue holds a ticket no worker is working on (none holds its lock).
bool has_unclaimed_ticket(const config::Config& conf);

// Starts a detached worker (setsid, double fork, stdio on /dev/null) running work(conf).
void start_worker(const config::Config& conf);

// Publishes the store to job_submit_pskel.so: refreshes the partitions (MaxTime, the default
// one) from `scontrol show partition`, keeping the stored ones if that fails (said in *note),
// then rewrites the export atomically.
Result<bool> publish(const config::Config& conf, store::Store& store, std::string* note);

// The environment of the worker's child processes: a fixed PATH, PSKEL_THREADS (the threads a
// pskel step may use, util/parallel.h), plus SLURM_CONF and PSKEL_CONF if the worker has them.
std::vector<std::string> child_environment(const std::string& home, const std::string& user,
                                           uint32_t threads = 1);

// Quotes a word for /bin/sh (single quotes).
std::string shell_quote(const std::string& word);

// The number of times the skeleton must be shorter than the job: runtime / target, at least 1.
double choose_scale(double runtime_seconds, double target_seconds);

}  // namespace pskel::worker
