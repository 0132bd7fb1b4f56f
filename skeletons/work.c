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

double pskel_work_calibrate(double seconds) {
  static volatile double sink;
  uint64_t units = 16;
  double elapsed = 0.0;
  /* Grow the batch until one run takes `seconds`, then keep the fastest of three. */
  for (;;) {
    const double t0 = now_seconds();
    sink = pskel_work(units);
    elapsed = now_seconds() - t0;
    if (elapsed >= seconds || units >= ((uint64_t)1 << 40)) break;
    units *= 2;
  }
  double best = elapsed;
  for (int run = 0; run < 3; ++run) {
    const double t0 = now_seconds();
    sink = pskel_work(units);
    const double t = now_seconds() - t0;
    if (t < best) best = t;
  }
  (void)sink;
  return best * 1e9 / (double)units;
}
