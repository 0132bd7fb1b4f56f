// Parsers for the /proc files the resource sampler reads (sampler.h): the node's CPU ticks
// (/proc/stat), its memory (/proc/meminfo), the process's resident set (/proc/self/statm) and
// the traced thread's run-queue delay (/proc/thread-self/schedstat); and their reader.
// Pure functions over a text buffer: no allocation, no exceptions, -1 for what is not there.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pskel::tracer {

// Reads the start of a small /proc or /sys file into buf (NUL-terminated), in one read: what a
// traced process may do at any time (no allocation, no stdio). The bytes read, 0 if none.
size_t read_proc_file(const char* path, char* buf, size_t capacity);

struct NodeCpuTicks {
  int64_t busy = -1;    // user + nice + system + irq + softirq + steal
  int64_t total = -1;   // busy + idle + iowait
};
// From the first line of /proc/stat ("cpu  user nice system idle iowait irq softirq steal ...").
// guest and guest_nice are left out: the kernel already counts them in user and nice.
NodeCpuTicks parse_proc_stat(const char* text, size_t size);

struct NodeMemory {
  int64_t used_bytes = -1;    // MemTotal - MemAvailable
  int64_t total_bytes = -1;   // MemTotal
};
NodeMemory parse_meminfo(const char* text, size_t size);

// The second field of /proc/self/statm (resident pages) times `page_bytes`.
int64_t parse_statm_rss_bytes(const char* text, size_t size, int64_t page_bytes);

// The second field of /proc/thread-self/schedstat ("on-cpu-ns run-delay-ns timeslices"): the
// ns the thread spent runnable but waiting for a CPU (other processes had it).
int64_t parse_schedstat_run_delay_ns(const char* text, size_t size);

}  // namespace pskel::tracer
