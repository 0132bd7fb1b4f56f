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

/* The tracer's memory probe (core/tracer/sampler.h): PSKEL_STREAM_PROBE_BYTES streamed through
 * a set of PSKEL_STREAM_PROBE_SET_BYTES of its own at each resource sample. Here, so that the
 * skeleton measures its own streaming against the same probe (pskel_stream_probe_ratio). */
#define PSKEL_STREAM_PROBE_SET_BYTES ((size_t)16 << 20)
#define PSKEL_STREAM_PROBE_BYTES ((uint64_t)2 << 20)

/* How a pass streams. Reading only is what the tracer measures and what a skeleton of a trace
 * that says so ("stream_kind": "read" in meta.json) streams: the memory-bound phases it stands
 * for mostly read (a matrix, a grid's neighbours) and write little, and a stream that writes
 * every line back costs ranks sharing a node's bandwidth more per byte than the probe saw (spmv's
 * K = 1 skeleton against its own trace: +10..+42 %, median +16 %, reading and writing; -9..+8 %,
 * median -1 %, reading only). Reading and writing is what traces before that measured, and
 * their skeletons stream so, each byte priced the way it was measured. */
enum pskel_stream_kind { PSKEL_STREAM_READ = 0, PSKEL_STREAM_READ_WRITE = 1 };

/* Makes the working set `bytes` long (rounded down to whole cache lines, at least one page),
 * writes to every page of it (resident) and streams it `kind` from now on. Returns 0, or -1 if it
 * cannot be allocated (streaming then does nothing). A second call replaces the first. */
int pskel_stream_setup(size_t bytes, enum pskel_stream_kind kind);
/* Streams `bytes` through the working set as setup said, continuing where the last call
 * stopped and wrapping around. Returns a value that depends on the data (callers may ignore it). */
double pskel_stream(uint64_t bytes);
/* The ns one byte of pskel_stream takes now, streamed `kind` over a working set of `bytes` made
 * for the measurement and freed after it: the median of five passes; -1 if `bytes` is 0 or it
 * cannot allocate. `ready` (may be NULL) is called with `arg` once the set is resident, right
 * before the timed passes, and exactly once in every case, -1 included: a barrier there makes
 * the processes of a node measure at the same moment, sharing the bandwidth as their memory
 * phases did (two ranks of this VM streaming together each take ~1.5x what one alone takes;
 * probes that start a few ms apart overlap by chance). */
double pskel_stream_calibrate(size_t bytes, enum pskel_stream_kind kind,
                              void (*ready)(void *arg), void *arg);
/* What a byte of pskel_stream costs in the working set, streamed the way a skeleton streams
 * (passes of tens of MB, continuing where the last stopped), over what a byte costs the
 * tracer's memory probe (PSKEL_STREAM_PROBE_BYTES through a PSKEL_STREAM_PROBE_SET_BYTES set
 * of its own, the working set streamed in between as the program's data was), both of the
 * working set's kind: both measured here and now, in turns, the medians of both, in the
 * thread's CPU time (a preempted pass is no price of memory).
 * A skeleton's bytes come from the probe's price where the trace was taken; they cost this
 * ratio more (a larger set: more page walks, their tables out of the caches; long passes of
 * every rank at once) and its compute would run that much long (spmv's K = 1 skeleton: +20 %).
 * About 0.5 GB streamed. `ready` as in pskel_stream_calibrate (called once in every case).
 * Returns -1 without a working set (pskel_stream_setup) or memory for the probe's set. */
double pskel_stream_probe_ratio(void (*ready)(void *arg), void *arg);
/* Frees the working set. */
void pskel_stream_release(void);

#ifdef __cplusplus
}
#endif

#endif
