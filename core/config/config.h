// pskel.conf: the site configuration read by the epilog, the worker, the store commands, the
// job_submit plugin and (for the spool directory and tracer paths) the SPANK plugin.
// Slurm's style: `Key=Value` pairs, several per line allowed, `#` starts a comment, keys are
// case-insensitive, a value with blanks is written in double quotes. etc/pskel.conf documents
// every key. parse_config is a pure function (text in, Config or one-line Error out).
// Thread safety: everything here is reentrant.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace pskel::config {

// When job_submit may set a job's time limit (docs/design.md, issue 5).
enum class Policy {
  UnsetOnly,  // only jobs submitted without --time
  Cap,        // also lower a user's limit above prediction x CapFactor
  Off,        // never
};
const char* policy_name(Policy policy);

struct Config {
  std::string spool_dir;         // SpoolDir: per-job trace directories (shared by a job's nodes)
  std::string state_dir;         // StateDir: store, export, queue, log
  std::string database;          // Database: default StateDir/pskel.db
  std::string export_file;       // ExportFile: default StateDir/predictions.export
  std::string log_file;          // LogFile: default StateDir/worker.log
  Policy policy = Policy::UnsetOnly;
  double margin = 0.2;           // Margin: fraction added to a prediction
  uint32_t pad_seconds = 60;     // Pad: seconds added after the margin
  double cap_factor = 2.0;       // CapFactor: policy=cap lowers limits above prediction x this
  std::vector<std::string> calibrate_partitions;  // CalibratePartitions: "" = job's partition
  double target_skeleton_seconds = 20;            // TargetSkeletonSeconds: choose K from this
  uint32_t calibration_time_limit = 10;           // CalibrationTimeLimit: minutes
  uint32_t step_timeout = 900;                    // StepTimeout: seconds per pipeline step
  uint32_t worker_threads = 1;                    // WorkerThreads: CPUs a step may use
  std::string tracer_mpich;      // TracerMpich: libpskel-trace-mpich.so
  std::string tracer_openmpi;    // TracerOpenmpi: libpskel-trace-openmpi.so
  std::string mpi = "auto";      // Mpi: auto | mpich | openmpi (which tracer to preload)
  std::string trace_files = "auto";  // TraceFiles: auto | node | rank (traced jobs' trace files)
  std::string pskel;             // Pskel: the pskel program the worker runs (epilog has no PATH)
  std::string sbatch = "/usr/bin/sbatch";      // Sbatch
  std::string scontrol = "/usr/bin/scontrol";  // Scontrol
  std::string launcher_mpich = "srun --mpi=pmi2 -n {ntasks}";                    // LauncherMpich
  std::string launcher_openmpi = "mpiexec.openmpi --oversubscribe -n {ntasks}";  // LauncherOpenmpi
  uint64_t max_trace_bytes = uint64_t{8} << 30;  // MaxTraceBytes: larger traces are not processed
  // The guard (`pskel guard`, on the controller): extends jobs whose limit pskel set.
  std::string heartbeat_file;    // HeartbeatFile: default StateDir/guard.heartbeat
  uint32_t guard_interval = 30;  // GuardInterval: seconds between two looks at the running jobs
  double guard_step = 0.5;       // GuardStep: an extension adds this fraction of the limit
  bool guard_required = true;    // GuardRequired: job_submit sets no limit while the guard is down

  // The built-in defaults (paths from the build's install options), before any file.
  static Config defaults();
};

// Parses pskel.conf text over `base` (normally Config::defaults()); `origin` names the file in
// errors ("pskel.conf:12: unknown key Foo"). Derived paths (Database, ExportFile, LogFile) not
// given are set from StateDir afterwards.
Result<Config> parse_config(std::string_view text, const std::string& origin,
                            Config base = Config::defaults());

// Reads and parses a file (at most 1 MiB). A missing file is an error unless `missing_ok`, in
// which case the defaults are returned.
Result<Config> load_config(const std::string& path, bool missing_ok = false);

// The configuration file to read: $PSKEL_CONF if set, else the installed default
// (<sysconfdir>/pskel.conf).
std::string default_config_path();

// The configuration a command or plugin was pointed at: `given` (a --conf option, a plugstack
// conf= argument), which must exist; when empty, default_config_path(), the defaults if missing.
Result<Config> load_given_config(const std::string& given);

// Splits a line of `Key=Value` pairs (quotes allowed around values) into pairs; "" keys never
// occur. Error on a pair without '=' or an unterminated quote. Shared with the plugstack parser.
struct Pair {
  std::string key;
  std::string value;
};
Result<std::vector<Pair>> split_pairs(std::string_view line);

// A key as the files of Slurm's style compare it: ASCII lower case (keys are case-insensitive).
// Shared with `pskel doctor`'s reader of slurm.conf.
std::string lower(std::string_view s);
// The items of a `separator`-separated list value (CalibratePartitions, PluginDir,
// JobSubmitPlugins), empty items dropped.
std::vector<std::string> split_list(const std::string& value, char separator = ',');

// Strict number parsing for config values (whole string, no sign surprises).
bool parse_u64(std::string_view s, uint64_t* out);
bool parse_double(std::string_view s, double* out);

}  // namespace pskel::config
