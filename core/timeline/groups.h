// Large jobs on one page: the ranks summarised in groups of consecutive ranks, each a strip of
// time buckets holding the share of the group's time in each state. A page of 16,384 ranks then
// holds a few hundred strips and the per-call rows of the ranks asked for, not every call of
// every rank (docs/timeline.md, "Large jobs"). Pure functions; thread-compatible.
#pragma once

#include <cstdint>
#include <vector>

#include "timeline/timeline.h"

namespace pskel::timeline {

struct GroupSummary {
  int ranks = 0;               // ranks summarised
  int group_size = 0;          // consecutive ranks per group (the last may hold fewer)
  int groups = 0;
  int buckets = 0;             // buckets per group, of bucket_ns each from t = 0
  int64_t bucket_ns = 1;
  // [group][bucket][state], kStateCount bytes per bucket: the group's rank-time in the state
  // over its ranks × bucket_ns, in 255ths (rounded; a rank outside its [begin, end] counts in
  // no state). Computing is the time of a rank inside [begin, end] and outside its calls.
  std::vector<uint8_t> share;

  uint8_t at(int group, int bucket, State state) const {
    return share[(static_cast<size_t>(group) * static_cast<size_t>(buckets) +
                  static_cast<size_t>(bucket)) * kStateCount + static_cast<size_t>(state)];
  }
};

// Consecutive ranks per group when `ranks` are summarised in at most `max_groups` groups.
inline int group_size_for(int ranks, int max_groups) {
  return ranks <= max_groups ? 1 : (ranks + max_groups - 1) / max_groups;
}

// The groups of group_size_for(ranks, max_groups) ranks it takes to hold `ranks`.
inline int group_count(int ranks, int max_groups) {
  const int size = group_size_for(ranks, max_groups);
  return (ranks + size - 1) / size;
}

// group_count(ranks, max_groups) groups of consecutive ranks, `buckets` buckets over
// [0, end_ns]. REQUIRES: max_groups >= 1, buckets >= 1. O(calls + ranks × buckets): each
// rank's run is spread over the buckets it spans.
GroupSummary summarize_groups(const Timeline& timeline, int max_groups, int buckets);

}  // namespace pskel::timeline
