// Open addressing with linear probing over ids (sequence_table.h). The table is kept at most
// half full; the stored hashes make growing cheap and most mismatches one comparison.
#include "compress/sequence_table.h"

#include <algorithm>

namespace pskel::compress {
namespace {

uint64_t hash_of(std::span<const uint32_t> seq) {
  uint64_t h = 0x9E3779B97F4A7C15ULL ^ seq.size();
  for (const uint32_t x : seq) {
    h = (h ^ x) * 0xFF51AFD7ED558CCDULL;
    h ^= h >> 32;
  }
  return h;
}

}  // namespace

SequenceTable::Entry SequenceTable::intern(std::span<const uint32_t> seq) {
  if (2 * (hash_.size() + 1) > slots_.size()) grow();
  const uint64_t h = hash_of(seq);
  const size_t mask = slots_.size() - 1;
  for (size_t at = h & mask;; at = (at + 1) & mask) {
    if (slots_[at] == 0) {
      const uint32_t id = size();
      slots_[at] = id + 1;
      hash_.push_back(h);
      pool_.insert(pool_.end(), seq.begin(), seq.end());
      begin_.push_back(pool_.size());
      return {id, true};
    }
    const uint32_t id = slots_[at] - 1;
    if (hash_[id] == h && std::ranges::equal((*this)[id], seq)) return {id, false};
  }
}

void SequenceTable::grow() {
  slots_.assign(std::max<size_t>(16, 2 * slots_.size()), 0);
  const size_t mask = slots_.size() - 1;
  for (uint32_t id = 0; id < size(); ++id) {
    size_t at = hash_[id] & mask;
    while (slots_[at] != 0) at = (at + 1) & mask;
    slots_[at] = id + 1;
  }
}

}  // namespace pskel::compress
