#include "skeleton/rank_noise.h"

#include <algorithm>
#include <cmath>

namespace pskel::skeleton::detail {

namespace {

// How far above its expectation a chi-square-like statistic of `df` degrees of freedom may lie
// before the ranks count as different: 4 of its standard deviations, sqrt(2 df). Noise alone
// passes it but once in tens of thousands of quantities; a rank that does real work of its own
// (a master, a boundary) fails it by far.
double chi_square_limit(double df) { return df + 4 * std::sqrt(2 * df); }

// The largest square of one rank's standardised deviation that noise alone gives among k ranks:
// about 2 ln k, with a margin. The spread of all the means cannot see one rank among
// thousands (a master, a rank with a boundary to handle); this can.
double outlier_limit(size_t k) { return 2 * std::log(static_cast<double>(k)) + 16; }

}  // namespace

double pooled_relative_variance(std::span<const RankSample> samples) {
  double weighted = 0, dof = 0;
  for (const RankSample& s : samples) {
    if (s.n < 2 || !(s.mean > 0)) continue;
    const double df = static_cast<double>(s.n - 1);
    weighted += df * s.variance / (s.mean * s.mean);
    dof += df;
  }
  return dof > 0 ? weighted / dof : 0;
}

bool ranks_indistinct(std::span<const RankSample> samples, double noise) {
  const size_t k = samples.size();
  if (k < 2) return true;
  const double df = static_cast<double>(k - 1);
  const bool repeated = std::all_of(samples.begin(), samples.end(),
                                    [](const RankSample& s) { return s.n >= 2; });
  if (repeated) {
    // One-way analysis of variance: the spread of the means against the noise within the
    // ranks, pooled (a rank's own variance from a handful of samples is too unsure a yardstick:
    // with 5 each, noise alone doubled the statistic). Where the pooled variance rests on few
    // samples the limit widens with its own uncertainty.
    double n_total = 0, sum = 0, within = 0;
    for (const RankSample& s : samples) {
      n_total += static_cast<double>(s.n);
      sum += static_cast<double>(s.n) * s.mean;
      within += static_cast<double>(s.n - 1) * s.variance;
    }
    const double common = sum / n_total;
    double between = 0;
    for (const RankSample& s : samples)
      between += static_cast<double>(s.n) * (s.mean - common) * (s.mean - common);
    const double within_df = n_total - static_cast<double>(k);
    const double pooled = within / within_df;
    if (!(pooled > 0)) return between == 0;
    const double margin = 1 + 3 * std::sqrt(2 / within_df);
    double largest = 0;
    for (const RankSample& s : samples)
      largest = std::max(largest, static_cast<double>(s.n) * (s.mean - common) *
                                      (s.mean - common) / pooled);
    return between / pooled <= chi_square_limit(df) * margin &&
           largest <= outlier_limit(k) * margin;
  }
  const bool once = std::all_of(samples.begin(), samples.end(),
                                [](const RankSample& s) { return s.n == 1; });
  if (!once || !(noise > 0)) return false;
  // One sample a rank: the gaps themselves, skewed (a few long ones; capped at 3 times the
  // median in the generated traces) where a mean of many is not. Compared as logarithms, where
  // noise of relative variance v has variance log(1 + v) (exactly so for log-normal gaps).
  if (std::any_of(samples.begin(), samples.end(), [](const RankSample& s) { return !(s.mean > 0); }))
    return false;
  double sum = 0;
  for (const RankSample& s : samples) sum += std::log(s.mean);
  const double mean = sum / static_cast<double>(k);
  double squares = 0, largest = 0;
  for (const RankSample& s : samples) {
    const double d = std::log(s.mean) - mean;
    squares += d * d;
    largest = std::max(largest, d * d);
  }
  // The noise comes from other gaps (the repeated ones), converted from relative variance: an
  // estimate a few per cent off, which thousands of ranks would read as a real difference
  // (noise alone read 5 % over it at 16,128 ranks). Real differences are far larger.
  constexpr double kNoiseSlack = 1.15;
  const double variance = std::log1p(noise) * kNoiseSlack;
  return squares / variance <= chi_square_limit(df) && largest / variance <= outlier_limit(k);
}

}  // namespace pskel::skeleton::detail
