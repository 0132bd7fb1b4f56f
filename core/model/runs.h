// The runs a model is fitted to: what a job was (its command line and task count, turned into
// numeric parameters), what it did (features: counters by source location, or MPI calls and
// bytes by call site) and how long it took. Read from the counter runtime's files
// (DIR/rank.N.json, written by instrumented programs; docs/model.md). Reentrant.
#pragma once

#include <map>
#include <span>
#include <string>
#include <vector>

#include "export/job_args.h"
#include "util/result.h"

namespace pskel::model {

// The job's parameters from its command line (export/job_args.h: job_submit computes them too).
using exportfile::job_parameters;
using exportfile::JobParameters;
using exportfile::kNumberSlot;

struct Run {
  std::string source;                       // the directory it was read from
  std::string kind = "counters";            // "counters" (PSKEL_COUNTERS) or "trace"
  std::vector<std::string> command;
  int ntasks = 0;
  double seconds = 0;                       // MPI_Init to MPI_Finalize, the slowest rank
  std::map<std::string, double> features;   // mean over ranks (seed 001's mean over nodes)
};

// Reads DIR/rank.0.json .. rank.(N-1).json of one run of an instrumented program. Errors name
// the file and what is wrong: no rank files, a rank missing, ranks of other runs, malformed.
Result<Run> read_counter_run(const std::string& dir);

}  // namespace pskel::model
