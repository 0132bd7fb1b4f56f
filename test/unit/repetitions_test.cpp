// The run finder against the definition of a run, on random strings over small alphabets
// (where runs are many and overlap) and on strings built from known repetitions, by each of
// its two methods; on strings too long for the definition, against the runs' properties.
#include <vector>

#include <doctest/doctest.h>

#include "compress/repetitions.h"
#include "compress_test_support.h"

using namespace pskel::test;

namespace {

// By find(), and by find_terminated() on the text with its terminator, which must agree.
std::vector<cz::Run> find_runs(cz::RunFinder& finder, const std::vector<uint32_t>& text) {
  std::vector<cz::Run> runs;
  const uint32_t alphabet = text.empty() ? 1 : *std::ranges::max_element(text) + 1;
  finder.find(text, alphabet, runs);
  std::vector<uint32_t> terminated = text;
  terminated.push_back(alphabet);
  std::vector<cz::Run> runs_of_terminated;
  finder.find_terminated(terminated, alphabet, runs_of_terminated);
  REQUIRE(runs_of_terminated == runs);
  return runs;
}

using Method = cz::RunFinder::Method;

// Runs `check(finder)` with a finder of each method, and the Lyndon roots also with no budget
// for direct comparison (every long match an LCE query); each kept across the calls of one check
// as the compressor keeps its finder.
template <typename Check>
void with_each_method(Check check) {
  struct Way {
    const char* name;
    Method method;
    int64_t budget;
  };
  constexpr int64_t kWaste = cz::RunFinder::kWastePerSymbol;
  for (const Way way : {Way{"probes first", Method::kProbesFirst, kWaste},
                        Way{"Lyndon roots", Method::kLyndonRoots, kWaste},
                        Way{"Lyndon roots, LCE queries", Method::kLyndonRoots, 0}}) {
    CAPTURE(way.name);
    cz::RunFinder finder(way.method, way.budget);
    check(finder);
  }
}

}  // namespace

TEST_CASE("runs equal the naive run finder on random strings") {
  with_each_method([&](cz::RunFinder& finder) {
    Random rng(21);
    for (const uint32_t alphabet : {1u, 2u, 3u, 4u, 8u}) {
      for (int trial = 0; trial < 800; ++trial) {
        const std::vector<uint32_t> text =
            random_text(rng, rng.below(trial < 400 ? 20 : 90), alphabet);
        CAPTURE(alphabet);
        CAPTURE(text.size());
        REQUIRE(find_runs(finder, text) == naive_runs(text));
      }
    }
  });
}

TEST_CASE("runs of structured strings: nested repetitions, long runs past the direct compare") {
  with_each_method([&](cz::RunFinder& finder) {
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
  });
}

TEST_CASE("AAAAB has one run, found once with period 1 (seed §3.2's example)") {
  with_each_method([&](cz::RunFinder& finder) {
    CHECK(find_runs(finder, letters("AAAAB")) == std::vector<cz::Run>{{0, 4, 1}});
  });
}

TEST_CASE("a long run of one symbol is one run of period 1") {
  with_each_method([&](cz::RunFinder& finder) {
    CHECK(find_runs(finder, std::vector<uint32_t>(5000, 7)) ==
          std::vector<cz::Run>{{0, 5000, 1}});
  });
}

TEST_CASE("the whole of (ABC)^3 A is one run of period 3; ABC twice with a gap is none") {
  with_each_method([&](cz::RunFinder& finder) {
    CHECK(find_runs(finder, letters("ABCABCABCA")) == std::vector<cz::Run>{{0, 10, 3}});
    CHECK(find_runs(finder, letters("ABCDABC")).empty());
    CHECK(find_runs(finder, {}).empty());
    CHECK(find_runs(finder, {0}).empty());
  });
}

TEST_CASE("runs of long loop-shaped strings: long periods, long matches, runs found again") {
  // Periods and matches beyond the direct comparison, runs that are found again at multiples of
  // their period, and near-periods (the whole loop body shifted by a few symbols).
  with_each_method([&](cz::RunFinder& finder) {
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
  });
}

TEST_CASE("runs of a Fibonacci word: many overlapping runs of every period") {
  const std::vector<uint32_t> text = fibonacci_word(1500);
  with_each_method([&](cz::RunFinder& finder) {
    CHECK(find_runs(finder, text) == naive_runs(text));
  });
}

namespace {

// Each run is maximal, has its smallest period, and is listed once in (period, start) order.
void check_runs(const std::vector<uint32_t>& text, const std::vector<cz::Run>& runs) {
  const auto n = static_cast<cz::index_t>(text.size());
  for (size_t r = 0; r < runs.size(); ++r) {
    const cz::Run& run = runs[r];
    CAPTURE(run.start);
    CAPTURE(run.period);
    REQUIRE(run.start >= 0);
    REQUIRE(run.end() <= n);
    REQUIRE(run.length >= 2 * run.period);
    const auto has_period = [&](cz::index_t q) {
      return std::equal(text.begin() + run.start, text.begin() + run.end() - q,
                        text.begin() + run.start + q);
    };
    REQUIRE(has_period(run.period));
    REQUIRE((run.start == 0 || text[run.start - 1] != text[run.start - 1 + run.period]));
    REQUIRE((run.end() == n || text[run.end()] != text[run.end() - run.period]));
    for (cz::index_t q = 1; q < run.period; ++q)
      if (run.period % q == 0) REQUIRE_FALSE(has_period(q));
    if (r > 0) {
      const cz::Run& before = runs[r - 1];
      REQUIRE((before.period < run.period ||
               (before.period == run.period && before.start < run.start)));
    }
  }
}

}  // namespace

