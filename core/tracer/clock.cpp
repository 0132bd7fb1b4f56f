#include "clock.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

namespace pskel::tracer {

namespace {

// The longest time between two anchors: bounds how far NTP's frequency corrections can move a
// reading (10 ppm over 16 ms: 160 ns), at the cost of one anchor (~60 ns) per 16 ms.
constexpr double kMaxAnchorNs = 16e6;

#if PSKEL_CLOCK_HAS_TSC
// Whether the kernel keeps its clocks on the TSC (it checked that the TSC is invariant and
// synchronised across CPUs before choosing it, and stops using it if that changes).
bool kernel_clock_is_tsc() {
  const int fd = ::open("/sys/devices/system/clocksource/clocksource0/current_clocksource",
                        O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char name[16] = {};
  const ssize_t n = ::read(fd, name, sizeof name - 1);
  ::close(fd);
  return n > 0 && std::strcmp(name, "tsc\n") == 0;
}

// A TSC reading and the CLOCK_MONOTONIC time that matches it: the midpoint of two
// clock_gettime readings around it, whose error is half the time between them. The tightest
// of a few tries: an interrupt between two readings would move the midpoint by microseconds.
int64_t read_pair(uint64_t* ticks) {
  int64_t best_ns = 0, best_gap = INT64_MAX;
  for (int attempt = 0; attempt < 4; ++attempt) {
    const int64_t before = monotonic_ns();
    const uint64_t t = __rdtsc();
    const int64_t after = monotonic_ns();
    if (after - before < best_gap) {
      best_gap = after - before;
      best_ns = before + best_gap / 2;
      *ticks = t;
    }
  }
  return best_ns;
}
#endif

}  // namespace

void Clock::start() {
#if PSKEL_CLOCK_HAS_TSC
  use_tsc_ = kernel_clock_is_tsc();
  if (!use_tsc_) return;
  first_ns_ = anchor_ns_ = read_pair(&first_ticks_);
  anchor_ticks_ = first_ticks_;
  reanchor_ticks_ = 0;  // the first reading measures the rate
#endif
}

int64_t Clock::reanchor() {
#if PSKEL_CLOCK_HAS_TSC
  uint64_t ticks = 0;
  const int64_t ns = read_pair(&ticks);
  if (ticks > first_ticks_ && ns > first_ns_)
    ns_per_tick_ = static_cast<double>(ns - first_ns_) / static_cast<double>(ticks - first_ticks_);
  anchor_ticks_ = ticks;
  anchor_ns_ = ns;
  // Next after a quarter of the time the rate was measured over (the rate's error then moves a
  // reading by a fraction of a pair's own error), and at least every kMaxAnchorNs.
  const uint64_t quarter = (ticks - first_ticks_) / 4;
  const uint64_t longest = ns_per_tick_ > 0 ? static_cast<uint64_t>(kMaxAnchorNs / ns_per_tick_) : 0;
  reanchor_ticks_ = quarter < longest ? quarter : longest;
  if (ns > last_ns_) last_ns_ = ns;
  return last_ns_;
#else
  return monotonic_ns();
#endif
}

}  // namespace pskel::tracer
