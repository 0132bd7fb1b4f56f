// Checks shared by the merge's unit tests: that aligning ranks that behave alike as groups
// (MergeOptions::group_alike) gives exactly what aligning them one by one gives, and that a
// merge of ranks given one at a time (merge::Merger) gives it too.
#pragma once

#include <doctest/doctest.h>

#include "merge/merge.h"
#include "trace/reader.h"

namespace pskel::test {

// REQUIREs that two merges of one trace made the same events, parts, symbols and stats
// (groups aside: one-by-one alignment makes a group of every rank).
inline void require_same_merge(const merge::MergedTrace& a, const merge::MergeStats& a_stats,
                               const merge::MergedTrace& b, const merge::MergeStats& b_stats) {
  REQUIRE(a.world_size == b.world_size);
  REQUIRE(a.events.size() == b.events.size());
  for (size_t i = 0; i < b.events.size(); ++i) {
    INFO("event " << i);
    REQUIRE(a.events[i].symbol == b.events[i].symbol);
    REQUIRE(a.events[i].function == b.events[i].function);
    REQUIRE(a.events[i].first_part == b.events[i].first_part);
    REQUIRE(a.events[i].part_count == b.events[i].part_count);
  }
  REQUIRE(a.parts.size() == b.parts.size());
  for (size_t i = 0; i < b.parts.size(); ++i) {
    INFO("part " << i);
    REQUIRE(a.parts[i].rank == b.parts[i].rank);
    REQUIRE(a.parts[i].record == b.parts[i].record);
  }
  REQUIRE(a.symbol_key == b.symbol_key);
  REQUIRE(a.replies == b.replies);
  REQUIRE(a_stats.reordered == b_stats.reordered);
  REQUIRE(a_stats.unmatched == b_stats.unmatched);
  REQUIRE(a_stats.pulled == b_stats.pulled);
  REQUIRE(a_stats.forced == b_stats.forced);
}

// Merges `set` three ways: grouped, one by one, and grouped with the ranks given to a
// merge::Merger one at a time (copies, so that each grouped member's trace is freed once its
// window is merged: under AddressSanitizer, a later read of it fails). REQUIREs the same
// result. Returns the grouped merge.
inline merge::MergedTrace merge_grouped_and_one_by_one(const trace::TraceSet& set,
                                                        merge::MergeStats* stats = nullptr,
                                                        int lookahead = 64) {
  merge::MergeStats grouped_stats, single_stats, given_stats;
  merge::MergedTrace grouped = merge::merge(set, {lookahead, true}, &grouped_stats);
  const merge::MergedTrace single = merge::merge(set, {lookahead, false}, &single_stats);
  require_same_merge(grouped, grouped_stats, single, single_stats);
  merge::Merger merger(static_cast<int>(set.ranks.size()), {lookahead, true});
  for (const trace::RankTrace& rank : set.ranks) merger.add(trace::RankTrace(rank));
  const merge::MergedTrace given = merger.finish(&given_stats);
  require_same_merge(given, given_stats, grouped, grouped_stats);
  REQUIRE(given_stats.groups == grouped_stats.groups);
  if (stats) *stats = grouped_stats;
  return grouped;
}

}  // namespace pskel::test
