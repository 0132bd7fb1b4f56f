#include "trace/gaps.h"

#include <algorithm>
#include <limits>

namespace pskel::trace {

LostTimeCurve::LostTimeCurve(std::span<const RunDelayPoint> run_delay,
                             std::span<const ProbePoint> probes) {
  delay_.reserve(run_delay.size());
  for (const RunDelayPoint& p : run_delay) {
    if (p.delay_ns < 0) continue;  // the sampler could not read it
    if (!delay_.empty() && p.t_ns < delay_.back().t_ns) continue;
    // A counter never goes back; if it seems to, keep the larger value (no negative delays).
    const int64_t delay = delay_.empty() ? p.delay_ns : std::max(p.delay_ns, delay_.back().delay_ns);
    delay_.push_back({p.t_ns, delay});
  }
  int64_t sum = 0;
  for (const ProbePoint& p : probes) {
    if (p.ns <= 0 || (!probe_t_.empty() && p.t_ns < probe_t_.back())) continue;
    sum += p.ns;
    probe_t_.push_back(p.t_ns);
    probe_sum_.push_back(sum);
  }
}

int64_t LostTimeCurve::run_delay_at(int64_t t_ns) const {
  if (delay_.empty()) return 0;
  if (t_ns <= delay_.front().t_ns) return delay_.front().delay_ns;
  if (t_ns >= delay_.back().t_ns) return delay_.back().delay_ns;
  const auto after = std::upper_bound(delay_.begin(), delay_.end(), t_ns,
                                      [](int64_t t, const RunDelayPoint& p) { return t < p.t_ns; });
  const RunDelayPoint& b = *after;
  const RunDelayPoint& a = *(after - 1);
  const double span = static_cast<double>(b.t_ns - a.t_ns);
  if (span <= 0) return b.delay_ns;
  const double share = static_cast<double>(t_ns - a.t_ns) / span;
  return a.delay_ns + static_cast<int64_t>(share * static_cast<double>(b.delay_ns - a.delay_ns));
}

int64_t LostTimeCurve::at(int64_t t_ns) const {
  // Probes that started before t_ns: one at a call's end belongs to the gap after it.
  const auto started = std::lower_bound(probe_t_.begin(), probe_t_.end(), t_ns) - probe_t_.begin();
  return run_delay_at(t_ns) + (started > 0 ? probe_sum_[static_cast<size_t>(started - 1)] : 0);
}

int64_t LostTimeCurve::between(int64_t from_ns, int64_t to_ns) const {
  if (to_ns <= from_ns) return 0;
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
  return compute_gaps(rank, LostTimeCurve(rank));
}

std::vector<int64_t> compute_gaps(const RankTrace& rank, const LostTimeCurve& lost) {
  std::vector<int64_t> gaps(rank.records.size(), 0);
  int64_t previous_end = 0;
  for (size_t i = 0; i < rank.records.size(); ++i) {
    const Record& r = rank.records[i];
    const FunctionInfo* info = find_function(r.function);
    if (info == nullptr || info->kind == FunctionKind::meta) continue;
    const int64_t traced = clamped_difference(r.t_start, previous_end);
    if (traced > 0) gaps[i] = std::max<int64_t>(0, traced - lost.between(previous_end, r.t_start));
    previous_end = std::max(previous_end, r.t_end);
  }
  return gaps;
}

double run_delay_fraction(const RankTrace& rank) {
  const LostTimeCurve delay(rank.run_delay, {});
  const int64_t end = delay.last_run_delay_t_ns();
  if (end <= 0) return 0;
  return static_cast<double>(delay.between(0, end)) / static_cast<double>(end);
}

}  // namespace pskel::trace
