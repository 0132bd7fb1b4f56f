// Longest common extensions in constant time (seed 000 §3.1-3.2): how far two positions of a
// string match forward (suffix array + LCP + range minimum) and backward (the same over the
// reversed string). Linear space throughout, so that 10^7 symbols fit in well under 1 GB.
// Thread-compatible: const queries may run concurrently; build() may not.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "compress/suffix_array.h"
#include "util/buffers.h"

namespace pskel::compress {

// Arrays written whole before they are read: not zeroed when they grow.
template <typename T>
using WrittenArray = std::vector<T, util::DefaultInitAllocator<T>>;

// Range minimum queries in O(1) over an array it does not own, with about 1.1 words per
// element instead of a sparse table's log n: blocks of 32 values, a sparse table over the
// block minima, and per position a bit mask of the increasing stack of its block (the
// positions that are the minimum of some range ending there), so that the minimum of a range
// inside one block is the first stack entry at or after the range's start.
class RangeMin {
 public:
  RangeMin() = default;
  RangeMin(const RangeMin&) = delete;
  RangeMin& operator=(const RangeMin&) = delete;

  // REQUIRES: `values` outlives this object's queries and does not change until rebuilt.
  void build(std::span<const index_t> values);
  // min(values[lo..hi]). REQUIRES: lo <= hi < values.size().
  index_t min(index_t lo, index_t hi) const;

 private:
  static constexpr int kBlockBits = 5;
  static constexpr index_t kBlock = index_t{1} << kBlockBits;

  index_t in_block(index_t lo, index_t hi) const;

  const index_t* values_ = nullptr;
  WrittenArray<uint32_t> stack_mask_;     // [0..n)
  std::vector<index_t> block_min_;        // [level * blocks + b]: min of blocks b..b+2^level-1
  index_t blocks_ = 0;
};

// Common-prefix lengths of the suffixes of one string.
class SuffixLcp {
 public:
  SuffixLcp() = default;
  SuffixLcp(const SuffixLcp&) = delete;
  SuffixLcp& operator=(const SuffixLcp&) = delete;

  // sa: scratch of text.size() entries (receives text's suffix array).
  // REQUIRES: every text[i] < alphabet_size; text.size() <= kMaxTextLength.
  void build(std::span<const uint32_t> text, uint32_t alphabet_size, WrittenArray<index_t>& sa);
  // Length of the longest common prefix of text[i..] and text[j..]. REQUIRES: i, j <= n.
  index_t common_prefix(index_t i, index_t j) const;

 private:
  index_t n_ = 0;
  WrittenArray<index_t> rank_;
  WrittenArray<index_t> lcp_;
  RangeMin min_;
};

// Forward and backward extensions of one string.
class Lce {
 public:
  Lce() = default;
  Lce(const Lce&) = delete;
  Lce& operator=(const Lce&) = delete;

  // Keeps its arrays' capacity between builds. REQUIRES as SuffixLcp::build.
  void build(std::span<const uint32_t> text, uint32_t alphabet_size);

  // Longest l with text[i..i+l) == text[j..j+l). REQUIRES: i, j <= n.
  index_t forward(index_t i, index_t j) const { return forward_.common_prefix(i, j); }
  // Longest l with text[i-l..i) == text[j-l..j). REQUIRES: i, j <= n.
  index_t backward(index_t i, index_t j) const { return backward_.common_prefix(n_ - i, n_ - j); }

 private:
  index_t n_ = 0;
  SuffixLcp forward_;
  SuffixLcp backward_;
  std::vector<uint32_t> reversed_;  // scratch
  WrittenArray<index_t> sa_;        // scratch
};

}  // namespace pskel::compress
