// The runs a model is fitted to: what a job was (its command line and task count, turned into
// numeric parameters), what it did (features: counters by source location, or MPI calls and
// bytes by call site) and how long it took. Read from the counter runtime's files
// (DIR/rank.N.json, written by instrumented programs; docs/model.md). Reentrant.
#pragma once

#include <map>
#include <span>
#include <string>
#include <vector>

#include "util/result.h"

namespace pskel::model {

// A command line as a shape and numbers: "stencil -n 128 -i 400 --out=x.dat" with 4 tasks is
// the shape [stencil, -n, {}, -i, {}, --out=x.dat] and the parameters ntasks = 4, -n = 128,
// -i = 400. A numeric argument is named by the option before it ("-n"), by its own option
// ("--size" for "--size=64"), or else by its position ("arg3"). Jobs of one shape are the same
// application with other inputs.
struct JobParameters {
  std::string program;               // the basename of the command's first word
  std::vector<std::string> shape;    // the command with each number as "{}"
  std::vector<std::string> names;    // "ntasks", then one per number, in order
  std::vector<double> values;        // as names
};

inline constexpr const char* kNumberSlot = "{}";

// Fails on an empty command or a task count below 1.
Result<JobParameters> job_parameters(std::span<const std::string> command, int ntasks);

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
