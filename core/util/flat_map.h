// A hash map from 64-bit keys to small values: open addressing with linear probing and
// backward-shift deletion, a capacity fixed at construction unless grow() is called, so that a
// hot path that must not allocate (the tracer's handle tables) never does. Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

namespace pskel::util {

template <class Value>
class FlatMap {
 public:
  // REQUIRES: capacity is a power of two. insert() refuses beyond 3/4 of it.
  explicit FlatMap(size_t capacity)
      : slots_(new Slot[capacity]), mask_(capacity - 1), limit_(capacity / 4 * 3) {}
  FlatMap(FlatMap&&) = default;
  FlatMap& operator=(FlatMap&&) = default;
  FlatMap(const FlatMap&) = delete;
  FlatMap& operator=(const FlatMap&) = delete;

  // Inserts or overwrites. Returns false (and stores nothing) when the map is full.
  bool insert(uint64_t key, const Value& value) {
    size_t i = home(key);
    for (; slots_[i].used; i = (i + 1) & mask_) {
      if (slots_[i].key == key) {
        slots_[i].value = value;
        return true;
      }
    }
    if (size_ >= limit_) return false;
    slots_[i] = Slot{key, value, true};
    ++size_;
    return true;
  }

  // The value stored for key, or nullptr. The pointer is valid until the next insert, erase
  // or grow.
  const Value* find(uint64_t key) const {
    for (size_t i = home(key); slots_[i].used; i = (i + 1) & mask_)
      if (slots_[i].key == key) return &slots_[i].value;
    return nullptr;
  }
  Value* find(uint64_t key) { return const_cast<Value*>(std::as_const(*this).find(key)); }

  void erase(uint64_t key) {
    size_t i = home(key);
    while (slots_[i].used && slots_[i].key != key) i = (i + 1) & mask_;
    if (!slots_[i].used) return;
    // Backward-shift: move later entries of the probe run into the hole so that lookups
    // never need tombstones.
    for (size_t j = (i + 1) & mask_; slots_[j].used; j = (j + 1) & mask_) {
      const size_t want = home(slots_[j].key);
      const bool movable = (i <= j) ? (want <= i || want > j) : (want <= i && want > j);
      if (movable) {
        slots_[i] = slots_[j];
        i = j;
      }
    }
    slots_[i].used = false;
    --size_;
  }

  size_t size() const { return size_; }
  bool full() const { return size_ >= limit_; }
  size_t capacity() const { return mask_ + 1; }

  // Twice the capacity, every entry kept (an allocation: for users that may allocate).
  void grow() {
    FlatMap bigger(capacity() * 2);
    for (size_t i = 0; i <= mask_; ++i)
      if (slots_[i].used) bigger.insert(slots_[i].key, slots_[i].value);
    *this = std::move(bigger);
  }

 private:
  struct Slot {
    uint64_t key = 0;
    Value value{};
    bool used = false;
  };
  size_t home(uint64_t key) const {
    key ^= key >> 33;  // keys are often aligned pointers or small ints: mix before masking
    key *= 0xff51afd7ed558ccdULL;
    key ^= key >> 33;
    return static_cast<size_t>(key) & mask_;
  }

  std::unique_ptr<Slot[]> slots_;
  size_t mask_;
  size_t limit_;
  size_t size_ = 0;
};

}  // namespace pskel::util
