// HandleMap (core/tracer/handle_map.h, util::FlatMap): an open-addressing map with linear
// probing and backward-shift deletion, fixed in capacity unless grown, checked against
// std::unordered_map.
#include "tracer/handle_map.h"

#include <cstdint>
#include <random>
#include <unordered_map>
#include <vector>

#include <doctest/doctest.h>

using pskel::tracer::handle_key;
using pskel::tracer::HandleMap;

namespace {

// The map's home slot for a key, mirrored here only to *choose* keys that collide or wrap
// around the end of the table; every check below holds whatever the hash is.
size_t home_slot(uint64_t key, size_t capacity) {
  key ^= key >> 33;
  key *= 0xff51afd7ed558ccdULL;
  key ^= key >> 33;
  return static_cast<size_t>(key) & (capacity - 1);
}

// Keys whose home slot is `slot`, found by search.
std::vector<uint64_t> keys_homed_at(size_t slot, size_t capacity, size_t how_many,
                                    uint64_t start = 1) {
  std::vector<uint64_t> keys;
  for (uint64_t k = start; keys.size() < how_many; ++k)
    if (home_slot(k, capacity) == slot) keys.push_back(k);
  return keys;
}

template <class V>
void check_same(const HandleMap<V>& map, const std::unordered_map<uint64_t, V>& model,
                const std::vector<uint64_t>& universe) {
  REQUIRE(map.size() == model.size());
  for (const uint64_t k : universe) {
    const V* got = map.find(k);
    const auto it = model.find(k);
    if (it == model.end()) {
      if (got != nullptr) FAIL_CHECK("key " << k << " found but was erased or never inserted");
    } else if (got == nullptr) {
      FAIL_CHECK("key " << k << " lost");
    } else if (*got != it->second) {
      FAIL_CHECK("key " << k << " maps to " << *got << ", want " << it->second);
    }
  }
}

}  // namespace

TEST_CASE("an empty HandleMap finds nothing and has size 0") {
  HandleMap<int> map(16);
  CHECK(map.size() == 0);
  CHECK(map.find(0) == nullptr);
  CHECK(map.find(12345) == nullptr);
  map.erase(12345);  // erasing an absent key is a no-op
  CHECK(map.size() == 0);
}

TEST_CASE("HandleMap finds inserted values and insert overwrites an existing key") {
  HandleMap<int> map(64);
  CHECK(map.insert(7, 70));
  CHECK(map.insert(0, 1));  // 0 is a valid key (MPICH handles can be small ints)
  CHECK(map.insert(~uint64_t{0}, 2));
  CHECK(map.size() == 3);
  REQUIRE(map.find(7) != nullptr);
  CHECK(*map.find(7) == 70);
  REQUIRE(map.find(0) != nullptr);
  CHECK(*map.find(0) == 1);
  REQUIRE(map.find(~uint64_t{0}) != nullptr);
  CHECK(*map.find(~uint64_t{0}) == 2);
  CHECK(map.find(8) == nullptr);

  CHECK(map.insert(7, 71));
  CHECK(map.size() == 3);
  REQUIRE(map.find(7) != nullptr);
  CHECK(*map.find(7) == 71);

  map.erase(7);
  CHECK(map.find(7) == nullptr);
  CHECK(map.size() == 2);
  map.erase(7);
  CHECK(map.size() == 2);
}

TEST_CASE("handle_key turns ints and pointers into distinct keys") {
  int a = 0, b = 0;
  CHECK(handle_key(&a) != handle_key(&b));
  CHECK(handle_key(&a) == reinterpret_cast<uintptr_t>(&a));
  CHECK(handle_key(int{0x44000000}) == 0x44000000u);
  CHECK(handle_key(int{5}) != handle_key(int{6}));
}