TEST_CASE("runs of long strings: loops nested three deep, a Fibonacci word, random symbols") {
  Random rng(24);
  std::vector<uint32_t> nested;
  const std::vector<uint32_t> halo = repeat({0, 1}, 4);
  while (nested.size() < 300000) {
    for (int plane = 0; plane < 40; ++plane) {
      for (uint32_t stage = 0; stage < 3; ++stage) {
        nested.insert(nested.end(), halo.begin(), halo.end());
        nested.insert(nested.end(), {2, 3 + stage});
      }
    }
    nested.push_back(6);
    if (rng.below(5) == 0) nested.push_back(7 + rng.below(3));  // a stray call now and then
  }
  const std::vector<uint32_t> fibonacci = fibonacci_word(300000);
  const std::vector<uint32_t> random = random_text(rng, 300000, 8);
  cz::RunFinder finder;
  cz::RunFinder roots(Method::kLyndonRoots);

  const std::vector<cz::Run> nested_runs = find_runs(finder, nested);
  CHECK(finder.used_lyndon_roots());
  check_runs(nested, nested_runs);
  // The halo's (0 1)^4; each iteration's 40 planes; iterations with nothing between.
  CHECK(std::ranges::count(nested_runs, 2, &cz::Run::period) > 10000);
  CHECK(std::ranges::count(nested_runs, 30, &cz::Run::period) >= 240);
  CHECK(std::ranges::count(nested_runs, 1201, &cz::Run::period) > 10);

  const std::vector<cz::Run> fibonacci_runs = find_runs(finder, fibonacci);
  CHECK(finder.used_lyndon_roots());
  check_runs(fibonacci, fibonacci_runs);
  CHECK(fibonacci_runs.size() > 100000);

  // Random symbols over 8 have no match of 16: the probes find every run themselves, and the
  // roots find the same ones.
  const std::vector<cz::Run> random_runs = find_runs(finder, random);
  CHECK_FALSE(finder.used_lyndon_roots());
  CHECK(random_runs.size() > 1000);
  CHECK(find_runs(roots, random) == random_runs);
}

TEST_CASE("matches that fail a symbol short of a run stay linear: 0^k 1 0^k, (01)^k 2 (01)^k") {
  // At each position of the first block the candidate period reaches the second block and
  // matches all but one symbol: compared directly every time, 10^12 comparisons.
  const cz::index_t k = 1000000;
  std::vector<uint32_t> zeros(static_cast<size_t>(k), 0);
  zeros.push_back(1);
  zeros.insert(zeros.end(), static_cast<size_t>(k), 0);
  std::vector<uint32_t> pairs = repeat({0, 1}, static_cast<size_t>(k) / 2);
  pairs.push_back(2);
  const std::vector<uint32_t> second = repeat({0, 1}, static_cast<size_t>(k) / 2);
  pairs.insert(pairs.end(), second.begin(), second.end());
  cz::RunFinder finder;
  CHECK(find_runs(finder, zeros) == std::vector<cz::Run>{{0, k, 1}, {k + 1, k, 1}});
  CHECK(finder.used_lyndon_roots());
  CHECK(find_runs(finder, pairs) == std::vector<cz::Run>{{0, k, 2}, {k + 1, k, 2}});
}

TEST_CASE("runs of strings of thousands equal the definition, by each method") {
  Random rng(25);
  std::vector<uint32_t> nested;
  while (nested.size() < 6000) {
    for (int plane = 0; plane < 12; ++plane) {
      nested.insert(nested.end(), {0, 1, 0, 1, 0, 1, 2});
      if (rng.below(40) == 0) nested.push_back(3);
    }
    nested.push_back(4);
  }
  std::vector<uint32_t> shifted = repeat({0}, 3000);  // 0^k 1 0^k with a loop in each half
  shifted.push_back(1);
  shifted.insert(shifted.end(), 3000, 0);
  for (size_t i = 500; i < 800; ++i) shifted[i] = i % 3 == 0 ? 2 : 0;
  for (size_t i = 4000; i < 4300; ++i) shifted[i] = i % 3 == 1 ? 2 : 0;
  const std::vector<std::vector<uint32_t>> texts = {nested, fibonacci_word(6000), shifted,
                                                    random_text(rng, 6000, 2)};
  for (const auto& text : texts) {
    CAPTURE(text.size());
    const std::vector<cz::Run> expected = naive_runs(text);
    with_each_method([&](cz::RunFinder& finder) { CHECK(find_runs(finder, text) == expected); });
  }
}
