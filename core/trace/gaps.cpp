#include "trace/gaps.h"

#include <algorithm>
#include <limits>

namespace pskel::trace {

RunDelayCurve::RunDelayCurve(std::span<const RunDelayPoint> points) {
  points_.reserve(points.size());
  for (const RunDelayPoint& p : points) {
    if (p.delay_ns < 0) continue;  // the sampler could not read it
    if (!points_.empty() && p.t_ns < points_.back().t_ns) continue;
    // A counter never goes back; if it seems to, keep the larger value (no negative delays).
    const int64_t delay = points_.empty() ? p.delay_ns : std::max(p.delay_ns, points_.back().delay_ns);
    points_.push_back({p.t_ns, delay});
  }
}

int64_t RunDelayCurve::at(int64_t t_ns) const {
  if (points_.empty()) return 0;
  if (t_ns <= points_.front().t_ns) return points_.front().delay_ns;
  if (t_ns >= points_.back().t_ns) return points_.back().delay_ns;
  const auto after = std::upper_bound(points_.begin(), points_.end(), t_ns,
                                      [](int64_t t, const RunDelayPoint& p) { return t < p.t_ns; });
  const RunDelayPoint& b = *after;
  const RunDelayPoint& a = *(after - 1);
  const double span = static_cast<double>(b.t_ns - a.t_ns);
  if (span <= 0) return b.delay_ns;
  const double share = static_cast<double>(t_ns - a.t_ns) / span;
  return a.delay_ns + static_cast<int64_t>(share * static_cast<double>(b.delay_ns - a.delay_ns));
}

int64_t RunDelayCurve::between(int64_t from_ns, int64_t to_ns) const {
  if (to_ns <= from_ns || points_.empty()) return 0;
  return at(to_ns) - at(from_ns);
}

namespace {

int64_t clamped_difference(int64_t later, int64_t earlier) {
  int64_t d = 0;
  if (__builtin_sub_overflow(later, earlier, &d))
    d = later > earlier ? std::numeric_limits<int64_t>::max() : 0;
  return std::max<int64_t>(d, 0);
}

}  // namespace

std::vector<int64_t> compute_gaps(const RankTrace& rank) {
  return compute_gaps(rank, RunDelayCurve(rank.run_delay));
}

std::vector<int64_t> compute_gaps(const RankTrace& rank, const RunDelayCurve& delay) {
  std::vector<int64_t> gaps(rank.records.size(), 0);
  int64_t previous_end = 0;
  for (size_t i = 0; i < rank.records.size(); ++i) {
    const Record& r = rank.records[i];
    const FunctionInfo* info = find_function(r.function);
    if (info == nullptr || info->kind == FunctionKind::meta) continue;
    const int64_t traced = clamped_difference(r.t_start, previous_end);
    if (traced > 0) gaps[i] = std::max<int64_t>(0, traced - delay.between(previous_end, r.t_start));
    previous_end = std::max(previous_end, r.t_end);
  }
  return gaps;
}

double run_delay_fraction(const RankTrace& rank) {
  const RunDelayCurve delay(rank.run_delay);
  const int64_t end = delay.last_t_ns();
  if (end <= 0) return 0;
  return static_cast<double>(delay.between(0, end)) / static_cast<double>(end);
}

}  // namespace pskel::trace
