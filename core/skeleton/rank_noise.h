// Whether the ranks' values of one quantity (a compute gap, in work units) differ by more than
// the noise of their own samples explains. A difference missed (a rank 20 % slower among
// thousands) costs little where the one value replayed is the largest rank's. Where they do not, the skeleton replays one value on
// every rank instead of a table as long as the job: tables of noise were most of a large
// job's skeleton (16,384 doubles per call site). Pure functions.
#pragma once

#include <cstdint>
#include <span>

namespace pskel::skeleton::detail {

// One rank's samples of the quantity: how many, their mean, and one sample's variance.
struct RankSample {
  uint64_t n = 0;
  double mean = 0;
  double variance = 0;
};

// The relative variance (variance / mean^2) of one sample, pooled over the repeated quantities
// given (n >= 2, mean > 0; weighted by their degrees of freedom): the noise a single sample
// carries in this trace. 0 when nothing is repeated.
double pooled_relative_variance(std::span<const RankSample> samples);

// True when the ranks' means are consistent with one common value:
// - every rank sampled twice or more: the spread of the means against the noise within the
//   ranks (one-way analysis of variance: about chi-square of k - 1 degrees of freedom where
//   noise alone separates them) within 4 of its standard deviations of what noise gives, and no
//   one rank's mean further from the others' than noise puts the furthest of k;
// - every rank sampled once: the same two tests with `noise` (pooled_relative_variance of the
//   trace) as the variance of one sample, if that is known;
// - otherwise (some ranks once and some more, or no noise known): false.
// Fewer than two ranks: true.
bool ranks_indistinct(std::span<const RankSample> samples, double noise);

}  // namespace pskel::skeleton::detail
