// Application keys: how a job is recognised as "the same application" across submissions.
// job_submit_pskel.so computes the key of every submission, the epilog worker stores traced
// jobs under it. Pure functions, reentrant.
//   --predict=NAME           -> NAME
//   a batch script           -> script:<FNV-1a 64 of the script's bytes, 16 hex digits>
//   otherwise (srun/salloc)  -> job:<job name, characters outside [A-Za-z0-9._+-] as '_'>
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace pskel::exportfile {

uint64_t fnv1a64(std::string_view bytes);

// An application name given with --predict=NAME: 1-64 characters from [A-Za-z0-9._+-],
// starting with a letter or digit (it becomes part of store keys and of the export format).
bool valid_app_name(std::string_view name);

// "" when there is nothing to recognise the job by (no name, no script, no job name).
// A predict_name that is not a valid_app_name (Slurm passes "(null)" for a bare --predict)
// counts as not given.
std::string app_key(std::string_view predict_name, const char* script, const char* job_name);

}  // namespace pskel::exportfile
