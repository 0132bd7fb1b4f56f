// The resource sampler: at the first MPI call after each multiple of PSKEL_SAMPLE_MS (default
// 100 ms) of the trace clock, the same moments on every rank, the tracer appends the process's
// CPU time and resident memory, the traced thread's run-queue delay (its wait for a CPU) and its
// node's CPU ticks and memory use to DIR/samples.<rank> (docs/trace-format.md §10); in between,
// at the first call start or end after each millisecond, it reads the run-queue delay alone and
// writes a short line when it grew (a busy node), so that the wait can be taken out of the
// compute gap it fell in (trace/gaps.h). Sampled at MPI calls, never by a thread
// (docs/design.md): the per-call cost is one comparison. It calls no MPI function and throws
// nothing; a /proc file it cannot read gives -1 in that column, a file it cannot write ends the
// sampling. Used by the traced thread only.
// With each full sample it also runs a calibration probe: 0.5 ms of the work kernel
// (skeletons/work.h) after the call it follows, so that the calibration of the trace is
// measured in the conditions of the whole run, not of two 18 ms moments (docs/skeleton.md); a
// "p" line says when and how long, so that readers take it out of the gap it fell in. Once the
// process holds more memory than the caches, a memory probe follows: 2 MB streamed through a
// 16 MB set of its own (skeletons/stream.h), so that a byte's cost is known for the memory the
// program met throughout its run, not only for the moment of MPI_Finalize.
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "spill_file.h"

namespace pskel::tracer {

inline constexpr double kProbeSeconds = 0.0005;
inline constexpr size_t kProbesKept = 1024;
inline constexpr size_t kMinProbes = 10;
// Memory probes: the set is larger than a core's L2 and each 2 MB piece of it is streamed again
// only 8 samples later, so a program whose data outgrows the last-level cache has evicted it by
// then; a program under kMemoryProbeMinRssBytes gets no memory part in its skeleton
// (skeleton/model.h, kMinFootprintBytes) and no memory probe.
// The sizes are skeletons/stream.h's too (sampler.cpp checks), which a skeleton measures its
// own streaming against.
inline constexpr size_t kMemoryProbeSetBytes = size_t{16} << 20;
inline constexpr uint64_t kMemoryProbeBytes = uint64_t{2} << 20;
inline constexpr int64_t kMemoryProbeMinRssBytes = int64_t{32} << 20;

// A uniform sample of at most kProbesKept values of a run's probes (reservoir sampling), so that
// a long run's estimate covers all of it in fixed memory.
class ProbeReservoir {
 public:
  void add(double value) {
    if (count_ < kProbesKept) {
      values_[count_] = value;
    } else {  // value i replaces a kept one with chance kept/i
      random_ ^= random_ << 13;
      random_ ^= random_ >> 7;
      random_ ^= random_ << 17;
      const uint64_t slot = random_ % (count_ + 1);
      if (slot < kProbesKept) values_[slot] = value;
    }
    ++count_;
  }
  // Copies the kept values to `out` (room for kProbesKept); returns how many.
  size_t copy_to(double* out) const {
    const size_t kept = std::min<uint64_t>(count_, kProbesKept);
    std::copy(values_, values_ + kept, out);
    return kept;
  }

 private:
  double values_[kProbesKept];
  uint64_t count_ = 0;  // how many were added
  uint64_t random_ = 0x9e3779b97f4a7c15u;
};

class Sampler {
 public:
  Sampler() = default;
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  // Creates `path` (O_EXCL, no symbolic link), writes the header line and the first sample at
  // trace time `now_ns`. Returns false, sampling nothing, if the file cannot be created or
  // interval_ms <= 0. With memory_cap > 0 the file is held in memory (output()) and created
  // only if it outgrows the cap.
  bool start(const char* path, int rank, const char* run_id, int interval_ms, int64_t now_ns,
             size_t memory_cap = 0);
  // The hot-path checks, at the start and at the end of every traced call (trace-clock time).
  // Full samples are taken at ends; the run-queue delay is read at both, so that a compute gap
  // or a call longer than a millisecond has its own reading on each side.
  void at_call_start(int64_t now_ns) {
    if (now_ns >= next_due_ns_) due(now_ns, false);
  }
  void at_call_end(int64_t now_ns) {
    if (now_ns >= next_due_ns_) due(now_ns, true);
  }
  // Sizes each probe to kProbeSeconds by the MPI_Init calibration (ns per unit of work); a
  // value under 1 ns or not a number leaves the probes off.
  void size_probes(double ns_per_unit);
  // Memory probes on (the default) or off.
  void probe_memory(bool on) { memory_probes_on_ = on; }
  // ns per unit of work over the run from the probes (see probe_estimate), or -1.
  double probe_ns_per_unit() const;
  // ns per byte streamed over the run from the memory probes (see memory_probe_estimate), or -1.
  double probe_ns_per_byte() const;
  // A last sample and the sampler's own cost; closes the file. Idempotent. In a child forked
  // from the sampling process it only forgets the file, which is its parent's.
  void stop(int64_t now_ns);
  // The samples, when held in memory: complete once stop() returned.
  SpillFile& output() { return out_; }

