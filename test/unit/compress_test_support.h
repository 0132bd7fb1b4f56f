// Helpers shared by the loop-compression tests: a small seeded random generator (the same
// strings on every platform) and naive, obviously correct versions of what core/compress
// computes fast, to compare against.
#pragma once

#include <algorithm>
#include <cstdint>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <doctest/doctest.h>

#include "compress/compress.h"
#include "compress/fold_choice.h"
#include "compress/repetitions.h"

namespace doctest {
template <>
struct StringMaker<pskel::compress::Run> {
  static String convert(const pskel::compress::Run& r) {
    return ("Run{start " + std::to_string(r.start) + ", length " + std::to_string(r.length) +
            ", period " + std::to_string(r.period) + "}")
        .c_str();
  }
};
template <>
struct StringMaker<pskel::compress::Fold> {
  static String convert(const pskel::compress::Fold& f) {
    return ("Fold{start " + std::to_string(f.start) + ", period " + std::to_string(f.period) +
            ", count " + std::to_string(f.count) + "}")
        .c_str();
  }
};
}  // namespace doctest

namespace pskel::test {

namespace cz = pskel::compress;

// splitmix64: portable, unlike the standard distributions.
class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, bound). REQUIRES: bound > 0.
  uint32_t below(uint64_t bound) { return static_cast<uint32_t>(next() % bound); }

 private:
  uint64_t state_;
};

inline std::vector<uint32_t> random_text(Random& rng, size_t n, uint32_t alphabet) {
  std::vector<uint32_t> text(n);
  for (uint32_t& c : text) c = rng.below(alphabet);
  return text;
}

// "ABAB" -> {0, 1, 0, 1}: letters as symbols, for readable known cases.
inline std::vector<cz::Symbol> letters(std::string_view s) {
  std::vector<cz::Symbol> out;
  for (const char c : s)
    if (c != ' ') out.push_back(static_cast<cz::Symbol>(c - 'A'));
  return out;
}

inline std::vector<cz::Symbol> repeat(const std::vector<cz::Symbol>& body, size_t times) {
  std::vector<cz::Symbol> out;
  for (size_t i = 0; i < times; ++i) out.insert(out.end(), body.begin(), body.end());
  return out;
}

inline std::vector<cz::Symbol> concat(std::initializer_list<std::vector<cz::Symbol>> parts) {
  std::vector<cz::Symbol> out;
  for (const auto& part : parts) out.insert(out.end(), part.begin(), part.end());
  return out;
}

// The Fibonacci word's prefix of n symbols: runs of every period, overlapping everywhere.
inline std::vector<uint32_t> fibonacci_word(size_t n) {
  std::vector<uint32_t> a = {0}, b = {0, 1};
  while (b.size() < n) {
    std::vector<uint32_t> next = b;
    next.insert(next.end(), a.begin(), a.end());
    a = std::move(b);
    b = std::move(next);
  }
  b.resize(n);
  return b;
}

// Every run by definition: for each period p, the maximal stretches of positions x with
// text[x] == text[x + p] that are at least p long; each interval keeps its smallest p.
inline std::vector<cz::Run> naive_runs(std::span<const uint32_t> text) {
  const auto n = static_cast<cz::index_t>(text.size());
  std::vector<cz::Run> found;
  std::set<std::pair<cz::index_t, cz::index_t>> seen;  // (start, length)
  for (cz::index_t p = 1; 2 * p <= n; ++p) {
    for (cz::index_t a = 0; a + p < n;) {
      if (text[a] != text[a + p]) {
        ++a;
        continue;
      }
      cz::index_t b = a;
      while (b + p < n && text[b] == text[b + p]) ++b;
      if (b - a >= p && seen.insert({a, b - a + p}).second) found.push_back({a, b - a + p, p});
      a = b;
    }
  }
  return found;  // by period, then start, as RunFinder orders them
}

// The tree's guarantees, at every level: loops repeat at least twice and are not empty, and
// no two adjacent blocks of nodes are equal.
inline void check_no_tandem(const cz::Sequence& seq) {
  const size_t n = seq.size();
  for (size_t len = 1; 2 * len <= n; ++len)
    for (size_t i = 0; i + 2 * len <= n; ++i)
      REQUIRE_MESSAGE(!std::equal(seq.begin() + i, seq.begin() + i + len, seq.begin() + i + len),
                      "equal adjacent blocks of " << len << " nodes at " << i);
  for (const cz::Node& node : seq) {
    if (!node.is_loop()) continue;
    REQUIRE(node.iterations >= 2);
    REQUIRE(!node.body.empty());
    check_no_tandem(node.body);
  }
}

// Compresses `input` and checks every guarantee compress.h makes; returns the tree.
inline cz::Sequence compress_checked(const std::vector<cz::Symbol>& input) {
  const cz::Sequence tree = cz::compress(input);
  REQUIRE(cz::expand(tree) == input);
  REQUIRE(cz::expanded_length(tree) == input.size());
  REQUIRE(cz::compressed_length(tree) <= input.size());
  check_no_tandem(tree);
  return tree;
}

}  // namespace pskel::test
