/* The memory-bound part of compute: streaming through a working set larger than the caches, so
 * that a skeleton's compute between calls slows where memory is slower, not only where the core
 * is (work.h is the core-bound part). The tracer measures how long a byte takes where the
 * program ran (pskel_stream_calibrate); a skeleton streams bytes = share x gap / ns_per_byte.
 * One working set per process; not thread-safe (skeletons are single-threaded). C, so that
 * generated skeletons link it as is. */
#ifndef PSKEL_SKELETONS_STREAM_H
#define PSKEL_SKELETONS_STREAM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Makes the working set `bytes` long (rounded down to whole cache lines, at least one page)
 * and touches every page of it. Returns 0, or -1 if it cannot be allocated (streaming then does
 * nothing). A second call replaces the first. */
int pskel_stream_setup(size_t bytes);
/* Streams `bytes` through the working set (read, add, write), continuing where the last call
 * stopped and wrapping around. Returns a value that depends on the data (callers may ignore it). */
double pskel_stream(uint64_t bytes);
/* The ns one byte of pskel_stream takes now, over a working set of `bytes` made for the
 * measurement and freed after it: the median of five passes; -1 if `bytes` is 0 or it cannot
 * allocate. `ready` (may be NULL) is called with `arg` once the set is resident, right before
 * the timed passes, and exactly once in every case, -1 included: a barrier there makes the
 * processes of a node measure at the same moment, sharing the bandwidth as their memory phases
 * did (two ranks of this VM streaming together each take ~1.5x what one alone takes; probes
 * that start a few ms apart overlap by chance). */
double pskel_stream_calibrate(size_t bytes, void (*ready)(void *arg), void *arg);
/* Frees the working set. */
void pskel_stream_release(void);

#ifdef __cplusplus
}
#endif

#endif
