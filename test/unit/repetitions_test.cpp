// The run finder against the definition of a run, on random strings over small alphabets
// (where runs are many and overlap) and on strings built from known repetitions.
#include <vector>

#include <doctest/doctest.h>

#include "compress/repetitions.h"
#include "compress_test_support.h"

using namespace pskel::test;

namespace {

std::vector<cz::Run> find_runs(cz::RunFinder& finder, const std::vector<uint32_t>& text) {
  std::vector<cz::Run> runs;
  const uint32_t alphabet = text.empty() ? 1 : *std::ranges::max_element(text) + 1;
  finder.find(text, alphabet, runs);
  return runs;
}

}  // namespace

TEST_CASE("runs equal the naive run finder on random strings") {
  Random rng(21);
  cz::RunFinder finder;
  for (const uint32_t alphabet : {1u, 2u, 3u, 4u, 8u}) {
    for (int trial = 0; trial < 800; ++trial) {
      const std::vector<uint32_t> text = random_text(rng, rng.below(trial < 400 ? 20 : 90), alphabet);
      CAPTURE(alphabet);
      CAPTURE(text.size());
      REQUIRE(find_runs(finder, text) == naive_runs(text));
    }
  }
}

TEST_CASE("runs of structured strings: nested repetitions, long runs past the direct compare") {
  cz::RunFinder finder;
  Random rng(22);
  for (int trial = 0; trial < 300; ++trial) {
    // (random block)^k, possibly nested once, with random symbols around.
    std::vector<uint32_t> block = random_text(rng, 1 + rng.below(6), 3);
    std::vector<uint32_t> inner = repeat(block, 1 + rng.below(5));
    inner.push_back(3);
    std::vector<uint32_t> text = random_text(rng, rng.below(5), 4);
    const std::vector<uint32_t> outer = repeat(inner, 2 + rng.below(8));
    text.insert(text.end(), outer.begin(), outer.end());
    const std::vector<uint32_t> tail = random_text(rng, rng.below(5), 4);
    text.insert(text.end(), tail.begin(), tail.end());
    CAPTURE(text.size());
    REQUIRE(find_runs(finder, text) == naive_runs(text));
  }
}

TEST_CASE("AAAAB has one run, found once with period 1 (seed §3.2's example)") {
  cz::RunFinder finder;
  CHECK(find_runs(finder, letters("AAAAB")) == std::vector<cz::Run>{{0, 4, 1}});
}

TEST_CASE("a long run of one symbol is one run of period 1") {
  cz::RunFinder finder;
  CHECK(find_runs(finder, std::vector<uint32_t>(5000, 7)) == std::vector<cz::Run>{{0, 5000, 1}});
}

TEST_CASE("the whole of (ABC)^3 A is one run of period 3; ABC twice with a gap is none") {
  cz::RunFinder finder;
  CHECK(find_runs(finder, letters("ABCABCABCA")) == std::vector<cz::Run>{{0, 10, 3}});
  CHECK(find_runs(finder, letters("ABCDABC")).empty());
  CHECK(find_runs(finder, {}).empty());
  CHECK(find_runs(finder, {0}).empty());
}

TEST_CASE("runs of long loop-shaped strings: long periods, long matches, runs found again") {
  // Periods and matches beyond the direct comparison, runs that are found again at multiples of
  // their period, and near-periods (the whole loop body shifted by a few symbols).
  cz::RunFinder finder;
  Random rng(23);
  for (int trial = 0; trial < 40; ++trial) {
    std::vector<uint32_t> body;
    for (int part = 0; part < 3; ++part) {
      const std::vector<uint32_t> block = random_text(rng, 1 + rng.below(4), 6);
      const auto loop = repeat(block, 5 + rng.below(30));
      body.insert(body.end(), loop.begin(), loop.end());
      body.push_back(6 + static_cast<uint32_t>(part));
    }
    std::vector<uint32_t> text = random_text(rng, rng.below(20), 10);
    for (int i = 0, n = 2 + static_cast<int>(rng.below(6)); i < n; ++i) {
      text.insert(text.end(), body.begin(), body.end());
      if (rng.below(3) == 0) text.push_back(rng.below(10));  // an iteration that differs
    }
    CAPTURE(text.size());
    REQUIRE(find_runs(finder, text) == naive_runs(text));
  }
}

TEST_CASE("runs of a Fibonacci word: many overlapping runs of every period") {
  const std::vector<uint32_t> text = fibonacci_word(1500);
  cz::RunFinder finder;
  CHECK(find_runs(finder, text) == naive_runs(text));
}
