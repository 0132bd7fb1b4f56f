#include "timeline/groups.h"

#include <algorithm>
#include <cmath>

namespace pskel::timeline {

namespace {

// Adds the part of [from, to) in each bucket to row[bucket][state], clipped to the buckets.
void spread(std::vector<double>& row, int buckets, int64_t bucket_ns, int64_t from, int64_t to,
            State state, double sign) {
  from = std::max<int64_t>(from, 0);
  to = std::min<int64_t>(to, bucket_ns * buckets);
  for (int64_t t = from; t < to;) {
    const int64_t b = t / bucket_ns;
    const int64_t edge = std::min(to, (b + 1) * bucket_ns);
    row[static_cast<size_t>(b) * kStateCount + static_cast<size_t>(state)] +=
        sign * static_cast<double>(edge - t);
    t = edge;
  }
}

}  // namespace

GroupSummary summarize_groups(const Timeline& timeline, int max_groups, int buckets) {
  GroupSummary g;
  g.ranks = static_cast<int>(timeline.lanes.size());
  g.buckets = buckets;
  g.group_size = group_size_for(g.ranks, max_groups);
  g.groups = group_count(g.ranks, max_groups);
  g.bucket_ns = std::max<int64_t>(1, (timeline.end_ns + buckets - 1) / buckets);
  g.share.assign(static_cast<size_t>(g.groups) * static_cast<size_t>(buckets) * kStateCount, 0);
  std::vector<double> row(static_cast<size_t>(buckets) * kStateCount);
  for (int group = 0; group < g.groups; ++group) {
    std::fill(row.begin(), row.end(), 0.0);
    const int first = group * g.group_size;
    const int last = std::min(g.ranks, first + g.group_size);
    for (int r = first; r < last; ++r) {
      const Lane& lane = timeline.lanes[static_cast<size_t>(r)];
      // The whole [begin, end] as computing, then each call moved from computing to its state.
      spread(row, buckets, g.bucket_ns, lane.begin_ns, lane.end_ns, State::computing, 1);
      for (const Call& c : lane.calls) {
        const int64_t from = std::max(c.start_ns, lane.begin_ns);
        const int64_t to = std::min(c.end_ns, lane.end_ns);
        if (to <= from) continue;
        spread(row, buckets, g.bucket_ns, from, to, c.state, 1);
        spread(row, buckets, g.bucket_ns, from, to, State::computing, -1);
      }
    }
    const double whole = static_cast<double>(last - first) * static_cast<double>(g.bucket_ns);
    uint8_t* out = g.share.data() + static_cast<size_t>(group) * row.size();
    for (size_t i = 0; i < row.size(); ++i)
      out[i] = static_cast<uint8_t>(std::clamp(std::lround(row[i] / whole * 255), 0L, 255L));
  }
  return g;
}

}  // namespace pskel::timeline
