// SA-IS and the Φ LCP construction (suffix_array.h). The passes follow the paper: classify the
// suffixes, sort the LMS substrings by induction, name them, sort the reduced string (by
// recursion while names repeat), then induce the whole order from the sorted LMS suffixes.
#include "compress/suffix_array.h"

#include <algorithm>
#include <vector>

namespace pskel::compress {
namespace {

constexpr index_t kEmpty = -1;

// S-type (1) if a suffix is smaller than the one after it, L-type (0) otherwise. A virtual
// sentinel smaller than every symbol ends the text, so the last suffix is L-type; it never
// has to be stored, which keeps the alphabet and the arrays exactly n long.
std::vector<uint8_t> classify_suffixes(const uint32_t* text, index_t n) {
  std::vector<uint8_t> is_s(static_cast<size_t>(n));
  is_s[n - 1] = 0;
  for (index_t i = n - 2; i >= 0; --i)
    is_s[i] = text[i] < text[i + 1] || (text[i] == text[i + 1] && is_s[i + 1]);
  return is_s;
}

// Leftmost S-type: the suffixes whose order the reduced problem decides.
bool is_lms(const uint8_t* is_s, index_t i) { return i > 0 && is_s[i] && !is_s[i - 1]; }

// start[c] = how many symbols are smaller than c, so bucket c is sa[start[c] .. start[c+1]).
std::vector<index_t> bucket_starts(const uint32_t* text, index_t n, uint32_t k) {
  std::vector<index_t> start(size_t{k} + 1, 0);
  for (index_t i = 0; i < n; ++i) ++start[text[i] + 1];
  for (uint32_t c = 0; c < k; ++c) start[c + 1] += start[c];
  return start;
}

void place_at_bucket_tails(const uint32_t* text, index_t* sa, const std::vector<index_t>& start,
                           std::vector<index_t>& tail, std::span<const index_t> positions) {
  std::copy(start.begin() + 1, start.end(), tail.begin());
  for (auto it = positions.rbegin(); it != positions.rend(); ++it) sa[--tail[text[*it]]] = *it;
}

// Left-to-right pass: each sorted suffix puts its L-type predecessor at the head of that
// symbol's bucket. The suffix n-1 follows the virtual sentinel, which sorts first.
void induce_l_suffixes(const uint32_t* text, const uint8_t* is_s, index_t* sa, index_t n,
                       const std::vector<index_t>& start, std::vector<index_t>& head) {
  std::copy(start.begin(), start.end() - 1, head.begin());
  sa[head[text[n - 1]]++] = n - 1;
  for (index_t r = 0; r < n; ++r) {
    const index_t j = sa[r] - 1;
    if (j >= 0 && !is_s[j]) sa[head[text[j]]++] = j;
  }
}

// Right-to-left pass: the same for S-type predecessors, from the bucket tails. It overwrites
// the LMS seeds, which it places again in their final order.
void induce_s_suffixes(const uint32_t* text, const uint8_t* is_s, index_t* sa, index_t n,
                       const std::vector<index_t>& start, std::vector<index_t>& tail) {
  std::copy(start.begin() + 1, start.end(), tail.begin());
  for (index_t r = n - 1; r >= 0; --r) {
    const index_t j = sa[r] - 1;
    if (j >= 0 && is_s[j]) sa[--tail[text[j]]] = j;
  }
}

// Whether the LMS substrings at a and b (up to and including the next LMS position) are equal.
// The one that reaches the sentinel is unique, as the sentinel is.
bool equal_lms_substrings(const uint32_t* text, const uint8_t* is_s, index_t n, index_t a,
                          index_t b) {
  for (index_t d = 0;; ++d) {
    if (a + d == n || b + d == n) return false;
    if (text[a + d] != text[b + d] || is_s[a + d] != is_s[b + d]) return false;
    // Types agree up to here, so b + d is an LMS position exactly when a + d is.
    if (d > 0 && is_lms(is_s, a + d)) return true;
  }
}

// Names the sorted LMS substrings sa[0..n1) (equal substrings, equal names) and writes the
// reduced string: the names in text order. Returns how many names there are. Uses
// sa[n1..n) as scratch: LMS positions are at least 2 apart, so p / 2 indexes it.
index_t name_lms_substrings(const uint32_t* text, const uint8_t* is_s, index_t* sa, index_t n,
                            index_t n1, std::vector<uint32_t>& reduced) {
  index_t* name_at = sa + n1;
  std::fill(name_at, sa + n, kEmpty);
  index_t names = 0;
  for (index_t r = 0; r < n1; ++r) {
    if (r == 0 || !equal_lms_substrings(text, is_s, n, sa[r - 1], sa[r])) ++names;
    name_at[sa[r] / 2] = names - 1;
  }
  reduced.clear();
  for (index_t i = 0; i < n - n1; ++i)
    if (name_at[i] != kEmpty) reduced.push_back(static_cast<uint32_t>(name_at[i]));
  return names;
}

void sais_main(const uint32_t* text, index_t* sa, index_t n, uint32_t k) {
  if (n == 0) return;
  if (n == 1) {
    sa[0] = 0;
    return;
  }
  const std::vector<uint8_t> is_s = classify_suffixes(text, n);
  const std::vector<index_t> start = bucket_starts(text, n, k);
  std::vector<index_t> pointer(k);
  std::vector<index_t> lms;
  for (index_t i = 1; i < n; ++i)
    if (is_lms(is_s.data(), i)) lms.push_back(i);
  const auto n1 = static_cast<index_t>(lms.size());

  // Sort the LMS substrings: seed their suffixes in text order, induce.
  std::fill(sa, sa + n, kEmpty);
  place_at_bucket_tails(text, sa, start, pointer, lms);
  induce_l_suffixes(text, is_s.data(), sa, n, start, pointer);
  induce_s_suffixes(text, is_s.data(), sa, n, start, pointer);

  index_t sorted = 0;
  for (index_t r = 0; r < n; ++r)
    if (is_lms(is_s.data(), sa[r])) sa[sorted++] = sa[r];

  std::vector<uint32_t> reduced;
  reduced.reserve(lms.size());
  const index_t names = name_lms_substrings(text, is_s.data(), sa, n, n1, reduced);

  // Sort the LMS suffixes: by recursion unless every LMS substring is already unique.
  std::vector<index_t> reduced_sa(lms.size());
  if (names < n1) {
    sais_main(reduced.data(), reduced_sa.data(), n1, static_cast<uint32_t>(names));
  } else {
    for (index_t i = 0; i < n1; ++i) reduced_sa[reduced[i]] = i;
  }
  std::vector<uint32_t>().swap(reduced);
  for (index_t r = 0; r < n1; ++r) reduced_sa[r] = lms[reduced_sa[r]];
  std::vector<index_t>().swap(lms);

  // Seed the sorted LMS suffixes and induce every other suffix from them.
  std::fill(sa, sa + n, kEmpty);
  place_at_bucket_tails(text, sa, start, pointer, reduced_sa);
  induce_l_suffixes(text, is_s.data(), sa, n, start, pointer);
  induce_s_suffixes(text, is_s.data(), sa, n, start, pointer);
}

}  // namespace

void build_suffix_array(std::span<const uint32_t> text, uint32_t alphabet_size,
                        std::span<index_t> sa) {
  sais_main(text.data(), sa.data(), static_cast<index_t>(text.size()), alphabet_size);
}

void build_rank_and_lcp(std::span<const uint32_t> text, std::span<const index_t> sa,
                        std::span<index_t> rank, std::span<index_t> lcp) {
  const auto n = static_cast<index_t>(text.size());
  if (n == 0) return;
  // Φ[i]: the suffix just before suffix i in sorted order. Walking i in text order lets the
  // common prefix shrink by at most one per step, so the comparisons total O(n).
  index_t* phi = rank.data();
  phi[sa[0]] = kEmpty;
  for (index_t r = 1; r < n; ++r) phi[sa[r]] = sa[r - 1];
  index_t l = 0;
  for (index_t i = 0; i < n; ++i) {
    const index_t j = phi[i];
    if (j == kEmpty) {
      phi[i] = l = 0;
      continue;
    }
    while (i + l < n && j + l < n && text[i + l] == text[j + l]) ++l;
    phi[i] = l;  // now the permuted LCP: lcp of suffix i and its predecessor
    if (l > 0) --l;
  }
  for (index_t r = 0; r < n; ++r) lcp[r] = phi[sa[r]];
  for (index_t r = 0; r < n; ++r) rank[sa[r]] = r;
}

}  // namespace pskel::compress
