// When the ranks' compute differs by no more than noise (skeleton/rank_noise.h): noise drawn
// the same way on every rank passes, a rank doing more work than the others fails, for ranks
// sampled many times, a few times and once.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "skeleton/rank_noise.h"

using pskel::skeleton::detail::pooled_relative_variance;
using pskel::skeleton::detail::RankSample;
using pskel::skeleton::detail::ranks_indistinct;

namespace {

// `ranks` ranks of `n` gaps each, log-normal around 1e5 ns (sigma 0.3, as the test programs'
// gaps), rank `slow` (if any) `factor` times longer.
std::vector<RankSample> sampled(int ranks, uint64_t n, uint32_t seed, int slow = -1,
                                double factor = 1) {
  std::mt19937_64 rng(seed);
  std::lognormal_distribution<double> gap(std::log(1e5), 0.3);
  std::vector<RankSample> out;
  for (int r = 0; r < ranks; ++r) {
    double sum = 0, squares = 0;
    for (uint64_t i = 0; i < n; ++i) {
      const double x = gap(rng) * (r == slow ? factor : 1);
      sum += x;
      squares += x * x;
    }
    const double mean = sum / static_cast<double>(n);
    const double variance =
        n > 1 ? (squares - static_cast<double>(n) * mean * mean) / static_cast<double>(n - 1) : 0;
    out.push_back(RankSample{n, mean, variance});
  }
  return out;
}

}  // namespace

TEST_CASE("RankNoiseTellsNoiseFromRanksThatDoMore") {
  const double noise = pooled_relative_variance(sampled(64, 50, 1));
  // sigma 0.3 log-normal: variance / mean^2 = exp(0.09) - 1.
  CHECK(noise == doctest::Approx(std::exp(0.09) - 1).epsilon(0.1));

  int many = 0, few = 0, once = 0, two = 0;
  for (uint32_t seed = 0; seed < 20; ++seed) {
    many += ranks_indistinct(sampled(1024, 60, seed), noise);
    few += ranks_indistinct(sampled(512, 5, seed + 100), noise);
    once += ranks_indistinct(sampled(16384, 1, seed + 200), noise);
    two += ranks_indistinct(sampled(2, 5, seed + 300), noise);
  }
  CHECK(many == 20);
  CHECK(few == 20);
  CHECK(once == 20);
  CHECK(two == 20);

  // One rank of many doing 50 % more (60 samples), 3 times more (5 samples), 10 times (once).
  CHECK_FALSE(ranks_indistinct(sampled(1024, 60, 7, 3, 1.5), noise));
  CHECK_FALSE(ranks_indistinct(sampled(512, 5, 7, 100, 3), noise));
  CHECK_FALSE(ranks_indistinct(sampled(1024, 1, 7, 0, 10), noise));
  // A master and its workers: half the ranks at twice the other half's work.
  std::vector<RankSample> halves = sampled(64, 1, 9);
  for (size_t r = 0; r < halves.size(); r += 2) halves[r].mean *= 2;
  CHECK_FALSE(ranks_indistinct(halves, noise));
}

TEST_CASE("RankNoiseNeedsSomethingToJudgeBy") {
  // Once-sampled ranks with no noise known, and a mix of once and many, are not judged alike.
  CHECK_FALSE(ranks_indistinct(sampled(16, 1, 3), 0));
  std::vector<RankSample> mixed = sampled(16, 10, 4);
  mixed[3].n = 1;
  CHECK_FALSE(ranks_indistinct(mixed, 0.1));
  // Identical samples: alike only where the means are the same too.
  std::vector<RankSample> exact(8, RankSample{10, 5.0, 0});
  CHECK(ranks_indistinct(exact, 0));
  exact[2].mean = 5.001;
  CHECK_FALSE(ranks_indistinct(exact, 0));
  // One rank, or none: nothing to tell apart.
  CHECK(ranks_indistinct(sampled(1, 1, 5), 0));
  CHECK(ranks_indistinct({}, 0));
  CHECK(pooled_relative_variance(sampled(8, 1, 6)) == 0);  // nothing repeated
}
