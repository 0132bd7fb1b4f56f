// Suffix arrays (SA-IS), their rank and LCP arrays, and the range-minimum structure, against
// naive constructions on thousands of random and structured strings.
#include <algorithm>
#include <numeric>
#include <vector>

#include <doctest/doctest.h>

#include "compress/lce.h"
#include "compress/suffix_array.h"
#include "compress_test_support.h"

using namespace pskel::test;
using cz::index_t;

namespace {

std::vector<index_t> naive_suffix_array(const std::vector<uint32_t>& text) {
  std::vector<index_t> sa(text.size());
  std::iota(sa.begin(), sa.end(), 0);
  std::ranges::sort(sa, [&](index_t a, index_t b) {
    return std::lexicographical_compare(text.begin() + a, text.end(), text.begin() + b, text.end());
  });
  return sa;
}

index_t naive_common_prefix(const std::vector<uint32_t>& text, index_t a, index_t b) {
  index_t l = 0;
  const auto n = static_cast<index_t>(text.size());
  while (a + l < n && b + l < n && text[a + l] == text[b + l]) ++l;
  return l;
}

uint32_t alphabet_of(const std::vector<uint32_t>& text) {
  return text.empty() ? 1 : *std::ranges::max_element(text) + 1;
}

void check_against_naive(const std::vector<uint32_t>& text, uint32_t alphabet) {
  const size_t n = text.size();
  std::vector<index_t> sa(n), rank(n), lcp(n);
  cz::build_suffix_array(text, alphabet, sa);
  REQUIRE(sa == naive_suffix_array(text));
  cz::build_rank_and_lcp(text, sa, rank, lcp);
  for (size_t r = 0; r < n; ++r) {
    REQUIRE(rank[sa[r]] == static_cast<index_t>(r));
    REQUIRE(lcp[r] == (r == 0 ? 0 : naive_common_prefix(text, sa[r - 1], sa[r])));
  }
}

}  // namespace

TEST_CASE("suffix array, rank and LCP equal the naive ones on random strings") {
  Random rng(1);
  for (const uint32_t alphabet : {1u, 2u, 3u, 4u, 7u, 26u, 300u}) {
    for (int trial = 0; trial < 600; ++trial) {
      const size_t n = rng.below(trial < 300 ? 24 : 400);
      const std::vector<uint32_t> text = random_text(rng, n, alphabet);
      CAPTURE(alphabet);
      CAPTURE(n);
      check_against_naive(text, alphabet);
    }
  }
}

TEST_CASE("suffix array handles an alphabet larger than the symbols used") {
  Random rng(2);
  std::vector<uint32_t> text = random_text(rng, 200, 5);
  for (uint32_t& c : text) c *= 1000;  // sparse symbols in a large alphabet
  check_against_naive(text, 5000);
}

TEST_CASE("suffix array of periodic, Fibonacci and all-equal strings") {
  std::vector<std::vector<uint32_t>> texts;
  texts.push_back(std::vector<uint32_t>(500, 0));
  texts.push_back({0});
  texts.push_back({});
  texts.push_back({1, 0});
  texts.push_back(fibonacci_word(1000));
  std::vector<uint32_t> periodic;
  for (int i = 0; i < 300; ++i) periodic.insert(periodic.end(), {2, 0, 1, 0, 1, 0});
  texts.push_back(periodic);
  std::vector<uint32_t> descending(300);
  for (size_t i = 0; i < descending.size(); ++i) descending[i] = static_cast<uint32_t>(300 - i);
  texts.push_back(descending);
  for (const auto& text : texts) {
    CAPTURE(text.size());
    check_against_naive(text, alphabet_of(text));
  }
}

TEST_CASE("suffix array of a long random string is sorted, and LCP matches") {
  Random rng(3);
  for (const uint32_t alphabet : {2u, 40u, 70000u}) {
    const std::vector<uint32_t> text = random_text(rng, 70000, alphabet);
    const size_t n = text.size();
    std::vector<index_t> sa(n), rank(n), lcp(n);
    cz::build_suffix_array(text, alphabet, sa);
    cz::build_rank_and_lcp(text, sa, rank, lcp);
    std::vector<bool> seen(n);
    for (size_t r = 0; r < n; ++r) {
      REQUIRE(!seen[sa[r]]);
      seen[sa[r]] = true;
      if (r == 0) continue;
      const index_t l = naive_common_prefix(text, sa[r - 1], sa[r]);
      REQUIRE(lcp[r] == l);
      // The first difference orders the pair; a suffix that ends first is smaller.
      const size_t a = sa[r - 1] + l, b = sa[r] + l;
      REQUIRE((a == n || (b != n && text[a] < text[b])));
    }
  }
}

TEST_CASE("range minimum equals a scan, across block boundaries") {
  Random rng(4);
  for (const size_t n : {1, 2, 31, 32, 33, 63, 64, 65, 97, 200, 1000}) {
    for (int trial = 0; trial < 5; ++trial) {
      std::vector<index_t> values(n);
      const uint32_t range = trial == 0 ? 1 : trial == 1 ? 3 : 1000;
      for (index_t& v : values) v = static_cast<index_t>(rng.below(range));
      if (trial == 4) std::ranges::sort(values, std::greater<>());  // every value on the stack
      cz::RangeMin rmq;
      rmq.build(values);
      for (size_t lo = 0; lo < n; lo += (n > 200 ? 7 : 1)) {
        index_t expected = values[lo];
        for (size_t hi = lo; hi < n; ++hi) {
          expected = std::min(expected, values[hi]);
          CAPTURE(n);
          CAPTURE(lo);
          CAPTURE(hi);
          REQUIRE(rmq.min(static_cast<index_t>(lo), static_cast<index_t>(hi)) == expected);
        }
      }
    }
  }
}
