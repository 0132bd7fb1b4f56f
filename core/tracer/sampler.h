// The resource sampler: at the first MPI call after each PSKEL_SAMPLE_MS (default 100 ms) the
// tracer appends the process's CPU time and resident memory and its node's CPU ticks and memory
// use to DIR/samples.<rank> (docs/trace-format.md §10). Sampled at MPI calls, never by a thread
// (DESIGN.md): the per-call cost is one comparison; a compute phase between two calls shows as
// its average. It calls no MPI function and throws nothing; a /proc file it cannot read gives -1
// in that column, a file it cannot write ends the sampling. Used by the traced thread only.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <limits>

namespace pskel::tracer {

class Sampler {
 public:
  Sampler() = default;
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  // Creates `path` (O_EXCL, no symbolic link), writes the header line and the first sample at
  // trace time `now_ns`. Returns false, sampling nothing, if the file cannot be created or
  // interval_ms <= 0.
  bool start(const char* path, int rank, const char* run_id, int interval_ms, int64_t now_ns);
  // The hot-path check, at the end of every traced call (trace-clock time).
  void at_call(int64_t now_ns) {
    if (now_ns >= next_due_ns_) sample(now_ns);
  }
  // A last sample and the sampler's own cost; closes the file. Idempotent. In a child forked
  // from the sampling process it only forgets the file, which is its parent's.
  void stop(int64_t now_ns);

 private:
  void sample(int64_t now_ns);

  int64_t next_due_ns_ = std::numeric_limits<int64_t>::max();  // max: not sampling
  int64_t interval_ns_ = 0;
  int64_t spent_ns_ = 0;          // CPU time of the traced thread spent sampling
  int fd_ = -1;
  pid_t owner_ = 0;               // the process that opened the file
  int64_t page_bytes_ = 4096;
};

// The interval from PSKEL_SAMPLE_MS: the default if unset or not a number, 0 (off) if it says
// so; at most one hour.
int sample_interval_ms_from_env();

}  // namespace pskel::tracer
