// The guard's decisions (docs/guard.md): when a running job whose limit pskel set is near that
// limit, by how much to extend it, and up to what. A limit pskel sets is a scheduling estimate,
// never a reason to kill a job: the ceiling is the limit the job would have had without pskel.
// Pure functions over what slurmctld says about a job; reentrant.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace pskel::guard {

inline constexpr uint32_t kNoLimit = 0xffffffff;  // Slurm's INFINITE: no ceiling

// What job_submit_pskel.so appends to the AdminComment of a job it limits:
//   pskel: time limit <N> min from prediction #<id>, without pskel: <M min|partition default> (...)
struct PskelLimit {
  uint32_t limit_minutes = 0;
  int64_t prediction_id = 0;
  // The user's own --time (kept under Policy=cap); nullopt: the job asked for none, so without
  // pskel it would have had its partition's DefaultTime (or MaxTime).
  std::optional<uint32_t> requested_minutes;
};

// The text job_submit writes (one place, so that the guard can read it back).
std::string limit_comment(uint32_t limit_minutes, int64_t prediction_id,
                          std::optional<uint32_t> requested_minutes);
// nullopt for a comment without pskel's limit (a job pskel did not limit, or an admin's edit).
std::optional<PskelLimit> parse_limit_comment(std::string_view admin_comment);

// A running job as slurm_load_jobs reports it, with its partition's limits.
struct RunningJob {
  uint32_t job_id = 0;
  uint32_t time_limit_minutes = 0;          // the current limit
  int64_t elapsed_seconds = 0;              // run time so far (suspended time excluded)
  std::string admin_comment;
  uint32_t partition_default_minutes = kNoLimit;  // DefaultTime (kNoLimit: none)
  uint32_t partition_max_minutes = kNoLimit;      // MaxTime (kNoLimit: UNLIMITED)
};

struct GuardSettings {
  uint32_t interval_seconds = 30;  // between two looks at the jobs
  double step = 0.5;               // an extension adds this fraction of the current limit
};

struct Extension {
  int64_t prediction_id = 0;
  uint32_t from_minutes = 0;
  uint32_t to_minutes = 0;
  uint32_t ceiling_minutes = kNoLimit;  // the limit without pskel
  int64_t elapsed_seconds = 0;
  bool reached_ceiling = false;         // to_minutes is the limit without pskel
};

// The limit the job would have had without pskel: its own request, else the partition's
// DefaultTime, else its MaxTime (kNoLimit when there is none), never above MaxTime.
uint32_t ceiling_minutes(const PskelLimit& limit, const RunningJob& job);

// Seconds before its limit at which a job is extended: three intervals, at least 30 s, so
// that a look that comes late (a busy slurmctld) still comes before Slurm's own check.
int64_t lead_seconds(const GuardSettings& settings);

// nullopt when the job is not pskel's, is not near its limit, or is at its ceiling already.
std::optional<Extension> decide(const RunningJob& job, const GuardSettings& settings);

// What the guard appends to the AdminComment for an extension.
std::string extension_comment(const Extension& e);

}  // namespace pskel::guard
