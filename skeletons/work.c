#define _POSIX_C_SOURCE 199309L  /* clock_gettime under -std=c11 */
#include "work.h"

#include <time.h>

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

/* Seconds one run of `units` units takes. */
static double time_units(uint64_t units) {
  static volatile double sink;
  const double t0 = now_seconds();
  sink = pskel_work(units);
  (void)sink;
  return now_seconds() - t0;
}

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
  /* The fastest of four runs of about `seconds`: the least disturbed by other processes. */
  double best = time_units(units);
  for (int run = 1; run < 4; ++run) {
    const double t = time_units(units);
    if (t < best) best = t;
  }
  return best * 1e9 / (double)units;
}
