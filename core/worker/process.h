// Child processes of the epilog and the worker: run a program as the job's user with a time
// limit and bounded output capture; detach the worker from slurmd. POSIX only, no shell.
// Thread safety: call from one thread (fork).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace pskel::worker {

struct Identity {
  uid_t uid = 0;
  gid_t gid = 0;
  std::string user;  // for initgroups; "" = no supplementary groups
};

struct RunResult {
  bool started = false;   // fork/exec worked
  bool timed_out = false;
  int exit_code = -1;     // or 128 + signal
  std::string out;        // stdout, at most max_output bytes
  std::string err;        // stderr, at most max_output bytes
  // "exit 2: <first stderr line>", "timed out after 30 s", "cannot run: <reason>"
  std::string failure() const;
};

struct RunOptions {
  Identity as;                          // dropped to when it differs from the caller's
  std::vector<std::string> env;         // the whole environment ("K=V")
  std::string cwd = "/";
  int timeout_seconds = 600;
  size_t max_output = 1 << 20;
};

// Runs argv[0] (an absolute path) with argv. Never throws; never leaves the child running.
RunResult run(const std::vector<std::string>& argv, const RunOptions& options);

// Forks a process that is fully detached from the caller (new session, stdio on /dev/null, every
// other descriptor closed, not a child of the caller) and runs `body` in it, then _exit(0).
// Returns true in the caller once the intermediate child has exited, i.e. at once.
bool spawn_detached(void (*body)(void*), void* arg);

}  // namespace pskel::worker
