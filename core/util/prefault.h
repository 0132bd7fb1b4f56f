// Fresh memory faulted in on a thread of its own, ahead of the thread that writes it. On a
// virtual machine a first touch of a page is dear (the kernel zeroes it, the host may back it),
// and a single-threaded pass that fills a large buffer in order (the merge's parts) otherwise
// pays for every page on its own time. Header-only; the caller links the threads dependency.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <system_error>
#include <thread>

#include "util/parallel.h"

namespace pskel::util {

// Faults in the whole pages of [data, data + bytes), first to last, writable and unchanged
// (MADV_POPULATE_WRITE), while the caller goes on; joined when it goes out of scope. Does
// nothing where it cannot help or cannot be done: a single CPU, a buffer of under 64 MiB, a
// kernel before Linux 5.14, no thread to be had.
class Prefault {
 public:
  Prefault(void* data, size_t bytes) {
    constexpr size_t kLeast = size_t{64} << 20;
    if (bytes < kLeast || usable_cpus() < 2) return;
    const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    const auto begin = (reinterpret_cast<uintptr_t>(data) + page - 1) / page * page;
    const auto end = (reinterpret_cast<uintptr_t>(data) + bytes) / page * page;
    try {
      thread_ = std::jthread([begin, end] {
        (void)::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE);
      });
    } catch (const std::system_error&) {   // no thread: the writer faults its pages itself
    }
  }
  Prefault(const Prefault&) = delete;
  Prefault& operator=(const Prefault&) = delete;

 private:
  std::jthread thread_;
};

}  // namespace pskel::util
