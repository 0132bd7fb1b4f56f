// Interning of symbol sequences: equal sequences get one dense id, in order of first
// appearance. Loop compression keys its fresh symbols on these ids, so that equal loops are
// one symbol everywhere. Thread-compatible.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace pskel::compress {

class SequenceTable {
 public:
  struct Entry {
    uint32_t id;
    bool added;  // true if `seq` was not in the table before
  };

  SequenceTable() = default;
  SequenceTable(const SequenceTable&) = delete;
  SequenceTable& operator=(const SequenceTable&) = delete;

  // The id of `seq`, adding it if it is new.
  // REQUIRES: `seq` does not point into this table (adding it may move the table's storage).
  Entry intern(std::span<const uint32_t> seq);
  // REQUIRES: id < size(). Valid until the next intern().
  std::span<const uint32_t> operator[](uint32_t id) const {
    return {pool_.data() + begin_[id], pool_.data() + begin_[id + 1]};
  }
  uint32_t size() const { return static_cast<uint32_t>(hash_.size()); }

 private:
  void grow();

  std::vector<uint32_t> pool_;        // every sequence, back to back
  std::vector<size_t> begin_ = {0};   // [id]: where sequence id starts in pool_; [size()]: end
  std::vector<uint64_t> hash_;        // [id]
  std::vector<uint32_t> slots_;       // open addressing: id + 1, or 0 if free; 2^k entries
};

}  // namespace pskel::compress
