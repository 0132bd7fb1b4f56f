// Names inside the spool directory, shared by spank_pskel.so (which creates them) and the epilog
// worker (which reads them): <SpoolDir>/job.<id>/ per job, and in it a directory per step,
// "step.<id>", or "run<R>.step.<id>" for run R > 0 of a job Slurm requeued (SLURM_RESTART_COUNT),
// so that the partial trace of an earlier run never mixes with a later run's.
#pragma once

#include <cstdint>
#include <string>

namespace pskel {

inline std::string job_dir_name(uint32_t job_id) { return "job." + std::to_string(job_id); }

// What every step directory of run `restarts` of a job starts with: "step." or "run<R>.step.".
inline std::string step_dir_prefix(uint32_t restarts) {
  return (restarts ? "run" + std::to_string(restarts) + "." : std::string()) + "step.";
}

}  // namespace pskel
