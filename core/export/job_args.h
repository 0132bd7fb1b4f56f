// A batch job's script arguments as one word of text, so that they travel from job_submit (in
// the job's spank_job_env, PSKEL_JOB_ARGS) through the epilog's queue file to the worker: the
// inputs a run-time model is fitted over (docs/model.md). Each argument percent-encoded (bytes
// other than [A-Za-z0-9._+=/,:-] as %XX), separated by single blanks. Pure; reentrant.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace pskel::exportfile {

inline constexpr size_t kMaxJobArgs = 64;
inline constexpr size_t kMaxJobArgsBytes = 4096;  // encoded

// "" for no arguments, and for more than kMaxJobArgs or kMaxJobArgsBytes (a job whose inputs
// are not modelled).
std::string encode_job_args(std::span<const char* const> args);
// False for text encode_job_args cannot have written.
bool decode_job_args(std::string_view text, std::vector<std::string>* args);

}  // namespace pskel::exportfile
