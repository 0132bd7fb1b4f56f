// Independent work items spread over the CPUs this process may run on: the per-rank passes of
// the merge (each rank's records alone) on a multi-core node. Header-only; the caller links
// the threads dependency.
#pragma once

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <exception>
#include <thread>
#include <vector>

namespace pskel::util {

// CPUs in this process's affinity mask (a Slurm job step's cgroup gives fewer than the node's),
// at least 1, and at most PSKEL_THREADS where that is a positive number (the epilog worker sets
// it from WorkerThreads: it runs beside slurmctld).
inline unsigned usable_cpus() {
  unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) cpus = static_cast<unsigned>(std::max(1, CPU_COUNT(&set)));
  if (const char* cap = std::getenv("PSKEL_THREADS")) {
    char* end = nullptr;
    const unsigned long n = std::strtoul(cap, &end, 10);
    if (end != cap && *end == '\0' && n >= 1) cpus = static_cast<unsigned>(std::min<unsigned long>(cpus, n));
  }
  return cpus;
}

// Calls work(i) once for each i in [0, count), on up to usable_cpus() threads (this one among
// them), items taken in ascending order. work must not touch what another item writes. The
// first exception an item throws is rethrown here once every thread has stopped; items not
// started by then are skipped.
template <class Work>
void parallel_for(size_t count, Work&& work) {
  const size_t threads = std::min<size_t>(usable_cpus(), count);
  if (threads <= 1) {
    for (size_t i = 0; i < count; ++i) work(i);
    return;
  }
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::atomic_flag error_taken = ATOMIC_FLAG_INIT;
  auto drain = [&] {
    for (size_t i; !failed.load(std::memory_order_relaxed) && (i = next.fetch_add(1)) < count;) {
      try {
        work(i);
      } catch (...) {
        if (!error_taken.test_and_set()) error = std::current_exception();
        failed = true;
      }
    }
  };
  std::vector<std::thread> helpers;
  helpers.reserve(threads - 1);
  for (size_t t = 1; t < threads; ++t) {
    try {
      helpers.emplace_back(drain);
    } catch (...) {  // no thread to be had (system_error, bad_alloc): fewer helpers
      break;
    }
  }
  drain();
  for (std::thread& h : helpers) h.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace pskel::util
