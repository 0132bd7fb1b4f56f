// Finding a traced job's trace safely. The worker runs as root and the job directory
// (<SpoolDir>/job.<id>) belongs to the job's user, who may have put anything there: every
// entry is opened relative to a verified directory descriptor, without following symlinks,
// and must belong to the job's user; sizes are bounded.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "util/result.h"
#include "util/safe_dir.h"

namespace pskel::worker {

struct TraceChoice {
  UniqueFd job_dir;       // <SpoolDir>/job.<id>, verified
  std::string job_path;
  std::string dir;        // the chosen step's trace directory (absolute)
  std::string step;       // its name, "step.0", "step.batch", ...
  int ranks = 0;
  std::string mpi;        // "mpich" | "openmpi" (meta.json)
  uint64_t bytes = 0;     // size of its rank and samples files
  int hosts = 1;          // distinct host names in meta.json (1 when it has none)
  int ranks_per_host = 0; // the ranks on each host when every host has as many, else 0
};

// The complete trace (meta.json "complete": true) with the most ranks among the job's steps.
// A step whose meta.json counts more ranks than it has rank files is an Error naming the
// missing ranks and their hosts: on a multi-node job, the sign of a SpoolDir that is not one
// file system shared by every node and the controller. Never half a job's ranks.
// `restarts`: which run of a requeued job (its steps are "run<R>.step.*", spank/args.h); the
// steps of other runs are never looked at.
Result<TraceChoice> pick_trace(const std::string& spool_dir, uint32_t job_id, uid_t uid,
                               uint64_t max_bytes, uint32_t restarts = 0);

// Reads dir_fd/name (a regular file owned by uid, no symlink, at most max_bytes).
Result<std::string> read_owned_file(int dir_fd, const std::string& dir_path,
                                    const std::string& name, uid_t uid, size_t max_bytes);

}  // namespace pskel::worker
