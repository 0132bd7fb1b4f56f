#include "sampler.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "env_number.h"
#include "proc_stats.h"
#include "stream.h"
#include "trace/samples_format.h"
#include "work.h"

namespace pskel::tracer {

static_assert(kMemoryProbeSetBytes == PSKEL_STREAM_PROBE_SET_BYTES &&
                  kMemoryProbeBytes == PSKEL_STREAM_PROBE_BYTES,
              "a skeleton measures its streaming against the tracer's memory probe (stream.h)");
namespace {

constexpr int kMaxIntervalMs = 3600 * 1000;
// How often the run-queue delay alone is read: a wait for a CPU lasts a scheduler slice (a few
// ms), so 1 ms places it on the right gap; one pread (~2 us here) per ms costs ~0.2 %.
constexpr int64_t kRunDelayStepNs = 1000000;

// The first multiple of `step` after `now_ns`. Every rank's trace clock starts at the same
// barrier, so ranks that take their samples, probes and delay readings on this grid take them
// within a few us of each other: in a program whose ranks wait for each other, each rank's
// pause would otherwise hold up the others at another moment, and the costs would add up
// over the ranks (2 ranks of the stencil: 2.6 % of the run unaligned).
int64_t next_on_grid(int64_t now_ns, int64_t step) { return (now_ns / step + 1) * step; }

int64_t clock_ns(clockid_t clock) {
  timespec ts;
  if (clock_gettime(clock, &ts) != 0) return -1;
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

}  // namespace

int sample_interval_ms_from_env() {
  return static_cast<int>(
      number_from_env(trace::kSampleEnv, trace::kDefaultSampleMs, 0, kMaxIntervalMs));
}

bool Sampler::start(const char* path, int rank, const char* run_id, int interval_ms,
                    int64_t now_ns, size_t memory_cap) {
  if (out_.is_open() || interval_ms <= 0) return false;
  if (memory_cap > 0) {
    out_.open_memory(path, memory_cap);
  } else if (!out_.open_file(path)) {
    return false;
  }
  char header[160];
  const int n = std::snprintf(header, sizeof header, "%s %d %d %s %d\n", trace::kSamplesMagic,
                              trace::kSamplesVersion, rank, run_id, interval_ms);
  if (n <= 0 || static_cast<size_t>(n) >= sizeof header ||
      !out_.write(header, static_cast<size_t>(n))) {
    out_.forget();
    return false;
  }
  interval_ns_ = static_cast<int64_t>(interval_ms) * 1000000;
  schedstat_fd_ = ::open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
  const long page = sysconf(_SC_PAGESIZE);
  page_bytes_ = page > 0 ? page : 4096;
  owner_ = getpid();
  sample(now_ns);  // the start of the run, however soon it ends
  return true;
}

void Sampler::stop(int64_t now_ns) {
  if (!out_.is_open()) return;
  if (getpid() == owner_) {
    sample(now_ns);  // the end of the run: its last interval is covered too
    if (out_.is_open()) {
      char line[64];
      const int n = std::snprintf(line, sizeof line, "# sampler_cpu_ns %lld\n",
                                  static_cast<long long>(spent_ns_));
      if (n > 0 && static_cast<size_t>(n) < sizeof line)
        out_.write(line, static_cast<size_t>(n));
    }
    out_.close();  // what it held in memory stays, for the node file
  }
  give_up();
}

void Sampler::give_up() {
  if (memory_set_ready_) pskel_stream_release();
  memory_set_ready_ = false;
  // Closed cleanly by stop(); anywhere else (a write failed, a forked child) what it held is
  // not the run's samples.
  if (out_.is_open()) out_.forget();
  if (schedstat_fd_ >= 0) ::close(schedstat_fd_);
  schedstat_fd_ = -1;
  line_bytes_ = 0;
  next_due_ns_ = std::numeric_limits<int64_t>::max();
}

void Sampler::due(int64_t now_ns, bool call_end) {
  if (getpid() != owner_) {  // a child forked from the rank: the file is its parent's
    give_up();
    return;
  }
  if (call_end && now_ns >= next_sample_ns_) {
    sample(now_ns);
    if (out_.is_open() && probe_units_ > 0) probe(now_ns);
  } else {
    // Timed by the wall clock (vDSO), not the thread's CPU clock (a system call each, ~0.5 us
    // here): a pread of a /proc file runs on the CPU throughout.
    const int64_t before = clock_ns(CLOCK_MONOTONIC);
    note_run_delay(now_ns);
    spent_ns_ += clock_ns(CLOCK_MONOTONIC) - before;
  }
  // A full sample due at a call's start is taken at its end.
  if (out_.is_open())
    next_due_ns_ = std::min(next_sample_ns_, next_on_grid(now_ns, kRunDelayStepNs));
}

void Sampler::size_probes(double ns_per_unit) {
  // A unit takes ~200 ns here; under 1 ns is a clock's mistake, and would make probes long.
  probe_units_ = ns_per_unit >= 1 && std::isfinite(ns_per_unit)
                     ? static_cast<uint64_t>(kProbeSeconds * 1e9 / ns_per_unit) + 1
                     : 0;
}

int64_t Sampler::time_less_run_delay(double (*kernel)(uint64_t), uint64_t amount) {
  const int64_t delay_before = read_run_delay();
  const int64_t start = clock_ns(CLOCK_MONOTONIC);
  static volatile double sink;
  sink = kernel(amount);
  (void)sink;
  int64_t ns = clock_ns(CLOCK_MONOTONIC) - start;
  const int64_t delay_after = read_run_delay();
  // Time the thread waited for a CPU is the node's load, as in the gaps (trace/gaps.h).
  if (delay_before >= 0 && delay_after >= delay_before) ns -= delay_after - delay_before;
  return ns;
}

void Sampler::probe(int64_t now_ns) {
  const int64_t cpu_before = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  const int64_t ns = time_less_run_delay(pskel_work, probe_units_);
  if (ns > 0) work_probes_.add(static_cast<double>(ns) / static_cast<double>(probe_units_));
  const int64_t memory_ns = probe_memory_now();
  spent_ns_ += clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu_before;
  // The whole pause (both probes, and the memory probe's first setup) leaves the gap it fell in.
  const int64_t paused = std::max<int64_t>(ns, 0) + std::max<int64_t>(memory_ns, 0);
  if (paused > 0) append_line('p', now_ns, paused);
}

int64_t Sampler::probe_memory_now() {
  if (!memory_probes_on_ || last_rss_ < kMemoryProbeMinRssBytes) return -1;
  int64_t setup_ns = 0;
  if (!memory_set_ready_) {
    const int64_t start = clock_ns(CLOCK_MONOTONIC);
    if (pskel_stream_setup(kMemoryProbeSetBytes, PSKEL_STREAM_READ) != 0) {
      memory_probes_on_ = false;  // no memory for it: the MPI_Finalize measurement remains
      return -1;
    }
    memory_set_ready_ = true;
    setup_ns = clock_ns(CLOCK_MONOTONIC) - start;
  }
  const int64_t ns = time_less_run_delay(pskel_stream, kMemoryProbeBytes);
  if (ns > 0) memory_probes_.add(static_cast<double>(ns) / static_cast<double>(kMemoryProbeBytes));
  return setup_ns + ns;
}

double Sampler::probe_ns_per_unit() const {
  double values[kProbesKept];
  return probe_estimate(values, work_probes_.copy_to(values));
}

double Sampler::probe_ns_per_byte() const {
  double values[kProbesKept];
  return memory_probe_estimate(values, memory_probes_.copy_to(values));
}

int64_t Sampler::read_run_delay() {
  if (schedstat_fd_ < 0) return -1;
  char buf[128];
  ssize_t n;
  do {
    n = ::pread(schedstat_fd_, buf, sizeof buf - 1, 0);
  } while (n < 0 && errno == EINTR);
  const size_t got = n > 0 ? static_cast<size_t>(n) : 0;
  buf[got] = '\0';
  return parse_schedstat_run_delay_ns(buf, got);
}

void Sampler::note_run_delay(int64_t now_ns) {
  const int64_t delay = read_run_delay();
  if (delay < 0) return;
  if (delay == last_run_delay_) {  // an idle node writes nothing, but remembers when it looked
    last_reading_ns_ = now_ns;
    return;
  }
  // A wait happened since the last reading: write that reading too, unless it was written,
  // so that readers do not spread the wait back over the quiet time before it.
  if (last_reading_ns_ > last_written_ns_) append_line('d', last_reading_ns_, last_run_delay_);
  append_line('d', now_ns, delay);
  last_run_delay_ = delay;
  last_reading_ns_ = last_written_ns_ = now_ns;
}

void Sampler::append_line(char kind, int64_t t_ns, int64_t value) {
  if (sizeof lines_ - line_bytes_ < 48 && !flush_lines()) return;
  const int n = std::snprintf(lines_ + line_bytes_, sizeof lines_ - line_bytes_, "%c %lld %lld\n",
                              kind, static_cast<long long>(t_ns), static_cast<long long>(value));
  if (n > 0 && static_cast<size_t>(n) < sizeof lines_ - line_bytes_)
    line_bytes_ += static_cast<size_t>(n);
}

bool Sampler::flush_lines() {
  if (line_bytes_ == 0) return true;
  const bool ok = out_.write(lines_, line_bytes_);
  line_bytes_ = 0;
  if (!ok) give_up();  // sampling ends; the trace itself is not affected
  return ok;
}

void Sampler::sample(int64_t now_ns) {
  const int64_t cpu_before = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  if (!flush_lines()) return;  // they are older than this sample
  char buf[1024];
  const int64_t cpu_ns = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
  size_t n = read_proc_file("/proc/self/statm", buf, sizeof buf);
  int64_t rss = parse_statm_rss_bytes(buf, n, page_bytes_);
  // The memory probe's set is the tracer's, not the program's: its footprint leaves it out.
  if (rss >= 0 && memory_set_ready_) rss = std::max<int64_t>(rss - kMemoryProbeSetBytes, 0);
  last_rss_ = rss;
  n = read_proc_file("/proc/stat", buf, sizeof buf);
  const NodeCpuTicks ticks = parse_proc_stat(buf, n);
  n = read_proc_file("/proc/meminfo", buf, sizeof buf);
  const NodeMemory memory = parse_meminfo(buf, n);
  const int64_t run_delay = read_run_delay();
  if (run_delay >= 0) {
    last_run_delay_ = run_delay;
    last_reading_ns_ = last_written_ns_ = now_ns;
  }
  char line[224];
  const int length = std::snprintf(
      line, sizeof line, "%lld %lld %lld %lld %lld %lld %lld %lld\n", static_cast<long long>(now_ns),
      static_cast<long long>(cpu_ns), static_cast<long long>(rss),
      static_cast<long long>(ticks.busy), static_cast<long long>(ticks.total),
      static_cast<long long>(memory.used_bytes), static_cast<long long>(memory.total_bytes),
      static_cast<long long>(run_delay));
  if (length <= 0 || static_cast<size_t>(length) >= sizeof line ||
      !out_.write(line, static_cast<size_t>(length))) {
    give_up();  // sampling ends; the trace itself is not affected
    return;
  }
  // The next due time after now, not after the last due time: after a long compute phase one
  // sample covers it, not a burst of them.
  next_sample_ns_ = next_on_grid(now_ns, interval_ns_);
  next_due_ns_ = std::min(next_sample_ns_, next_on_grid(now_ns, kRunDelayStepNs));
  spent_ns_ += clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu_before;
}

}  // namespace pskel::tracer
