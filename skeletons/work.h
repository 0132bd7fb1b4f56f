/* The portable unit of computation. The tracer measures how long one unit takes where the
 * program ran (the calibration constant of a trace); a skeleton replays a compute gap of
 * g ns as g / ns_per_unit units, so a faster or slower CPU runs it faster or slower, as it
 * would the original. One unit is a fixed, dependent floating-point chain: it models
 * core-bound compute, not memory bandwidth (see docs/skeleton.md).
 * Thread-safe, no allocation. C, so that generated skeletons link it as is. */
#ifndef PSKEL_SKELETONS_WORK_H
#define PSKEL_SKELETONS_WORK_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Runs `units` units of work. Returns a value that depends on all of it (so the compiler
 * cannot drop the work); callers may ignore it. */
double pskel_work(uint64_t units);

/* Measures the ns one unit takes on this CPU now: the mean of nine runs of about `seconds`
 * each, leaving out runs during which another process had the CPU (Linux's run-queue delay). */
double pskel_work_calibrate(double seconds);

#ifdef __cplusplus
}
#endif

#endif
