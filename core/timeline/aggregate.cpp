#include "timeline/aggregate.h"

#include <algorithm>
#include <array>
#include <limits>

namespace pskel::timeline {
namespace {

State dominant_state(std::span<const Call> run) {
  std::array<int64_t, kStateCount> time{};
  for (const Call& c : run) time[static_cast<size_t>(c.state)] += c.duration();
  // Ties go to the later state in the enum: waiting outranks the others it ties with.
  size_t best = 0;
  for (size_t s = 1; s < time.size(); ++s)
    if (time[s] >= time[best]) best = s;
  return static_cast<State>(best);
}

int64_t bucket_of(int64_t t, int64_t bucket_ns) {
  // Floor division: times before the earliest t = 0 are negative only in hand-made traces.
  return t >= 0 ? t / bucket_ns : -((-t + bucket_ns - 1) / bucket_ns);
}

}  // namespace

std::vector<Box> aggregate(std::span<const Call> calls, int64_t bucket_ns) {
  std::vector<Box> boxes;
  size_t i = 0;
  while (i < calls.size()) {
    const Call& c = calls[i];
    size_t j = i + 1;
    int64_t end = c.end_ns;
    if (c.duration() < bucket_ns) {
      const int64_t bucket = bucket_of(c.start_ns, bucket_ns);
      while (j < calls.size() && calls[j].duration() < bucket_ns &&
             bucket_of(calls[j].start_ns, bucket_ns) == bucket) {
        end = std::max(end, calls[j].end_ns);
        ++j;
      }
    }
    const auto run = calls.subspan(i, j - i);
    boxes.push_back(Box{c.start_ns, end, static_cast<uint32_t>(i), static_cast<uint32_t>(j - i),
                        run.size() == 1 ? c.state : dominant_state(run)});
    i = j;
  }
  return boxes;
}

std::vector<Level> detail_levels(std::span<const Call> calls, int64_t span_ns) {
  std::vector<Level> levels;
  size_t previous = calls.size();
  for (int64_t bucket = kFinestBucketNs; previous > 1; bucket *= 4) {
    std::vector<Box> boxes = aggregate(calls, bucket);
    if (boxes.size() * 4 <= previous * 3) {
      previous = boxes.size();
      levels.push_back(Level{bucket, std::move(boxes)});
    }
    // The second test keeps `bucket *= 4` from overflowing (and the loop from never ending)
    // whatever span a trace claims.
    if (bucket > span_ns || bucket > std::numeric_limits<int64_t>::max() / 4) break;
  }
  return levels;
}

}  // namespace pskel::timeline
