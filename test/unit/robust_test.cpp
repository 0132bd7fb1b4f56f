// The typical gap (looptree/robust.h): a burst in a stretch of the run is left out, the
// program's own variation (periodic gaps, trends, phases, few iterations) is kept.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "looptree/robust.h"

using pskel::looptree::robust_mean;

namespace {

std::vector<int64_t> steady(size_t n, int64_t ns) { return std::vector<int64_t>(n, ns); }

double plain(const std::vector<int64_t>& v) {
  double s = 0;
  for (int64_t x : v) s += static_cast<double>(x);
  return s / static_cast<double>(v.size());
}

}  // namespace

TEST_CASE("RobustMeanLeavesOutABurstInOneStretchOfTheRun") {
  // 400 iterations of 1 ms with a little jitter; iterations 100-119 ran 60 % slower (another
  // process on the core for 30 ms).
  std::vector<int64_t> v;
  for (int i = 0; i < 400; ++i) v.push_back(1'000'000 + (i % 7) * 2'000);
  for (int i = 100; i < 120; ++i) v[static_cast<size_t>(i)] += 600'000;
  const auto r = robust_mean(v);
  CHECK(r.plain_mean == doctest::Approx(plain(v)));
  CHECK(r.blocks == 16);
  CHECK(r.left_out >= 1);
  CHECK(r.left_out <= 2);
  CHECK(r.mean == doctest::Approx(1'006'000).epsilon(0.002));  // the undisturbed mean
  CHECK(r.mean < r.plain_mean);
}

TEST_CASE("RobustMeanLeavesOutAPreemptionOfOneIteration") {
  auto v = steady(200, 50'000);
  v[37] += 20'000'000;  // one 20 ms preemption: 3x the whole series' compute
  const auto r = robust_mean(v);
  CHECK(r.left_out == 1);
  CHECK(r.mean == doctest::Approx(50'000));
}

TEST_CASE("RobustMeanKeepsAPeriodicPattern") {
  // Every fourth iteration does ten times the work: blocks average it out.
  std::vector<int64_t> v;
  for (int i = 0; i < 400; ++i) v.push_back(i % 4 == 3 ? 1'000'000 : 100'000);
  const auto r = robust_mean(v);
  CHECK(r.left_out == 0);
  CHECK(r.mean == doctest::Approx(plain(v)));
}

TEST_CASE("RobustMeanKeepsATrendAndAPhase") {
  std::vector<int64_t> trend;
  for (int i = 0; i < 300; ++i) trend.push_back(10'000 + 1'000 * i);  // a triangular sweep
  CHECK(robust_mean(trend).left_out == 0);
  CHECK(robust_mean(trend).mean == doctest::Approx(plain(trend)));
  // The last quarter of the run is a heavier phase: many blocks deviate, so it is the program.
  auto phase = steady(400, 100'000);
  for (size_t i = 300; i < 400; ++i) phase[i] = 200'000;
  CHECK(robust_mean(phase).left_out == 0);
  CHECK(robust_mean(phase).mean == doctest::Approx(125'000));
}

TEST_CASE("RobustMeanKeepsTheJitterOfARegularSeries") {
  // Within 2 % (and a microsecond) of the median is never a burst, however regular the rest.
  auto v = steady(160, 1'000'000);
  for (size_t i = 0; i < 10; ++i) v[i] = 1'015'000;
  CHECK(robust_mean(v).left_out == 0);
  auto tiny = steady(160, 300);
  for (size_t i = 0; i < 10; ++i) tiny[i] = 1'200;  // +900 ns: below the microsecond
  CHECK(robust_mean(tiny).left_out == 0);
}

TEST_CASE("RobustMeanDoesNotJudgeFewIterations") {
  auto v = steady(15, 1'000'000);
  v[3] = 9'000'000;
  const auto r = robust_mean(v);
  CHECK(r.blocks == 0);
  CHECK(r.left_out == 0);
  CHECK(r.mean == doctest::Approx(plain(v)));
  CHECK(robust_mean(std::vector<int64_t>{}).mean == 0);
}

TEST_CASE("RobustMeanKeepsAHeavyIterationThatBlocksCutUnevenly") {
  // A heavy iteration every 24 in blocks of 25: most blocks hold one, one holds two. That block
  // lies above the others by one heavy iteration, which is the program, not a burst.
  std::vector<int64_t> v;
  for (int i = 0; i < 400; ++i) v.push_back(i % 24 == 0 ? 1'000'000 : 100'000);
  const auto r = robust_mean(v);
  CHECK(r.left_out == 0);
  CHECK(r.mean == doctest::Approx(plain(v)));
}
