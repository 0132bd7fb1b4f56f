// Range minimum and longest-common-extension queries (lce.h). A query costs two rank lookups
// and at most two in-block masks and two sparse-table entries, whatever the distance.
#include "compress/lce.h"

#include <algorithm>
#include <bit>
#include <limits>

namespace pskel::compress {

void RangeMin::build(std::span<const index_t> values) {
  const auto n = static_cast<index_t>(values.size());
  values_ = values.data();
  stack_mask_.resize(values.size());
  blocks_ = (n + kBlock - 1) / kBlock;
  const int levels = blocks_ == 0 ? 0 : std::bit_width(static_cast<uint32_t>(blocks_));
  block_min_.resize(static_cast<size_t>(levels) * static_cast<size_t>(blocks_));

  for (index_t b = 0; b < blocks_; ++b) {
    const index_t base = b * kBlock;
    const index_t end = std::min(n, base + kBlock);
    uint32_t stack = 0;  // bit i: position base+i is on the increasing stack
    index_t low = std::numeric_limits<index_t>::max();
    for (index_t i = base; i < end; ++i) {
      const index_t v = values_[i];
      while (stack != 0 && values_[base + std::bit_width(stack) - 1] >= v)
        stack &= ~(uint32_t{1} << (std::bit_width(stack) - 1));
      stack |= uint32_t{1} << (i - base);
      stack_mask_[i] = stack;
      low = std::min(low, v);
    }
    block_min_[b] = low;
  }
  for (int level = 1; level < levels; ++level) {
    const index_t half = index_t{1} << (level - 1);
    index_t* row = block_min_.data() + static_cast<size_t>(level) * blocks_;
    const index_t* prev = row - blocks_;
    for (index_t b = 0; b + 2 * half <= blocks_; ++b) row[b] = std::min(prev[b], prev[b + half]);
  }
}

index_t RangeMin::in_block(index_t lo, index_t hi) const {
  // hi is always on its own stack, so the mask is never empty.
  const uint32_t mask = stack_mask_[hi] & (~uint32_t{0} << (lo & (kBlock - 1)));
  return values_[(hi & ~(kBlock - 1)) + std::countr_zero(mask)];
}

index_t RangeMin::min(index_t lo, index_t hi) const {
  const index_t first = lo >> kBlockBits;
  const index_t last = hi >> kBlockBits;
  if (first == last) return in_block(lo, hi);
  index_t m = std::min(in_block(lo, first * kBlock + kBlock - 1), in_block(last * kBlock, hi));
  if (last - first > 1) {
    const index_t span = last - first - 1;
    const int level = std::bit_width(static_cast<uint32_t>(span)) - 1;
    const index_t* row = block_min_.data() + static_cast<size_t>(level) * blocks_;
    m = std::min({m, row[first + 1], row[last - (index_t{1} << level)]});
  }
  return m;
}

void SuffixLcp::build(std::span<const uint32_t> text, uint32_t alphabet_size,
                      WrittenArray<index_t>& sa) {
  n_ = static_cast<index_t>(text.size());
  sa.resize(text.size());
  rank_.resize(text.size());
  lcp_.resize(text.size());
  build_suffix_array(text, alphabet_size, sa);
  build_rank_and_lcp(text, sa, rank_, lcp_);
  min_.build(lcp_);
}

index_t SuffixLcp::common_prefix(index_t i, index_t j) const {
  if (i == j) return n_ - i;
  if (i == n_ || j == n_) return 0;
  const index_t ri = rank_[i];
  const index_t rj = rank_[j];
  return ri < rj ? min_.min(ri + 1, rj) : min_.min(rj + 1, ri);
}

void Lce::build(std::span<const uint32_t> text, uint32_t alphabet_size) {
  n_ = static_cast<index_t>(text.size());
  forward_.build(text, alphabet_size, sa_);
  reversed_.assign(text.rbegin(), text.rend());
  backward_.build(reversed_, alphabet_size, sa_);
}

}  // namespace pskel::compress
