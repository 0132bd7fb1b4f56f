// The tracer's clock (core/tracer/clock.h): when the TSC may stand for CLOCK_MONOTONIC, and
// that its readings, TSC or not, follow clock_gettime and never go back.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>

#include "clock.h"

using pskel::tracer::Clock;
using pskel::tracer::monotonic_ns;
using pskel::tracer::tsc_follows_kernel_clock;

namespace {

constexpr const char* kInvariantKvmGuest =
    "flags\t\t: fpu vme de pse tsc msr constant_tsc rep_good nopl xtopology nonstop_tsc cpuid "
    "tsc_known_freq pni tsc_reliable hypervisor";

}  // namespace

TEST_CASE("the TSC follows clocksource tsc, and kvm-clock only over an invariant, reliable TSC") {
  CHECK(tsc_follows_kernel_clock("tsc", ""));
  CHECK(tsc_follows_kernel_clock("kvm-clock", kInvariantKvmGuest));
  // One of the three missing: the host may change the TSC's rate, stop it, or skew it
  // between vCPUs, and kvm-clock's parameters hide that from clock_gettime, not from rdtsc.
  CHECK_FALSE(tsc_follows_kernel_clock("kvm-clock", "flags\t: tsc constant_tsc nonstop_tsc"));
  CHECK_FALSE(tsc_follows_kernel_clock("kvm-clock", "flags\t: tsc nonstop_tsc tsc_reliable"));
  CHECK_FALSE(tsc_follows_kernel_clock("kvm-clock", "flags\t: constant_tsc tsc_reliable"));
  // Flags are whole words: "nonstop_tsc_x" or "xconstant_tsc" is not the flag.
  CHECK_FALSE(tsc_follows_kernel_clock(
      "kvm-clock", "flags\t: xconstant_tsc nonstop_tsc_x tsc_reliable"));
  CHECK_FALSE(tsc_follows_kernel_clock("hpet", kInvariantKvmGuest));
  CHECK_FALSE(tsc_follows_kernel_clock("xen", kInvariantKvmGuest));
  CHECK_FALSE(tsc_follows_kernel_clock("", ""));
}

// 50 ms of readings, each between two clock_gettime readings: within 5 us of that bracket
// (the VM may stop the thread inside it, which widens it, not the error), never decreasing.
void check_follows_clock_gettime(Clock& clock) {
  int64_t last = clock.now_ns(), worst = 0;
  for (const int64_t end = monotonic_ns() + 50'000'000; last < end;) {
    const int64_t before = monotonic_ns();
    const int64_t reading = clock.now_ns();
    const int64_t after = monotonic_ns();
    REQUIRE(reading >= last);
    last = reading;
    worst = std::max(worst, reading < before ? before - reading
                            : reading > after ? reading - after
                                              : int64_t{0});
  }
  MESSAGE("largest distance from clock_gettime: " << worst << " ns");
  CHECK(worst < 5'000);
}

TEST_CASE("clock_gettime as the source") {
  Clock clock;
  clock.start(Clock::Source::clock_gettime);
  CHECK_FALSE(clock.uses_tsc());
  check_follows_clock_gettime(clock);
}

#if defined(__x86_64__) || defined(__i386__)
TEST_CASE("the TSC, scaled from anchors, follows clock_gettime") {
  Clock clock;
  clock.start(Clock::Source::tsc);
  CHECK(clock.uses_tsc());
  check_follows_clock_gettime(clock);
}
#endif
