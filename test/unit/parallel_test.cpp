// util::parallel_for: every item once, whatever the threads; an item's exception reaches the
// caller. util::Prefault: a buffer's pages faulted in, its bytes unchanged.
#include <doctest/doctest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <stdexcept>
#include <vector>

#include "util/parallel.h"
#include "util/prefault.h"

TEST_CASE("parallel_for: every item exactly once, each into its own slot") {
  for (size_t count : {0, 1, 2, 7, 1000}) {
    std::vector<int> hits(count, 0);
    pskel::util::parallel_for(count, [&](size_t i) { ++hits[i]; });
    for (size_t i = 0; i < count; ++i) CHECK(hits[i] == 1);
  }
}

TEST_CASE("parallel_for: an item's exception is rethrown once every thread has stopped") {
  std::atomic<int> ran{0};
  CHECK_THROWS_AS(pskel::util::parallel_for(100,
                                            [&](size_t i) {
                                              ++ran;
                                              if (i == 3) throw std::runtime_error("item 3");
                                            }),
                  std::runtime_error);
  CHECK(ran.load() >= 4);
  CHECK(ran.load() <= 100);
}

// util::Prefault: the pages of a fresh mapping are resident once it is done, what was written
// before is unchanged, and a buffer that does not start or end on a page is fine.
TEST_CASE("Prefault: faults a fresh buffer's pages in and changes nothing in it") {
  if (pskel::util::usable_cpus() < 2) return;  // it stands aside on one CPU
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t bytes = size_t{80} << 20;
  void* map = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(map != MAP_FAILED);
  auto* data = static_cast<unsigned char*>(map);
  const auto resident_pages = [&] {
    std::vector<unsigned char> in(bytes / page);
    REQUIRE(::mincore(map, bytes, in.data()) == 0);
    return std::count_if(in.begin(), in.end(), [](unsigned char v) { return v & 1; });
  };
  data[page + 5] = 42;   // one page touched before (a huge page, with THP)
  CHECK(resident_pages() < static_cast<std::ptrdiff_t>(bytes / page / 4));
  { const pskel::util::Prefault prefault(data + 100, bytes - 200); }
  CHECK(data[page + 5] == 42);
  CHECK(data[bytes / 2] == 0);
  // The first and last pages are only partly in the buffer: left alone, or faulted with THP.
  CHECK(resident_pages() >= static_cast<std::ptrdiff_t>(bytes / page - 2));
  ::munmap(map, bytes);
}