TEST_CASE("HandleMap insert refuses a new key beyond 3/4 of capacity and stores nothing") {
  HandleMap<int> map(16);  // limit 12
  for (uint64_t k = 1; k <= 12; ++k) CHECK_MESSAGE(map.insert(k * 0x1000, int(k)), "key " << k);
  CHECK(map.size() == 12);
  CHECK_FALSE(map.insert(13 * 0x1000, 13));
  CHECK(map.size() == 12);
  CHECK(map.find(13 * 0x1000) == nullptr);
  // A full map still overwrites existing keys.
  CHECK(map.insert(5 * 0x1000, 500));
  REQUIRE(map.find(5 * 0x1000) != nullptr);
  CHECK(*map.find(5 * 0x1000) == 500);
  CHECK(map.size() == 12);
  // Erasing makes room again.
  map.erase(1 * 0x1000);
  CHECK(map.insert(13 * 0x1000, 13));
  REQUIRE(map.find(13 * 0x1000) != nullptr);
  CHECK(*map.find(13 * 0x1000) == 13);
  CHECK_FALSE(map.insert(14 * 0x1000, 14));
  for (uint64_t k = 2; k <= 12; ++k) CHECK(map.find(k * 0x1000) != nullptr);
}

TEST_CASE("HandleMap of capacity 1024 accepts exactly 768 keys") {
  HandleMap<uint32_t> map(1024);
  uint64_t k = 0;
  while (map.insert(0x7f0000000000ULL + k * 64, static_cast<uint32_t>(k))) ++k;
  CHECK(k == 768);
  CHECK(map.size() == 768);
  for (uint64_t i = 0; i < k; ++i) {
    const uint32_t* v = map.find(0x7f0000000000ULL + i * 64);
    if (v == nullptr || *v != i) FAIL_CHECK("key " << i);
  }
}

TEST_CASE("erasing from a run of colliding keys keeps the others findable (backward shift)") {
  constexpr size_t kCapacity = 64;
  const auto same = keys_homed_at(10, kCapacity, 8);
  REQUIRE(same.size() == 8);
  // Every order of erasing the first, a middle and the last of the run.
  for (const size_t victim : {size_t{0}, size_t{3}, size_t{7}}) {
    HandleMap<int> map(kCapacity);
    for (size_t i = 0; i < same.size(); ++i) REQUIRE(map.insert(same[i], int(i)));
    map.erase(same[victim]);
    CHECK(map.size() == same.size() - 1);
    for (size_t i = 0; i < same.size(); ++i) {
      const int* v = map.find(same[i]);
      if (i == victim) {
        CHECK(v == nullptr);
      } else {
        REQUIRE_MESSAGE(v != nullptr, "victim " << victim << ", lost " << i);
        CHECK(*v == int(i));
      }
    }
  }
}

TEST_CASE("erasing keeps keys findable when probe runs wrap around the end of the table") {
  constexpr size_t kCapacity = 32;
  // A run homed at the last slot wraps to slots 0, 1, ...; a key homed at slot 1 sits after it.
  const auto last = keys_homed_at(kCapacity - 1, kCapacity, 4);
  const auto at0 = keys_homed_at(0, kCapacity, 2);
  const auto at1 = keys_homed_at(1, kCapacity, 1);
  std::vector<uint64_t> keys = last;
  keys.insert(keys.end(), at0.begin(), at0.end());
  keys.insert(keys.end(), at1.begin(), at1.end());

  for (size_t victim = 0; victim < keys.size(); ++victim) {
    HandleMap<int> map(kCapacity);
    std::unordered_map<uint64_t, int> model;
    for (size_t i = 0; i < keys.size(); ++i) {
      REQUIRE(map.insert(keys[i], int(i) + 100));
      model[keys[i]] = int(i) + 100;
    }
    map.erase(keys[victim]);
    model.erase(keys[victim]);
    check_same(map, model, keys);
    // And erase the rest one by one, in a rotated order.
    for (size_t j = 1; j < keys.size(); ++j) {
      const uint64_t k = keys[(victim + j) % keys.size()];
      map.erase(k);
      model.erase(k);
      check_same(map, model, keys);
    }
    CHECK(map.size() == 0);
  }
}

