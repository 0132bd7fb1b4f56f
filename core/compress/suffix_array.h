// Suffix arrays over integer alphabets in linear time, and their LCP arrays: the base of the
// longest-common-extension queries that find loops (seed 000 §3.1, Algorithm 3). Pure
// functions over caller-owned arrays; thread-compatible, no shared state.
#pragma once

#include <cstdint>
#include <span>

namespace pskel::compress {

// Positions and lengths inside one string. 32 bits halve the memory of every array at the
// sizes pskel sees (10^7 symbols). The limit leaves headroom so that position + period never
// overflows; a string that long would not fit the memory target anyway.
using index_t = int32_t;
inline constexpr index_t kMaxTextLength = index_t{1} << 30;

// SA-IS: Nong, Zhang, Chan, "Two Efficient Algorithms for Linear Time Suffix Array
// Construction", IEEE Trans. Computers 60(10), 2011. Linear in n + alphabet_size.
//
// text [0..n-1]   symbols, each < alphabet_size; not modified.
// sa   [0..n-1]   output: the start positions of text's suffixes in increasing lexicographic
//                 order; a suffix that is a prefix of another sorts first.
// REQUIRES: sa.size() == text.size() <= kMaxTextLength; alphabet_size >= 1 unless n == 0.
// Temporary memory: n bits and 2 (alphabet_size + 1) words, and as much again (at most) for
// each level of recursion, on strings at most half as long; the reduced strings live in `sa`.
void build_suffix_array(std::span<const uint32_t> text, uint32_t alphabet_size,
                        std::span<index_t> sa);

// The inverse of `sa` and its LCP array, with the Φ algorithm (Kärkkäinen, Manzini, Puglisi,
// "Permuted Longest-Common-Prefix Array", CPM 2009): Kasai's result with sequential text
// access, and no memory beyond the two outputs.
//
// text [0..n-1]   the string `sa` was built from.
// sa   [0..n-1]   its suffix array.
// rank [0..n-1]   output: rank[sa[r]] == r. Used as scratch before it is written.
// lcp  [0..n-1]   output: lcp[0] == 0; lcp[r] = length of the longest common prefix of the
//                 suffixes starting at sa[r-1] and sa[r].
// REQUIRES: all four spans have the same size.
void build_rank_and_lcp(std::span<const uint32_t> text, std::span<const index_t> sa,
                        std::span<index_t> rank, std::span<index_t> lcp);

}  // namespace pskel::compress
