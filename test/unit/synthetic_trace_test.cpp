// The synthetic traces of test/bench/tracegen (synthetic_trace.h): every message sent is
// received, ranks are reproducible, and the merge sees the regular patterns as regular.
#include <cstdint>
#include <map>
#include <tuple>

#include <doctest/doctest.h>

#include "merge/merge.h"
#include "merge_checks.h"
#include "synthetic_trace.h"
#include "trace_fields.h"

using namespace pskel::test;

namespace {

tr::TraceSet synthetic_set(Pattern pattern, int32_t ranks, int64_t events) {
  tr::TraceSet set;
  set.dir = "(synthetic)";
  for (int32_t r = 0; r < ranks; ++r)
    set.ranks.push_back(synthetic_rank(pattern, r, ranks, events, 7, GapSource()));
  return set;
}

bool is_send(uint16_t f) {
  return f == static_cast<uint16_t>(Fn::MPI_Send) || f == static_cast<uint16_t>(Fn::MPI_Isend);
}
bool is_recv(uint16_t f) {
  return f == static_cast<uint16_t>(Fn::MPI_Recv) || f == static_cast<uint16_t>(Fn::MPI_Irecv);
}

}  // namespace

TEST_CASE("balanced_dims splits like MPI_Dims_create") {
  CHECK(balanced_dims(64, 3) == std::vector<int>{4, 4, 4});
  CHECK(balanced_dims(16384, 3) == std::vector<int>{32, 32, 16});
  CHECK(balanced_dims(12, 2) == std::vector<int>{4, 3});
  CHECK(balanced_dims(7, 3) == std::vector<int>{7, 1, 1});
  CHECK(balanced_dims(1, 2) == std::vector<int>{1, 1});
}

TEST_CASE("every synthetic message is received by its peer with its tag, in every pattern") {
  for (size_t p = 0; p < kPatternNames.size(); ++p) {
    const auto pattern = static_cast<Pattern>(p);
    for (int32_t ranks : {1, 2, 12, 64, 130}) {
      CAPTURE(kPatternNames[p]);
      CAPTURE(ranks);
      const tr::TraceSet set = synthetic_set(pattern, ranks, 300);
      std::map<std::tuple<int32_t, int32_t, int32_t>, int64_t> in_flight;  // (from, to, tag)
      int64_t messages = 0;
      for (const tr::RankTrace& rank : set.ranks) {
        const int32_t me = rank.header.rank;
        REQUIRE(rank.records.size() >= 2);
        CHECK(rank.records.front().function == static_cast<uint16_t>(Fn::MPI_Init));
        CHECK(rank.records.back().function == static_cast<uint16_t>(Fn::MPI_Finalize));
        int64_t last_end = 0;
        for (const tr::Record& r : rank.records) {
          CHECK(r.t_start >= last_end);  // calls of one rank do not overlap
          CHECK(r.t_end >= r.t_start);
          last_end = r.t_end;
          if (is_send(r.function) && r.peer >= 0) ++in_flight[{me, r.peer, r.tag}], ++messages;
          if (is_recv(r.function) && r.source >= 0) --in_flight[{r.source, me, r.recv_tag}];
        }
      }
      for (const auto& [key, balance] : in_flight) CHECK(balance == 0);
      if (ranks >= 12 && pattern != Pattern::transpose) CHECK(messages > 0);
    }
  }
}

TEST_CASE("a synthetic rank depends only on its arguments") {
  const auto a = synthetic_rank(Pattern::master_worker, 5, 100, 500, 3, GapSource());
  const auto b = synthetic_rank(Pattern::master_worker, 5, 100, 500, 3, GapSource());
  const auto c = synthetic_rank(Pattern::master_worker, 5, 100, 500, 4, GapSource());
  REQUIRE(a.records.size() == b.records.size());
  bool same = true, other_seed_differs = false;
  for (size_t i = 0; i < a.records.size(); ++i) {
    same = same && a.records[i] == b.records[i];
    other_seed_differs =
        other_seed_differs || i >= c.records.size() || a.records[i] != c.records[i];
  }
  CHECK(same);
  CHECK(other_seed_differs);
}

TEST_CASE("the merge sees a 3-D halo with MPI_PROC_NULL edges as one sequence every rank makes") {
  const tr::TraceSet set = synthetic_set(Pattern::halo3d, 64, 400);
  const pskel::merge::MergedTrace merged = pskel::merge::merge(set);
  CHECK(merged.events.size() == set.ranks[0].records.size());
  for (const auto& e : merged.events) CHECK(e.part_count == 64);
}

TEST_CASE("group merge: every pattern merges as its ranks one by one do, in few groups") {
  struct Case {
    Pattern pattern;
    int32_t ranks;
    uint64_t groups;
  };
  // A 3-D halo's ranks differ only by which faces of the grid they touch: 27 kinds at most
  // (3 x 2 x 2 ranks touch faces everywhere). A wavefront's 8 x 8 grid has corners, edges and an
  // interior: 9. A master's workers are alike by their offset from their master, and masters
  // are alike too where they reply to whoever reported (the last group's lone worker is not a
  // choice: its master's sends keep their peer).
  const Case cases[] = {
      {Pattern::halo3d, 1, 1},         {Pattern::halo3d, 12, 12},
      {Pattern::halo3d, 64, 27},       {Pattern::halo3d, 512, 27},
      {Pattern::halo3d_skip, 64, 27},  {Pattern::halo3d_skip, 130, 9},
      {Pattern::transpose, 64, 1},     {Pattern::wavefront, 64, 9},
      {Pattern::master_worker, 130, 66}};
  for (const Case& c : cases) {
    CAPTURE(kPatternNames[static_cast<size_t>(c.pattern)]);
    CAPTURE(c.ranks);
    const tr::TraceSet set = synthetic_set(c.pattern, c.ranks, 300);
    pskel::merge::MergeStats stats;
    merge_grouped_and_one_by_one(set, &stats);
    CHECK(stats.groups == c.groups);
  }
}
