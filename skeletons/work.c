#define _POSIX_C_SOURCE 200809L  /* clock_gettime, pread under -std=c11 */
#include "work.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

enum { kChainSteps = 128 };

/* Read through volatile on every call: pskel_work is otherwise a pure function, and the
 * compiler would compute it once and time nothing (it did, in the calibration loop). */
static volatile double kStart = 1.0;

double pskel_work(uint64_t units) {
  /* Four independent chains: enough parallelism to keep the FP unit busy, little enough
   * that the time per unit does not depend on how clever the out-of-order core is. */
  const double start = kStart;
  double a = start, b = start + 0.1, c = start + 0.2, d = start + 0.3;
  for (uint64_t u = 0; u < units; ++u) {
    for (int i = 0; i < kChainSteps; ++i) {
      a = a * 0.999999 + 0.000001;
      b = b * 0.999999 + 0.000001;
      c = c * 0.999999 + 0.000001;
      d = d * 0.999999 + 0.000001;
    }
  }
  return a + b + c + d;
}

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* This thread's run-queue delay in ns (second field of /proc/thread-self/schedstat), or -1
 * where it cannot be read (not Linux, no schedstats). */
static long long run_delay_ns(int fd) {
  char buf[128];
  if (fd < 0) return -1;
  const ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return -1;
  buf[n] = '\0';
  long long on_cpu = 0, delay = -1;
  if (sscanf(buf, "%lld %lld", &on_cpu, &delay) != 2) return -1;
  return delay;
}

/* Seconds one run of `units` units takes. */
static double time_units(uint64_t units) {
  static volatile double sink;
  const double t0 = now_seconds();
  sink = pskel_work(units);
  (void)sink;
  return now_seconds() - t0;
}

static int by_value(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

enum { kRuns = 9 };

double pskel_work_calibrate(double seconds) {
  /* Size the batch: double it until one run takes a sixteenth of `seconds`, then scale it to
   * take about `seconds` (growing it by doubling all the way cost as much as the runs that
   * measure, and overshot them up to twice `seconds`). */
  uint64_t units = 16;
  double elapsed = 0.0;
  for (;;) {
    elapsed = time_units(units);
    if (elapsed >= seconds / 16 || units >= ((uint64_t)1 << 40)) break;
    units *= 2;
  }
  if (elapsed >= seconds / 16 && elapsed < seconds)
    units = (uint64_t)((double)units * seconds / elapsed) + 1;
  /* The mean of the runs during which no other process took the CPU (the run-queue delay did
   * not grow): that keeps the timer ticks and other interruptions that every compute gap of
   * the program pays too. Not the fastest run, which had fewer of them and made skeletons
   * compute ~2 % too long. If no run was undisturbed, or the delay cannot be read, the median
   * of all runs. */
  const int fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
  double all[kRuns], clean_sum = 0.0;
  int clean = 0;
  for (int run = 0; run < kRuns; ++run) {
    const long long before = run_delay_ns(fd);
    all[run] = time_units(units);
    const long long after = run_delay_ns(fd);
    if (before >= 0 && after == before) {
      clean_sum += all[run];
      ++clean;
    }
  }
  if (fd >= 0) close(fd);
  if (clean > 0) return clean_sum / clean * 1e9 / (double)units;
  qsort(all, kRuns, sizeof *all, by_value);
  return all[kRuns / 2] * 1e9 / (double)units;
}
