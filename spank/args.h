// spank_pskel.so's plugstack.conf arguments and the pure helpers of its remote context.
// Everything here is free of Slurm headers so that the unit tests drive it directly.
//
//   required /usr/lib/x86_64-linux-gnu/slurm-wlm/spank_pskel.so [key=value ...]
//
// keys: conf=PATH (pskel.conf to read; default the installed one), spool_dir=PATH,
//       tracer_mpich=PATH, tracer_openmpi=PATH, mpi=auto|mpich|openmpi.
// Values given here override pskel.conf (SpoolDir, TracerMpich, TracerOpenmpi, Mpi).
// Thread safety: all functions are reentrant.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "util/result.h"

namespace pskel::spank {

struct PlugstackArgs {
  std::string conf;  // "" = config::default_config_path()
  std::optional<std::string> spool_dir, tracer_mpich, tracer_openmpi, mpi;
};

// Strict: every argument is key=value with a known key, given once, with a valid value;
// otherwise an Error naming the argument.
Result<PlugstackArgs> parse_plugstack_args(const std::vector<std::string>& args);

// The plugstack overrides applied over a parsed pskel.conf.
config::Config apply_overrides(config::Config conf, const PlugstackArgs& args);

// LD_PRELOAD with `tracer` first and every other pskel tracer (any libpskel-trace-*.so)
// removed, the remaining entries kept in order. Entries are separated by ':' or blanks.
std::string with_tracer(std::string_view ld_preload, const std::string& tracer);

// The first pskel tracer named in LD_PRELOAD, or "" (a step launched from a traced batch
// script inherits the batch step's choice).
std::string inherited_tracer(std::string_view ld_preload);

// Open MPI's mpiexec starts its daemons on the other nodes as a Slurm step (`srun ... orted`),
// and the ranks they fork take the daemon's environment: those ranks belong to the trace of the
// step mpiexec runs in, like the ranks it starts on its own node. True when `program` is that
// daemon and `inherited_dir` (its PSKEL_TRACE_DIR) is a step directory of this job (`job_dir`).
bool keeps_inherited_trace_dir(std::string_view program, std::string_view inherited_dir,
                               std::string_view job_dir);

// The step's directory inside its job's (util/spool_names.h): "step.<id>", "step.batch" for the
// batch script, "step.extern", "step.interactive"; "run<R>.step.<id>" for run R of a requeued job.
std::string step_dir_name(uint32_t step_id, uint32_t restart_count = 0);

}  // namespace pskel::spank
