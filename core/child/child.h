// Child processes of the CLI (the MPI compiler, skeleton runs under their launcher) and of the
// epilog worker (pskel steps as the job's user): run a program with captured, bounded output, a
// time limit and its whole process group killed at the end; detach the worker from slurmd.
// POSIX only, no shell. Call from one thread (fork; stop_on_interrupt swaps signal handlers).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace pskel::child {

struct Identity {
  uid_t uid = 0;
  gid_t gid = 0;
  std::string user;  // for initgroups; "" = no supplementary groups
};

struct Options {
  std::optional<Identity> as;                   // become this user (as root); none: stay
  std::optional<std::vector<std::string>> env;  // the whole environment ("K=V"); none: inherit
  std::string cwd;                              // "": the caller's
  double timeout_seconds = 0;                   // <= 0: none
  size_t max_output = 16u << 20;                // of stdout and of stderr each
  bool search_path = false;                     // look argv[0] up in PATH; else it must be absolute
  bool stop_on_interrupt = false;               // SIGINT/SIGTERM to the caller kill the child
  // Once a line of stdout starts with `done_line` (non-empty), the child has this many seconds
  // more to exit before it is killed (Result::killed_after_done): a program that has printed its
  // result and then hangs in its shutdown (MPICH's MPI_Finalize across nodes) is given up in
  // seconds, not at the timeout.
  std::string done_line;
  double exit_grace_seconds = 10;
};

struct Result {
  bool started = false;      // fork and exec worked
  bool timed_out = false;    // killed after the timeout
  bool interrupted = false;  // the caller got SIGINT/SIGTERM and killed it
  int exit_code = -1;        // exit status, or 128 + signal
  std::string out, err;      // captured, each cut at max_output
  double seconds = 0;        // wall time from start to exit
  double time_limit = 0;     // the timeout it was killed at, if timed_out
  double done_seconds = -1;  // when the done_line was read (-1: never)
  bool killed_after_done = false;  // printed done_line, did not exit within the grace
  // "exit 2: <first stderr line>", "did not finish within 600 s (killed)", "interrupted",
  // "cannot run: <reason>"
  std::string failure() const;
};

// Runs argv[0] with argv, stdin on /dev/null, in a process group of its own. Never throws; never
// leaves the child or anything it started in its group running.
Result run(const std::vector<std::string>& argv, const Options& options);

// Forks a process that is fully detached from the caller (new session, stdio on /dev/null, every
// other descriptor closed, not a child of the caller) and runs `body` in it, then _exit(0).
// Returns true in the caller once the intermediate child has exited, i.e. at once.
bool spawn_detached(void (*body)(void*), void* arg);

}  // namespace pskel::child
