// Longest common extensions forward and backward against direct comparison, for every pair of
// positions of small strings and random pairs of longer ones.
#include <vector>

#include <doctest/doctest.h>

#include "compress/lce.h"
#include "compress_test_support.h"

using namespace pskel::test;
using cz::index_t;

namespace {

index_t naive_forward(const std::vector<uint32_t>& t, index_t i, index_t j) {
  const auto n = static_cast<index_t>(t.size());
  index_t l = 0;
  while (i + l < n && j + l < n && t[i + l] == t[j + l]) ++l;
  return l;
}

index_t naive_backward(const std::vector<uint32_t>& t, index_t i, index_t j) {
  index_t l = 0;
  while (i - l > 0 && j - l > 0 && t[i - l - 1] == t[j - l - 1]) ++l;
  return l;
}

}  // namespace

TEST_CASE("LCE forward and backward equal direct comparison for every pair") {
  Random rng(11);
  cz::Lce lce;  // reused: a build must not depend on the previous one
  for (const uint32_t alphabet : {1u, 2u, 3u, 10u}) {
    for (int trial = 0; trial < 250; ++trial) {
      const std::vector<uint32_t> text = random_text(rng, rng.below(40), alphabet);
      const auto n = static_cast<index_t>(text.size());
      lce.build(text, alphabet);
      for (index_t i = 0; i <= n; ++i) {
        for (index_t j = 0; j <= n; ++j) {
          CAPTURE(i);
          CAPTURE(j);
          REQUIRE(lce.forward(i, j) == naive_forward(text, i, j));
          REQUIRE(lce.backward(i, j) == naive_backward(text, i, j));
        }
      }
    }
  }
}

TEST_CASE("LCE on long periodic strings with long matches") {
  Random rng(12);
  std::vector<uint32_t> text;
  for (int i = 0; i < 2000; ++i) text.insert(text.end(), {0, 1, 0, 2, 0, 1});
  for (int i = 0; i < 500; ++i) text[rng.below(text.size())] = 3;  // break the period here and there
  const auto n = static_cast<index_t>(text.size());
  cz::Lce lce;
  lce.build(text, 4);
  for (int q = 0; q < 20000; ++q) {
    const auto i = static_cast<index_t>(rng.below(n + 1));
    const index_t j = q % 2 ? static_cast<index_t>(rng.below(n + 1)) : std::min(n, i + 6 * (q % 9));
    CAPTURE(i);
    CAPTURE(j);
    REQUIRE(lce.forward(i, j) == naive_forward(text, i, j));
    REQUIRE(lce.backward(i, j) == naive_backward(text, i, j));
  }
}
