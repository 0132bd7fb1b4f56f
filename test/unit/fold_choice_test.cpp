// The marking step of Algorithm 4: longest first, leftmost on ties, overlaps skipped, and
// where the folded copies of a run with symbols left over start.
#include <vector>

#include <doctest/doctest.h>

#include "compress/fold_choice.h"
#include "compress_test_support.h"

using namespace pskel::test;

namespace {

std::vector<cz::Fold> choose(std::vector<cz::Run> runs, cz::index_t n) {
  cz::FoldChooser chooser;
  std::vector<cz::Fold> folds;
  chooser.choose(runs, n, folds);
  return folds;
}

}  // namespace

TEST_CASE("the longest run wins; runs overlapping it are skipped; disjoint ones are kept") {
  // [0,12) p3 (12 long), [10,16) p2 overlaps it, [20,24) p1 is apart.
  CHECK(choose({{10, 6, 2}, {0, 12, 3}, {20, 4, 1}}, 30) ==
        std::vector<cz::Fold>{{0, 3, 4}, {20, 1, 4}});
}

TEST_CASE("on equal lengths the leftmost run wins") {
  CHECK(choose({{4, 6, 2}, {0, 6, 3}}, 12) == std::vector<cz::Fold>{{0, 3, 2}});
}

TEST_CASE("a run inside a longer chosen one is skipped even if it touches neither end's run") {
  CHECK(choose({{0, 20, 10}, {5, 4, 2}}, 20) == std::vector<cz::Fold>{{0, 10, 2}});
}

TEST_CASE("symbols left over go after the copies unless another start cuts fewer runs") {
  // (ABC)^3 A alone: the seed's choice, copies first.
  CHECK(choose({{0, 10, 3}}, 10) == std::vector<cz::Fold>{{0, 3, 3}});
  // Run [94, 800) p7 leaves 6 over; the run [0, 100) p2 ends at 100: start the copies there.
  CHECK(choose({{94, 706, 7}, {0, 100, 2}}, 800) == std::vector<cz::Fold>{{100, 7, 100}});
}
