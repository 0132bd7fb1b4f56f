// util::parallel_for: every item once, whatever the threads; an item's exception reaches the
// caller.
#include <doctest/doctest.h>

#include <atomic>
#include <stdexcept>
#include <vector>

#include "util/parallel.h"

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
