// Levels of detail for drawing a lane of millions of calls: at a zoom where one pixel spans
// `bucket_ns`, the calls shorter than that which start in the same bucket are drawn as one box
// "N calls" (docs/timeline.md, "Aggregation"). The page picks, per lane, the coarsest level whose
// bucket is at most one pixel, so it never draws more than about two boxes per pixel.
// Pure functions; thread-compatible.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "timeline/timeline.h"

namespace pskel::timeline {

// Consecutive calls [first, first + count) of a lane. A box of count 1 is the call itself.
struct Box {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  uint32_t first = 0;
  uint32_t count = 0;
  State state = State::setup;   // the state of most of the time inside the calls
};

// Partitions `calls` (in time order) into boxes: a call at least `bucket_ns` long stays alone;
// a run of shorter calls that start in the same bucket [k·bucket_ns, (k+1)·bucket_ns) becomes
// one box. REQUIRES: bucket_ns > 0.
std::vector<Box> aggregate(std::span<const Call> calls, int64_t bucket_ns);

struct Level {
  int64_t bucket_ns = 0;
  std::vector<Box> boxes;
};

// The coarser levels of one lane, finest first: buckets of kFinestBucketNs·4^k up to the
// lane's span. A level is kept only if it has at most 3/4 of the boxes of the previous one kept
// (or of the calls): one that merges little would only make the page larger.
inline constexpr int64_t kFinestBucketNs = 1000;
std::vector<Level> detail_levels(std::span<const Call> calls, int64_t span_ns);

}  // namespace pskel::timeline
