// The guard's heartbeat: a small file in StateDir that `pskel guard` rewrites after every look
// at the running jobs that reached slurmctld. Its age says whether a guard is keeping pskel's
// limits safe: job_submit_pskel.so (from its loader thread, never on the submission path) and
// `pskel report` read it. Plain POSIX, no other dependency; reentrant.
#pragma once

#include <cstdint>
#include <ctime>
#include <string>

#include "util/result.h"

namespace pskel::guard {

// Replaces the file atomically: "pskel-guard pid=<pid> interval=<seconds>\n"; the mtime is
// the time of the look.
Result<bool> write_heartbeat(const std::string& path, uint32_t interval_seconds);

struct Heartbeat {
  bool present = false;
  int64_t age_seconds = -1;
  uint32_t interval_seconds = 0;
  bool alive = false;  // younger than three intervals and 10 s
};

// Never fails: a missing, unreadable or malformed file is a guard that is not running.
Heartbeat read_heartbeat(const std::string& path, std::time_t now);

// "running (last look 12 s ago)" / "NOT running (no heartbeat at <path>)" / "NOT running (last look 9 min ago)"
std::string describe(const Heartbeat& heartbeat, const std::string& path);

}  // namespace pskel::guard
