// The memory-bound part of a skeleton's compute (skeletons/stream.c): streaming continues where
// the last call stopped and wraps around, at any alignment, and the calibration calls its
// `ready` hook exactly once whatever happens, since the tracer puts a barrier there.
#include <doctest/doctest.h>

#include "stream.h"

namespace {

void count_call(void* arg) { ++*static_cast<int*>(arg); }

}  // namespace

TEST_CASE("stream, reading: each call continues where the last stopped, wrapping at the end") {
  // pskel_stream returns the sum of the doubles it read. Setup wrote 1.0 to the first double of
  // each page: doubles 0 and 512 of 1024.
  REQUIRE(pskel_stream_setup(8192, PSKEL_STREAM_READ) == 0);
  CHECK(pskel_stream(3 * sizeof(double)) == 1.0);    // doubles 0..2: the tail loop alone
  CHECK(pskel_stream(512 * sizeof(double)) == 1.0);  // 3..514, not 8-aligned: 512
  CHECK(pskel_stream(8192) == 2.0);                  // 515..1023, then 0..514
  CHECK(pskel_stream(8192) == 2.0);                  // the same: reading changed nothing
  CHECK(pskel_stream(509 * sizeof(double)) == 0.0);  // 515..1023
  CHECK(pskel_stream(0) == 0.0);
  pskel_stream_release();
  CHECK(pskel_stream(4096) == 0.0);  // no working set: nothing streamed
}

TEST_CASE("stream, reading and writing: each call continues where the last stopped, wrapping") {
  // pskel_stream returns the sum of the last value written by each piece it streamed (one piece,
  // or two when it wraps).
  REQUIRE(pskel_stream_setup(4096, PSKEL_STREAM_READ_WRITE) == 0);  // 512 doubles: 1.0, 0.0...
  // Doubles 0..2 (an odd count: the two-at-a-time loop and its tail): 1.5, 1.0, 1.0.
  CHECK(pskel_stream(3 * sizeof(double)) == doctest::Approx(1.0));
  // From double 3 (not on a 16-byte boundary) to the end (0.0 -> 1.0), then 0..2 again (1.75,
  // 1.5, 1.5): 1.0 + 1.5.
  CHECK(pskel_stream(4096) == doctest::Approx(2.5));
  // Doubles 3..7, swept once before: 1.5 each.
  CHECK(pskel_stream(5 * sizeof(double)) == doctest::Approx(1.5));
  // Doubles 8..511 (1.0 -> 1.5), then 0..7 (the last, double 7: 1.5 -> 1.75).
  CHECK(pskel_stream(4096) == doctest::Approx(1.5 + 1.75));
  CHECK(pskel_stream(0) == 0.0);
  pskel_stream_release();
  CHECK(pskel_stream(4096) == 0.0);  // no working set: nothing streamed
}

TEST_CASE("stream calibration: ready is called once, also when nothing is measured") {
  int calls = 0;
  const double ns_per_byte =
      pskel_stream_calibrate(1 << 20, PSKEL_STREAM_READ, count_call, &calls);
  CHECK(calls == 1);
  CHECK(ns_per_byte > 0.0);
  CHECK(ns_per_byte < 100.0);  // 1 MB at 100 ns a byte would be 0.1 s a pass

  calls = 0;
  // PSKEL_STREAM_PROBE_MB=0
  CHECK(pskel_stream_calibrate(0, PSKEL_STREAM_READ, count_call, &calls) == -1.0);
  CHECK(calls == 1);  // the other ranks wait in the barrier for this one

  CHECK(pskel_stream_calibrate(1 << 20, PSKEL_STREAM_READ_WRITE, nullptr, nullptr) > 0.0);
}

TEST_CASE("stream probe ratio: ready is called once; -1 without a working set") {
  int calls = 0;
  pskel_stream_release();
  CHECK(pskel_stream_probe_ratio(count_call, &calls) == -1.0);
  CHECK(calls == 1);  // a rank without a memory part still meets the others in the barrier

  calls = 0;
  REQUIRE(pskel_stream_setup(size_t{8} << 20, PSKEL_STREAM_READ) == 0);
  const double ratio = pskel_stream_probe_ratio(count_call, &calls);
  CHECK(calls == 1);
  // Both sides stream the same instructions through memory of one kind: a ratio far from 1
  // would be a measurement of something else (100x: a pass or a burst not timed as streamed).
  CHECK(ratio > 0.1);
  CHECK(ratio < 10.0);
  pskel_stream_release();
}
