// The compute gaps of a rank's trace: the time from the end of one MPI call to the start of the
// next, less the time the rank waited for a CPU in between (its run-queue delay, sampled by the
// tracer: docs/trace-format.md §10). On a busy node that wait is the node's other load, not the
// program; leaving it in made skeletons and replays of such traces up to 3x too slow.
// Pure functions; thread-compatible.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "trace/reader.h"

namespace pskel::trace {

// The cumulative run-queue delay of one rank at a time on its trace clock: linear between the
// samples (the delay is taken as spread evenly over each sample interval), constant before the
// first and after the last. Empty (always 0) for a trace without run-delay samples.
class RunDelayCurve {
 public:
  RunDelayCurve() = default;
  explicit RunDelayCurve(std::span<const RunDelayPoint> points);
  int64_t at(int64_t t_ns) const;
  // The delay within [from, to] (0 if to <= from).
  int64_t between(int64_t from_ns, int64_t to_ns) const;
  bool empty() const { return points_.empty(); }
  int64_t last_t_ns() const { return points_.empty() ? 0 : points_.back().t_ns; }

 private:
  std::vector<RunDelayPoint> points_;   // t and delay both non-decreasing
};

// Per record of `rank`: the compute gap before it (0 for pseudo-records and for records of
// functions the table does not know). The first call's gap runs from t = 0. Each gap is the
// traced time less the run-queue delay within it, never below 0.
std::vector<int64_t> compute_gaps(const RankTrace& rank);
// The same with the rank's delay curve already built (RunDelayCurve(rank.run_delay)).
std::vector<int64_t> compute_gaps(const RankTrace& rank, const RunDelayCurve& delay);

// The fraction of the traced time [0, last sample] the rank spent waiting for a CPU; 0 for a
// trace without run-delay samples. How much `compute_gaps` had to correct.
double run_delay_fraction(const RankTrace& rank);

}  // namespace pskel::trace
