// Parsers for the /proc files the resource sampler reads (sampler.h): the node's CPU ticks
// (/proc/stat), its memory (/proc/meminfo) and the process's resident set (/proc/self/statm).
// Pure functions over a text buffer: no allocation, no exceptions, -1 for what is not there.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pskel::tracer {

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

}  // namespace pskel::tracer