TEST_CASE("HandleMap matches std::unordered_map over thousands of random operations at ~70% load") {
  for (const size_t capacity : {size_t{16}, size_t{64}, size_t{1024}}) {
    CAPTURE(capacity);
    const size_t limit = capacity / 4 * 3;
    const size_t target = capacity * 7 / 10;  // hover around 70% load
    HandleMap<uint64_t> map(capacity);
    std::unordered_map<uint64_t, uint64_t> model;
    std::mt19937_64 rng(capacity * 7919 + 17);

    // Keys from a pool twice the target size: pointer-like (aligned), small ints, and keys
    // forced onto a handful of home slots so that runs are long and overlap.
    std::vector<uint64_t> universe;
    for (size_t i = 0; i < target / 2 + 1; ++i) universe.push_back(0x7ffc00001000ULL + 16 * i);
    for (size_t i = 0; i < target / 2 + 1; ++i) universe.push_back(i);
    for (size_t slot : {size_t{0}, capacity / 2, capacity - 1}) {
      const auto k = keys_homed_at(slot, capacity, target / 3 + 2, 1'000'000);
      universe.insert(universe.end(), k.begin(), k.end());
    }

    const int operations = 20000;
    for (int op = 0; op < operations; ++op) {
      const uint64_t key = universe[rng() % universe.size()];
      const bool grow = model.size() < target;
      const uint64_t dice = rng() % 100;
      if ((grow && dice < 70) || (!grow && dice < 30)) {
        const uint64_t value = rng();
        const bool present = model.count(key) != 0;
        const bool ok = map.insert(key, value);
        if (present || model.size() < limit) {
          REQUIRE_MESSAGE(ok, "op " << op << " insert refused below the limit");
          model[key] = value;
        } else {
          REQUIRE_MESSAGE(!ok, "op " << op << " insert accepted beyond the limit");
        }
      } else {
        map.erase(key);
        model.erase(key);
      }
      REQUIRE_MESSAGE(map.size() == model.size(), "op " << op);
      // Spot-check the touched key and a random one every time; everything now and then.
      for (const uint64_t k : {key, universe[rng() % universe.size()]}) {
        const uint64_t* got = map.find(k);
        const auto it = model.find(k);
        REQUIRE_MESSAGE((got == nullptr) == (it == model.end()), "op " << op << " key " << k);
        if (got) REQUIRE_MESSAGE(*got == it->second, "op " << op << " key " << k);
      }
      if (op % 997 == 0) check_same(map, model, universe);
    }
    check_same(map, model, universe);
    CHECK(model.size() > target / 2);  // the load really was high
  }
}

TEST_CASE("HandleMap filled to the limit and emptied again ends empty and reusable") {
  HandleMap<int> map(64);
  std::vector<uint64_t> keys;
  for (uint64_t k = 0; keys.size() < 48; ++k) keys.push_back(k * 8 + 3);
  for (size_t i = 0; i < keys.size(); ++i) REQUIRE(map.insert(keys[i], int(i)));
  CHECK_FALSE(map.insert(999999, 0));
  for (size_t i = 0; i < keys.size(); i += 2) map.erase(keys[i]);
  for (size_t i = 0; i < keys.size(); ++i) {
    const int* v = map.find(keys[i]);
    if (i % 2 == 0) {
      CHECK(v == nullptr);
    } else {
      REQUIRE(v != nullptr);
      CHECK(*v == int(i));
    }
  }
  for (size_t i = 1; i < keys.size(); i += 2) map.erase(keys[i]);
  CHECK(map.size() == 0);
  for (const uint64_t k : keys) CHECK(map.find(k) == nullptr);
  for (size_t i = 0; i < keys.size(); ++i) REQUIRE(map.insert(keys[i] + 1, int(i)));
  CHECK(map.size() == 48);
}

TEST_CASE("a grown map keeps every entry, doubles its capacity and takes more") {
  HandleMap<int> map(16);   // limit 12
  std::unordered_map<uint64_t, int> model;
  std::vector<uint64_t> universe;
  // Collisions and a wrap around the end, so that grow() must re-home runs, not copy slots.
  for (uint64_t k : keys_homed_at(15, 16, 6)) universe.push_back(k);
  for (uint64_t k : keys_homed_at(3, 16, 6, 1000)) universe.push_back(k);
  for (size_t i = 0; i < universe.size(); ++i) {
    REQUIRE(map.insert(universe[i], static_cast<int>(i)));
    model[universe[i]] = static_cast<int>(i);
  }
  CHECK(map.full());
  CHECK_FALSE(map.insert(99999, 1));
  map.grow();
  CHECK(map.capacity() == 32);
  CHECK_FALSE(map.full());
  check_same(map, model, universe);
  REQUIRE(map.insert(99999, 7));
  model[99999] = 7;
  universe.push_back(99999);
  map.erase(universe[0]);
  model.erase(universe[0]);
  *map.find(universe[1]) = -1;   // a found value can be changed in place
  model[universe[1]] = -1;
  check_same(map, model, universe);
}
