// Runs a child command for `pskel skeleton` (the MPI compiler) and `pskel predict` (the
// skeleton under its launcher): output captured, wall time measured, the whole process group
// killed after a timeout or when pskel itself is interrupted. Not thread-safe (signal handlers).
#pragma once

#include <string>
#include <vector>

#include "util/result.h"

namespace pskel::cli {

struct ProcessResult {
  int status = -1;           // exit status, or 128 + signal
  bool timed_out = false;    // killed after the timeout
  bool interrupted = false;  // pskel got SIGINT/SIGTERM and killed it
  std::string out, err;      // captured, each cut at 16 MiB
  double seconds = 0;        // wall time from start to exit
};

// argv[0] is looked up in PATH. timeout_seconds <= 0: no timeout. Errors: the program could
// not be started (fork or exec failed; exec failing gives status 127 and a message in err).
Result<ProcessResult> run_process(const std::vector<std::string>& argv, double timeout_seconds);

// Splits a launcher string ("mpiexec -n 4", "srun --mpi=pmi2") at blanks; single and double
// quotes group words. Not a shell.
std::vector<std::string> split_words(const std::string& text);

}  // namespace pskel::cli
