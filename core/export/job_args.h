// A job's inputs as run-time models see them (docs/model.md). A batch job's script arguments as
// one word of text, so that they travel from job_submit (in the job's spank_job_env,
// PSKEL_JOB_ARGS) through the epilog's queue file to the worker: each argument percent-encoded
// (bytes other than [A-Za-z0-9._+=/,:-] as %XX), separated by single blanks. And a command line
// as a shape and numbers, the same in the worker that fits a model and in job_submit that uses
// it. Pure; reentrant.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace pskel::exportfile {

inline constexpr size_t kMaxJobArgs = 64;
inline constexpr size_t kMaxJobArgsBytes = 4096;  // encoded

// "" for no arguments, and for more than kMaxJobArgs or kMaxJobArgsBytes (a job whose inputs
// are not modelled).
std::string encode_job_args(std::span<const char* const> args);
// False for text encode_job_args cannot have written.
bool decode_job_args(std::string_view text, std::vector<std::string>* args);

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

// A batch job's command as run-time models see it, from its script's encoded arguments
// (encode_job_args): "job" followed by them, so that the worker that fits a model and
// job_submit that evaluates it see the same shape. False on text encode_job_args cannot have
// written.
bool batch_command(std::string_view encoded_args, std::vector<std::string>* command);

// A key of a command shape (JobParameters::shape): FNV-1a 64 of its words, each with its length.
uint64_t shape_key(std::span<const std::string> shape);

// The key of a job's inputs: 16 hex digits of FNV-1a 64 of its encoded arguments
// (encode_job_args), "-" for none known. A skeleton prediction holds for its traced inputs only.
std::string input_key(std::string_view encoded_args);

}  // namespace pskel::exportfile
