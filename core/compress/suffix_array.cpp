// SA-IS and the Φ LCP construction (suffix_array.h). The passes follow the paper: classify the
// suffixes, sort the LMS substrings by induction, name them, sort the reduced string (by
// recursion while names repeat), then induce the whole order from the sorted LMS suffixes.
#include "compress/suffix_array.h"

#include <algorithm>
#include <vector>

namespace pskel::compress {
namespace {

constexpr index_t kEmpty = -1;

// Bit i set: suffix i is S-type (smaller than the suffix after it), else L-type. A virtual
// sentinel smaller than every symbol ends the text, so the last suffix is L-type; it never has
// to be stored, which keeps the alphabet and the arrays exactly n long. Bits, not bytes: the
// induction passes read them in suffix order, at random, and n bits stay in cache.
class SuffixTypes {
 public:
  SuffixTypes(const uint32_t* text, index_t n) : words_((static_cast<size_t>(n) + 63) / 64) {
    bool next_is_s = false;
    for (index_t i = n - 2; i >= 0; --i) {
      next_is_s = text[i] < text[i + 1] || (text[i] == text[i + 1] && next_is_s);
      if (next_is_s) words_[static_cast<size_t>(i) / 64] |= uint64_t{1} << (i % 64);
    }
  }
  bool is_s(index_t i) const { return (words_[static_cast<size_t>(i) / 64] >> (i % 64)) & 1; }
  // Leftmost S-type: the suffixes whose order the reduced problem decides.
  bool is_lms(index_t i) const { return i > 0 && is_s(i) && !is_s(i - 1); }

