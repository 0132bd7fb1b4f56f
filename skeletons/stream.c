#define _DEFAULT_SOURCE  /* MAP_ANONYMOUS and clock_gettime under -std=c11 */
#include "stream.h"

#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

enum { kLine = 64, kPage = 4096, kPasses = 5 };

static double *set = NULL;   /* the working set: mmap'd, so that freeing returns it */
static size_t set_bytes = 0;
static size_t position = 0;  /* in doubles */
static enum pskel_stream_kind set_kind = PSKEL_STREAM_READ;

static void *map(size_t bytes) {
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

/* `bytes` rounded down to whole cache lines, at least a page. */
static size_t whole_lines(size_t bytes) {
  bytes -= bytes % kLine;
  return bytes < kPage ? kPage : bytes;
}

/* A write to every page: resident, and each its own (a page never written reads as the kernel's
 * one zero page, always in the caches). */
static void touch(double *data, size_t n) {
  for (size_t i = 0; i < n; i += kPage / sizeof *data) data[i] = 1.0;
}

int pskel_stream_setup(size_t bytes, enum pskel_stream_kind kind) {
  pskel_stream_release();
  bytes = whole_lines(bytes);
  set = map(bytes);
  if (set == NULL) return -1;
  set_bytes = bytes;
  set_kind = kind;
  touch(set, bytes / sizeof *set);
  position = 0;
  return 0;
}

void pskel_stream_release(void) {
  if (set != NULL) munmap(set, set_bytes);
  set = NULL;
  set_bytes = 0;
  position = 0;
  set_kind = PSKEL_STREAM_READ;
}

/* Two doubles at a time, in a vector type: the tracer's probe (built by meson, -O3 in a release
 * build) and a skeleton's streaming (mpicc -O2) must run the same instructions, or a byte costs
 * one thing in the probe and another in the skeleton. GCC 12 vectorises a plain loop at -O3
 * only; its scalar -O2 loop, beside a second rank streaming, took up to 1.6x the probe's time
 * per byte, and spmv's K = 1 skeleton ran 30-50 % long. Unaligned and aliasing doubles. */
typedef double pair __attribute__((vector_size(16), aligned(8), may_alias));

/* One pass over data[from, to) that reads every element: four independent sums (one would be
 * bound by the adder's latency, not by memory), bound by memory bandwidth once the set is larger
 * than the caches. Returning the sum keeps it from being dropped. */
static double sweep_read(const double *data, size_t from, size_t to) {
  pair s0 = {0, 0}, s1 = {0, 0}, s2 = {0, 0}, s3 = {0, 0};
  size_t i = from;
  for (; i + 8 <= to; i += 8) {
    s0 += *(const pair *)(data + i);
    s1 += *(const pair *)(data + i + 2);
    s2 += *(const pair *)(data + i + 4);
    s3 += *(const pair *)(data + i + 6);
  }
  double sum = 0.0;
  for (; i < to; ++i) sum += data[i];
  const pair t = (s0 + s1) + (s2 + s3);
  return sum + t[0] + t[1];
}

/* One pass that reads and writes back every element (two flops each, no chain between them);
 * returns the last value written. */
static double sweep_read_write(double *data, size_t from, size_t to) {
  const pair half = {0.5, 0.5}, one = {1.0, 1.0};
  size_t i = from;
  for (; i + 2 <= to; i += 2) {
    pair *p = (pair *)(data + i);
    *p = *p * half + one;
  }
  for (; i < to; ++i) data[i] = data[i] * 0.5 + 1.0;
  return to > from ? data[to - 1] : 0.0;
}

static double sweep(double *data, size_t from, size_t to, enum pskel_stream_kind kind) {
  return kind == PSKEL_STREAM_READ_WRITE ? sweep_read_write(data, from, to)
                                         : sweep_read(data, from, to);
}

double pskel_stream(uint64_t bytes) {
  if (set == NULL || bytes == 0) return 0.0;
  const size_t n = set_bytes / sizeof *set;
  uint64_t left = bytes / sizeof *set;
  double sum = 0.0;
  while (left > 0) {
    const size_t chunk = left < n - position ? (size_t)left : n - position;
    sum += sweep(set, position, position + chunk, set_kind);
    position = (position + chunk) % n;
    left -= chunk;
  }
  return sum;
}

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int by_value(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double pskel_stream_calibrate(size_t bytes, enum pskel_stream_kind kind,
                              void (*ready)(void *arg), void *arg) {
  /* Its own buffer, not the working set: the tracer's sampler has released its set by the time
   * it calibrates, and a skeleton never calibrates. */
  double *data = NULL;
  size_t n = 0;
  if (bytes > 0) {
    bytes = whole_lines(bytes);
    data = map(bytes);
    n = data != NULL ? bytes / sizeof *data : 0;
  }
  static volatile double sink;
  if (data != NULL) {  /* pages resident, caches and TLB as in a long run */
    touch(data, n);
    sink = sweep(data, 0, n, kind);
  }
  if (ready != NULL) ready(arg);  /* in every case: others may wait in it */
  if (data == NULL) return -1.0;
  double runs[kPasses];
  for (int pass = 0; pass < kPasses; ++pass) {
    const double t0 = now_seconds();
    sink = sweep(data, 0, n, kind);
    runs[pass] = (now_seconds() - t0) * 1e9 / (double)bytes;
  }
  (void)sink;
  munmap(data, bytes);
  qsort(runs, kPasses, sizeof *runs, by_value);
  return runs[kPasses / 2];
}

/* The calling thread's CPU time: a pass of a few ms on a shared core is often preempted, a
 * 0.1 ms burst seldom, and the wait for a core is no price of memory. */
static double thread_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double pskel_stream_probe_ratio(void (*ready)(void *arg), void *arg) {
  enum { kRounds = 16 };
  const size_t probe_bytes = PSKEL_STREAM_PROBE_SET_BYTES;
  double *probe = set != NULL ? map(probe_bytes) : NULL;
  static volatile double sink;
  if (probe != NULL) {  /* resident */
    touch(probe, probe_bytes / sizeof *probe);
    sink = sweep(probe, 0, probe_bytes / sizeof *probe, set_kind);
  }
  if (ready != NULL) ready(arg);
  if (probe == NULL) return -1.0;
  /* A pass as long as a skeleton's gap streams in a memory-bound program (spmv: ~100 MB), at
   * least past the last-level caches of today's nodes. */
  const uint64_t pass = set_bytes < ((uint64_t)32 << 20) ? set_bytes : ((uint64_t)32 << 20);
  const size_t burst = PSKEL_STREAM_PROBE_BYTES / sizeof *probe;
  const size_t probe_n = probe_bytes / sizeof *probe;
  double passes[kRounds], bursts[kRounds];
  size_t at = 0;
  for (int round = 0; round < kRounds; ++round) {
    const double t0 = thread_seconds();
    sink = pskel_stream(pass);
    const double t1 = thread_seconds();
    sink = sweep(probe, at, at + burst, set_kind);
    bursts[round] = (thread_seconds() - t1) / (double)PSKEL_STREAM_PROBE_BYTES;
    passes[round] = (t1 - t0) / (double)pass;
    at = (at + burst) % probe_n;
  }
  (void)sink;
  munmap(probe, probe_bytes);
  qsort(passes, kRounds, sizeof *passes, by_value);
  qsort(bursts, kRounds, sizeof *bursts, by_value);
  const double pass_price = passes[kRounds / 2], probe_price = bursts[kRounds / 2];
  return pass_price > 0.0 && probe_price > 0.0 ? pass_price / probe_price : -1.0;
}
