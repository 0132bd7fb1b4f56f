// The tracer's clock: CLOCK_MONOTONIC in ns (docs/trace-format.md §5), read cheaply.
//
// Why not clock_gettime itself: on x86 it reads the TSC with a serialising instruction, which
// waits for the traced call's pending loads and stores; measured inside a wrapper it costs
// ~40 ns, twice per record, most of the tracer's budget (docs/design.md: <= 100 ns per call).
//
// Where CLOCK_MONOTONIC follows the TSC (tsc_follows_kernel_clock()), it is the TSC scaled
// linearly, up to NTP's small frequency corrections. The clock then reads the TSC (rdtsc,
// ~10 ns) and scales it from an anchor, a (TSC, clock_gettime) pair that it takes again every
// ~16 ms. The scale is the rate over all the time since start(), so its error shrinks as the
// run goes on; readings stay within ~100 ns of clock_gettime, and never decrease. Anywhere else
// (another clocksource, not x86) it is clock_gettime.
//
// Not thread-safe: the session's one recording thread reads it.
#pragma once

#include <time.h>

#include <cstdint>
#include <string_view>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define PSKEL_CLOCK_HAS_TSC 1
#else
#define PSKEL_CLOCK_HAS_TSC 0
#endif

namespace pskel::tracer {

// clock_gettime(CLOCK_MONOTONIC) in ns.
inline int64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// Whether CLOCK_MONOTONIC is the TSC scaled, given the kernel's clocksource (the first line of
// /sys/devices/system/clocksource/clocksource0/current_clocksource) and the CPU flags (the
// "flags" line of /proc/cpuinfo): clocksource "tsc" (the kernel found the TSC invariant and
// synchronised across CPUs before choosing it, and stops using it if that changes); or, in a
// KVM guest, "kvm-clock" with an invariant TSC the hypervisor vouches for (constant_tsc,
// nonstop_tsc and tsc_reliable): kvm-clock is then the guest's TSC scaled by the host's
// parameters, and clock_gettime reads it with a serialising rdtscp and a fence, ~30-40 ns.
bool tsc_follows_kernel_clock(std::string_view clocksource, std::string_view cpu_flags);

class Clock {
 public:
  enum class Source { automatic, tsc, clock_gettime };

  // Chooses the source (automatic: the TSC where tsc_follows_kernel_clock() says so for this
  // machine; tsc where there is none is clock_gettime) and, for the TSC, takes the first
  // anchor. The first reading measures the rate over the time since then, so a few ms between
  // the two make it good from the start.
  void start(Source source = Source::automatic);
  bool uses_tsc() const { return use_tsc_; }

  // CLOCK_MONOTONIC now, in ns.
  int64_t now_ns() {
#if PSKEL_CLOCK_HAS_TSC
    if (use_tsc_) {
      const uint64_t ticks = __rdtsc() - anchor_ticks_;
      if (ticks >= reanchor_ticks_) return reanchor();
      // ticks < reanchor_ticks_, well within int64_t: a signed conversion is one instruction.
      const double since_anchor = static_cast<double>(static_cast<int64_t>(ticks)) * ns_per_tick_;
      int64_t ns = anchor_ns_ + static_cast<int64_t>(since_anchor);
      if (ns < last_ns_) ns = last_ns_;
      last_ns_ = ns;
      return ns;
    }
#endif
    return monotonic_ns();
  }

 private:
  // Takes a new anchor and returns its time; updates the rate and when to re-anchor next.
  int64_t reanchor();

  bool use_tsc_ = false;
  uint64_t first_ticks_ = 0;      // the anchor taken by start()
  int64_t first_ns_ = 0;
  uint64_t anchor_ticks_ = 0;     // the latest anchor
  int64_t anchor_ns_ = 0;
  uint64_t reanchor_ticks_ = 0;   // ticks after the anchor at which to take the next one
  double ns_per_tick_ = 0.0;
  int64_t last_ns_ = 0;           // the latest reading
};

}  // namespace pskel::tracer
