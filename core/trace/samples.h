// Reads the optional resource-sample files of a trace (DIR/samples.<rank>, written by the
// tracer's sampler; docs/trace-format.md §10): per rank, the process's CPU time and memory, the
// traced thread's wait for a CPU, and its node's CPU and memory over the run. Traces without
// them are fine: absence is not an error. Pure functions over text and files; thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trace/samples_format.h"
#include "util/result.h"

namespace pskel::trace {

// One line of a sample file. Counters are cumulative since boot (node) or since the process
// started (process CPU); rates come from differences between samples. -1: not available.
struct ResourceSample {
  int64_t t_ns = 0;                 // on the rank's trace clock (ns since its t = 0)
  int64_t process_cpu_ns = -1;      // CLOCK_PROCESS_CPUTIME_ID: user + system, all threads
  int64_t rss_bytes = -1;           // resident set size (/proc/self/statm)
  int64_t node_busy_ticks = -1;     // /proc/stat "cpu": all ticks but idle and iowait
  int64_t node_total_ticks = -1;    // /proc/stat "cpu": all ticks
  int64_t node_mem_used_bytes = -1; // /proc/meminfo MemTotal - MemAvailable
  int64_t node_mem_total_bytes = -1;
  int64_t run_delay_ns = -1;        // /proc/thread-self/schedstat: the traced thread's wait for
                                    // a CPU (version 2 files; trace/gaps.h takes it out of gaps)
};

// The traced thread's cumulative run-queue delay (ns it waited for a CPU) at a time on the rank's
// trace clock: column 8 of the samples and the "d" lines between them (trace/gaps.h uses it).
struct RunDelayPoint {
  int64_t t_ns = 0;
  int64_t delay_ns = 0;
};

// A calibration probe the tracer ran at a call's end (docs/trace-format.md §10): ns of work it
// did from t_ns on, in the compute gap after that call (trace/gaps.h takes it out).
struct ProbePoint {
  int64_t t_ns = 0;
  int64_t ns = 0;
};

struct SampleSeries {
  int rank = 0;
  int interval_ms = 0;
  int version = kSamplesVersion;
  std::vector<ResourceSample> samples;   // in time order
  std::vector<RunDelayPoint> run_delay;  // in time order: every known value, from both kinds of line
  std::vector<ProbePoint> probes;        // in time order (version 3)
  int64_t sampler_cpu_ns = -1;           // the sampler thread's own CPU time, if it ended

  // Values per sample line: kSampleColumnsV1 in a version 1 file.
  int columns() const { return version == 1 ? kSampleColumnsV1 : kSampleColumns; }
};

// A sample file of 10 lines a second for a month is under 1 GB.
inline constexpr uint64_t kMaxSampleFileBytes = uint64_t{1} << 30;

// Parses a sample file's text; `name` is used in errors. The file must belong to `rank` of the
// run `run_id`. A last line without its newline (the process was killed mid-write) is dropped.
Result<SampleSeries> parse_samples(std::string_view text, const std::string& name, int rank,
                                   std::string_view run_id);

// DIR/samples.<rank>, or nullopt if the file does not exist (a trace taken without sampling).
Result<std::optional<SampleSeries>> read_samples(const std::string& dir, int rank,
                                                 std::string_view run_id);

// The resident memory a rank gained after its first sample (taken at the end of MPI_Init):
// the largest RSS sampled less the first. The program's own data, mostly: MPI's buffers exist
// by then. -1 if fewer than two samples have an RSS.
int64_t footprint_bytes(const std::vector<ResourceSample>& samples);

}  // namespace pskel::trace
