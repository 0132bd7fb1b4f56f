#include "clock.h"

#include <algorithm>
#include <cstdint>
#include <string_view>

#include "proc_stats.h"

namespace pskel::tracer {

namespace {

// The longest time between two anchors: bounds how far NTP's frequency corrections can move a
// reading (10 ppm over 16 ms: 160 ns), at the cost of one anchor (~60 ns) per 16 ms.
constexpr double kMaxAnchorNs = 16e6;

#if PSKEL_CLOCK_HAS_TSC
// The first line of `text` that starts with `key` (such as "flags\t\t: fpu vme ..."), or "".
std::string_view line_starting(std::string_view text, std::string_view key) {
  for (size_t at = 0; at < text.size();) {
    const size_t end = std::min(text.find('\n', at), text.size());
    const std::string_view line = text.substr(at, end - at);
    if (line.starts_with(key)) return line;
    at = end + 1;
  }
  return {};
}

bool machine_tsc_follows_kernel_clock() {
  char source[64], cpuinfo[16384];  // /proc/cpuinfo's first CPU, flags included, fits
  const std::string_view clocksource(
      source, read_proc_file("/sys/devices/system/clocksource/clocksource0/current_clocksource",
                             source, sizeof source));
  const std::string_view flags = line_starting(
      {cpuinfo, read_proc_file("/proc/cpuinfo", cpuinfo, sizeof cpuinfo)}, "flags");
  return tsc_follows_kernel_clock(clocksource.substr(0, clocksource.find('\n')), flags);
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

bool tsc_follows_kernel_clock(std::string_view clocksource, std::string_view cpu_flags) {
  const auto has_flag = [cpu_flags](std::string_view flag) {
    for (size_t at = cpu_flags.find(flag); at != std::string_view::npos;
         at = cpu_flags.find(flag, at + 1)) {
      const size_t end = at + flag.size();
      const bool starts = at == 0 || cpu_flags[at - 1] == ' ' || cpu_flags[at - 1] == '\t';
      const bool ends = end == cpu_flags.size() || cpu_flags[end] == ' ' || cpu_flags[end] == '\n';
      if (starts && ends) return true;
    }
    return false;
  };
  if (clocksource == "tsc") return true;
  return clocksource == "kvm-clock" && has_flag("constant_tsc") && has_flag("nonstop_tsc") &&
         has_flag("tsc_reliable");
}

void Clock::start(Source source) {
#if PSKEL_CLOCK_HAS_TSC
  use_tsc_ = source == Source::tsc ||
             (source == Source::automatic && machine_tsc_follows_kernel_clock());
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