 private:
  std::vector<uint64_t> words_;
};

// start[c] = how many symbols are smaller than c, so bucket c is sa[start[c] .. start[c+1]).
std::vector<index_t> bucket_starts(const uint32_t* text, index_t n, uint32_t k) {
  std::vector<index_t> start(size_t{k} + 1, 0);
  for (index_t i = 0; i < n; ++i) ++start[text[i] + 1];
  for (uint32_t c = 0; c < k; ++c) start[c + 1] += start[c];
  return start;
}

// tail[c] = the end of bucket c, where its next suffix placed from the right goes.
void reset_to_bucket_tails(const std::vector<index_t>& start, std::vector<index_t>& tail) {
  std::copy(start.begin() + 1, start.end(), tail.begin());
}

// Left-to-right pass: each sorted suffix puts its L-type predecessor at the head of that
// symbol's bucket. The suffix n-1 follows the virtual sentinel, which sorts first.
void induce_l_suffixes(const uint32_t* text, const SuffixTypes& types, index_t* sa, index_t n,
                       const std::vector<index_t>& start, std::vector<index_t>& head) {
  std::copy(start.begin(), start.end() - 1, head.begin());
  sa[head[text[n - 1]]++] = n - 1;
  for (index_t r = 0; r < n; ++r) {
    const index_t j = sa[r] - 1;
    if (j >= 0 && !types.is_s(j)) sa[head[text[j]]++] = j;
  }
}

// Right-to-left pass: the same for S-type predecessors, from the bucket tails. It overwrites
// the LMS seeds, which it places again in their final order.
void induce_s_suffixes(const uint32_t* text, const SuffixTypes& types, index_t* sa, index_t n,
                       const std::vector<index_t>& start, std::vector<index_t>& tail) {
  reset_to_bucket_tails(start, tail);
  for (index_t r = n - 1; r >= 0; --r) {
    const index_t j = sa[r] - 1;
    if (j >= 0 && types.is_s(j)) sa[--tail[text[j]]] = j;
  }
}

// Whether the LMS substrings at a and b (up to and including the next LMS position) are equal.
// The one that reaches the sentinel is unique, as the sentinel is.
bool equal_lms_substrings(const uint32_t* text, const SuffixTypes& types, index_t n, index_t a,
                          index_t b) {
  for (index_t d = 0;; ++d) {
    if (a + d == n || b + d == n) return false;
    if (text[a + d] != text[b + d] || types.is_s(a + d) != types.is_s(b + d)) return false;
    // Types agree up to here, so b + d is an LMS position exactly when a + d is.
    if (d > 0 && types.is_lms(a + d)) return true;
  }
}

// Names the sorted LMS substrings sa[0..n1) (equal substrings, equal names) and writes the
// reduced string, the names in text order, to sa[n - n1 .. n). Returns how many names there
// are. LMS positions are at least 2 apart, so n1 <= n / 2 and p / 2 indexes sa[n1..n) while
// the names are collected.
index_t name_lms_substrings(const uint32_t* text, const SuffixTypes& types, index_t* sa,
                            index_t n, index_t n1) {
  index_t* name_at = sa + n1;
  std::fill(name_at, sa + n, kEmpty);
  index_t names = 0;
  for (index_t r = 0; r < n1; ++r) {
    if (r == 0 || !equal_lms_substrings(text, types, n, sa[r - 1], sa[r])) ++names;
    name_at[sa[r] / 2] = names - 1;
  }
  // Moved right to left, a name never lands on one not yet moved.
  index_t to = n;
  for (index_t from = n; from-- > n1;)
    if (sa[from] != kEmpty) sa[--to] = sa[from];
  return names;
}

// The whole algorithm works inside `sa` (the reduced string and its suffix array take its two
// halves, as in the paper), so each level of the recursion allocates only its type bits and
// buckets: n bits and 2 (k + 1) words.
void sais_main(const uint32_t* text, index_t* sa, index_t n, uint32_t k) {
  if (n == 0) return;
  if (n == 1) {
    sa[0] = 0;
    return;
  }
  const SuffixTypes types(text, n);
  const std::vector<index_t> start = bucket_starts(text, n, k);
  std::vector<index_t> pointer(k);

  // Sort the LMS substrings: seed their suffixes at the bucket tails, induce.
  std::fill(sa, sa + n, kEmpty);
  reset_to_bucket_tails(start, pointer);
  for (index_t i = n - 1; i > 0; --i)
    if (types.is_lms(i)) sa[--pointer[text[i]]] = i;
  induce_l_suffixes(text, types, sa, n, start, pointer);
  induce_s_suffixes(text, types, sa, n, start, pointer);

  index_t n1 = 0;
  for (index_t r = 0; r < n; ++r)
    if (types.is_lms(sa[r])) sa[n1++] = sa[r];
  const index_t names = name_lms_substrings(text, types, sa, n, n1);

  // Sort the LMS suffixes into sa[0..n1): by recursion unless every LMS substring is unique.
  // The reduced string's symbols are names, below n1 <= INT32_MAX: an index_t holds them, and
  // reading one as uint32_t is allowed (same type but for its sign).
  auto* reduced = reinterpret_cast<uint32_t*>(sa + n - n1);
  if (names < n1) {
    sais_main(reduced, sa, n1, static_cast<uint32_t>(names));
  } else {
    for (index_t i = 0; i < n1; ++i) sa[reduced[i]] = i;
  }
  // The reduced string is read no more: its space takes the LMS positions in text order, which
  // turn the reduced suffix array's entries back into positions of the text.
  for (index_t i = 1, j = 0; i < n; ++i)
    if (types.is_lms(i)) reduced[j++] = static_cast<uint32_t>(i);
  for (index_t r = 0; r < n1; ++r) sa[r] = static_cast<index_t>(reduced[sa[r]]);

  // Seed the sorted LMS suffixes at their bucket tails, last first: the r-th lands at r or
  // later, so none is overwritten before it is moved. Then induce every other suffix.
  std::fill(sa + n1, sa + n, kEmpty);
  reset_to_bucket_tails(start, pointer);
  for (index_t r = n1; r-- > 0;) {
    const index_t position = sa[r];
    sa[r] = kEmpty;
    sa[--pointer[text[position]]] = position;
  }
  induce_l_suffixes(text, types, sa, n, start, pointer);
  induce_s_suffixes(text, types, sa, n, start, pointer);
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
