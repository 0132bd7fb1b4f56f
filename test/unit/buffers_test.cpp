// util/buffers.h: a vector on DefaultInitAllocator keeps what is written to it like any vector;
// a ZeroedArray reads as zeros and faults in only the pages written.
#include <doctest/doctest.h>
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <utility>
#include <vector>

#include "util/buffers.h"
#include "util/sanitizers.h"

using pskel::util::DefaultInitAllocator;
using pskel::util::ZeroedArray;

TEST_CASE("DefaultInitAllocator: a vector keeps the values written, copied and given") {
  std::vector<uint32_t, DefaultInitAllocator<uint32_t>> v;
  v.resize(1000);
  for (uint32_t i = 0; i < v.size(); ++i) v[i] = 3 * i;
  v.push_back(7);
  v.resize(1100, 9);  // an explicit value is still written
  v.insert(v.begin(), 5);
  const auto copy = v;
  REQUIRE(copy.size() == 1101);
  CHECK(copy[0] == 5);
  CHECK(copy[1] == 0);
  CHECK(copy[1000] == 2997);
  CHECK(copy[1001] == 7);
  CHECK(std::all_of(copy.begin() + 1002, copy.end(), [](uint32_t x) { return x == 9; }));
  std::vector<std::pair<int, int>, DefaultInitAllocator<std::pair<int, int>>> pairs;
  pairs.emplace_back(1, 2);  // construct() with arguments forwards them
  CHECK(pairs[0] == std::pair{1, 2});
}

TEST_CASE("ZeroedArray: zeros throughout, and only the pages written are faulted in") {
  // With MALLOC_PERTURB_ set (meson test sets it), glibc's calloc clears even a fresh mapping:
  // off for this test, as it is wherever pskel runs.
  const char* perturb = std::getenv("MALLOC_PERTURB_");
  mallopt(M_PERTURB, 0);
  constexpr size_t kCount = size_t{16} << 20;  // 64 MB of uint32_t
  ZeroedArray<uint32_t> table(kCount);
  mallopt(M_PERTURB, perturb ? std::atoi(perturb) : 0);
  REQUIRE(table.size() == kCount);
  table[kCount / 2] = 42;
  CHECK(table[0] == 0);
  CHECK(table[kCount / 2 - 1] == 0);
  CHECK(table[kCount / 2] == 42);
  CHECK(table[kCount - 1] == 0);
  if (!pskel::util::sanitizer_allocator()) {  // which may clear what it hands out
    const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    const uintptr_t first = reinterpret_cast<uintptr_t>(&table[0]) / page * page;
    const uintptr_t end = reinterpret_cast<uintptr_t>(&table[kCount - 1]) + 1;
    std::vector<unsigned char> in((end - first + page - 1) / page);
    REQUIRE(::mincore(reinterpret_cast<void*>(first), end - first, in.data()) == 0);
    const auto resident =
        std::count_if(in.begin(), in.end(), [](unsigned char v) { return v & 1; });
    CHECK(resident < static_cast<std::ptrdiff_t>(in.size() / 4));
  }
  ZeroedArray<uint32_t> moved = std::move(table);
  CHECK(moved[kCount / 2] == 42);
  CHECK(moved.size() == kCount);
}
