// Internal to spank_pskel.so: the pieces the per-context files share. The Slurm entry points
// are in dispatch.cpp, which routes each callback by spank_context() to alloc.cpp (sbatch,
// salloc, srun: the --predict option tags the job) or stepd.cpp (slurmstepd: traced jobs get
// the tracer preloaded). Single-threaded: Slurm calls a SPANK plugin from one thread.
#pragma once

#include <stdint.h>  // slurm/spank.h uses uint16_t etc. without including it

extern "C" {
#include <slurm/spank.h>
}

#include <string>
#include <vector>

namespace pskel::spank {

// The --predict[=NAME] option (the same table in every context, as Slurm requires).
struct spank_option* predict_option();

// Log lines read "pskel: <phase>: <what failed>: <value>: <reason>".
void log_error(const std::string& line);
void log_debug(const std::string& line);

// sbatch/salloc/srun, after options are parsed: tags the job for slurmctld and the epilog.
int alloc_init_post_opt(spank_t sp);

// slurmstepd.
int stepd_init(spank_t sp, const std::vector<std::string>& args);
int stepd_task_init_privileged(spank_t sp);
int stepd_task_init(spank_t sp);

}  // namespace pskel::spank
