// The compute gaps of a rank's trace: the time from the end of one MPI call to the start of the
// next, less the time in between that was not the program's: the rank's wait for a CPU (its
// run-queue delay, sampled by the tracer: docs/trace-format.md §10) and the tracer's calibration
// probes. On a busy node that wait is the node's other load; leaving it in made skeletons and
// replays of such traces up to 3x too slow. Pure functions; thread-compatible.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "trace/reader.h"

namespace pskel::trace {

// The time one rank lost to what is not the program, cumulative at a time on its trace clock:
// its run-queue delay, linear between the samples (taken as spread evenly over each sample
// interval) and constant before the first and after the last, plus the calibration probes that
// started before that time. A probe starts at the end of the call it follows, so it falls in
// the gap after that call, never in the call. Always 0 for a trace without samples.
class LostTimeCurve {
 public:
  LostTimeCurve() = default;
  explicit LostTimeCurve(const RankTrace& rank) : LostTimeCurve(rank.run_delay, rank.probes) {}
  LostTimeCurve(std::span<const RunDelayPoint> run_delay, std::span<const ProbePoint> probes);
  int64_t at(int64_t t_ns) const;
  // The time lost within [from, to) (0 if to <= from).
  int64_t between(int64_t from_ns, int64_t to_ns) const;
  int64_t last_run_delay_t_ns() const { return delay_.empty() ? 0 : delay_.back().t_ns; }

 private:
  int64_t run_delay_at(int64_t t_ns) const;

  std::vector<RunDelayPoint> delay_;    // t and delay both non-decreasing
  std::vector<int64_t> probe_t_;        // probe start times, non-decreasing
  std::vector<int64_t> probe_sum_;      // ns of the probes up to and including each
};

// Per record of `rank`: the compute gap before it (0 for pseudo-records and for records of
// functions the table does not know). The first call's gap runs from t = 0. Each gap is the
// traced time less the time lost within it, never below 0.
std::vector<int64_t> compute_gaps(const RankTrace& rank);
// The same with the rank's curve already built (LostTimeCurve(rank)).
std::vector<int64_t> compute_gaps(const RankTrace& rank, const LostTimeCurve& lost);

// The fraction of the traced time [0, last sample] the rank spent waiting for a CPU; 0 for a
// trace without run-delay samples. Most of what `compute_gaps` had to correct (the rest, the
// probes, is the tracer's own and known).
double run_delay_fraction(const RankTrace& rank);

}  // namespace pskel::trace