 private:
  void due(int64_t now_ns, bool call_end);
  void probe(int64_t now_ns);
  // Streams the memory probe (setting its set up the first time); ns it paused, or -1.
  int64_t probe_memory_now();
  // Wall ns of kernel(amount) less the run-queue delay that grew meanwhile.
  int64_t time_less_run_delay(double (*kernel)(uint64_t), uint64_t amount);
  void sample(int64_t now_ns);
  int64_t read_run_delay();
  void note_run_delay(int64_t now_ns);
  void append_line(char kind, int64_t t_ns, int64_t value);
  bool flush_lines();
  void give_up();

  int64_t next_due_ns_ = std::numeric_limits<int64_t>::max();  // max: not sampling
  int64_t next_sample_ns_ = 0;
  int64_t interval_ns_ = 0;
  int schedstat_fd_ = -1;         // /proc/thread-self/schedstat of the traced thread
  int64_t last_run_delay_ = -1;   // the last value read
  int64_t last_reading_ns_ = 0;   // when it was last read (it may have been read unchanged since
  int64_t last_written_ns_ = 0;   // it was last written)
  char lines_[4096];              // "d" and "p" lines not written yet
  size_t line_bytes_ = 0;
  int64_t spent_ns_ = 0;          // CPU time of the traced thread spent sampling
  SpillFile out_;
  pid_t owner_ = 0;               // the process that opened the file
  int64_t page_bytes_ = 4096;
  uint64_t probe_units_ = 0;
  ProbeReservoir work_probes_;    // ns per unit of work
  ProbeReservoir memory_probes_;  // ns per byte streamed
  bool memory_probes_on_ = true;
  bool memory_set_ready_ = false; // the probe's set is mapped and resident
  int64_t last_rss_ = -1;         // the program's, from the last sample (the probe's set left out)
};

// The median of `count` >= 1 sorted values.
inline double sorted_median(const double* values, size_t count) {
  const size_t mid = count / 2;
  return count % 2 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

// The calibration from probes' ns per unit: their mean, each capped at twice their median, or
// -1 for fewer than kMinProbes. A probe during which the host preempted the VM counts up to 20x:
// the plain mean scattered 2.5 % between 4 s blocks of compute on a VM; leaving the highest 5 %
// out, 0.8 % but 1.2 % below what the blocks paid (their preemptions); capped, 0.9 % and 0.4 %
// below (docs/skeleton.md). Sorts `values`.
inline double probe_estimate(double* values, size_t count) {
  if (count < kMinProbes) return -1;
  std::sort(values, values + count);
  const double median = sorted_median(values, count);
  double sum = 0;
  for (size_t i = 0; i < count; ++i) sum += std::min(values[i], 2 * median);
  return sum / static_cast<double>(count);
}

// The cost of a byte from memory probes' ns per byte: their median, or -1 for fewer than
// kMinProbes. The median, not probe_estimate's mean: the compute a skeleton streams a share of
// is the typical gaps', bursts of interference left out (skeleton.h), so the byte's cost must
// be the typical one too; a memory burst beside the run slows every probe it overlaps. Sorts
// `values`.
inline double memory_probe_estimate(double* values, size_t count) {
  if (count < kMinProbes) return -1;
  std::sort(values, values + count);
  return sorted_median(values, count);
}

// The interval from PSKEL_SAMPLE_MS: the default if unset or not a number, 0 (off) if it says
// so; at most one hour.
int sample_interval_ms_from_env();

}  // namespace pskel::tracer
