// `pskel doctor`: whether this node is set up as pskel needs, read from slurm.conf,
// plugstack.conf and pskel.conf as the Slurm daemons and pskel's programs read them: the
// plugins where PluginDir says and built for the Slurm that runs here, the slurm.conf and
// plugstack lines, the spool and state directories' owner and mode, the guard, the MPIs, the
// store. One Check per line of output, each failure with what fixes it. Thread safety: run one
// at a time (it runs scontrol and loads the MPI libraries to see that they are there).
#pragma once

#include <ctime>
#include <string>
#include <vector>

namespace pskel::doctor {

enum class Status { ok, fail, skip };
const char* status_name(Status status);  // "ok", "FAIL", "skip"

struct Check {
  std::string name;  // what is checked: "job_submit plugin", "SpoolDir", ...
  Status status = Status::ok;
  std::string detail;  // what was found, one line
  std::string fix;     // for a failure: the command or configuration line that fixes it
};

struct Options {
  std::string slurm_conf;  // the slurm.conf the daemons read ($SLURM_CONF or the default)
  std::string pskel_conf;  // "": the conf= of the plugstack line, else the installed default
  std::string hostname;    // this node's; the controller's checks run where it is SlurmctldHost
  std::time_t now = 0;
};

// The default slurm.conf: $SLURM_CONF, else the one Slurm reads when it is not set.
std::string default_slurm_conf();

std::vector<Check> run_doctor(const Options& options);

}  // namespace pskel::doctor
