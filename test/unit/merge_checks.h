// Checks shared by the merge's unit tests: that aligning ranks that behave alike as groups
// (MergeOptions::group_alike) gives exactly what aligning them one by one gives.
#pragma once

#include <doctest/doctest.h>

#include "merge/merge.h"
#include "trace/reader.h"

namespace pskel::test {

// Merges `set` both ways; REQUIREs the same events, parts, symbols and stats. Returns the
// grouped merge.
inline merge::MergedTrace merge_grouped_and_one_by_one(const trace::TraceSet& set,
                                                        merge::MergeStats* stats = nullptr,
                                                        int lookahead = 64) {
  merge::MergeStats grouped_stats, single_stats;
  merge::MergedTrace grouped = merge::merge(set, {lookahead, true}, &grouped_stats);
  const merge::MergedTrace single = merge::merge(set, {lookahead, false}, &single_stats);
  REQUIRE(grouped.events.size() == single.events.size());
  for (size_t i = 0; i < single.events.size(); ++i) {
    const merge::Event& a = grouped.events[i];
    const merge::Event& b = single.events[i];
    INFO("event " << i);
    REQUIRE(a.symbol == b.symbol);
    REQUIRE(a.function == b.function);
    REQUIRE(a.first_part == b.first_part);
    REQUIRE(a.part_count == b.part_count);
  }
  REQUIRE(grouped.parts.size() == single.parts.size());
  for (size_t i = 0; i < single.parts.size(); ++i) {
    INFO("part " << i);
    REQUIRE(grouped.parts[i].rank == single.parts[i].rank);
    REQUIRE(grouped.parts[i].record == single.parts[i].record);
  }
  REQUIRE(grouped.symbol_key == single.symbol_key);
  REQUIRE(grouped.gap_ns == single.gap_ns);
  REQUIRE(grouped_stats.reordered == single_stats.reordered);
  REQUIRE(grouped_stats.unmatched == single_stats.unmatched);
  REQUIRE(grouped_stats.pulled == single_stats.pulled);
  REQUIRE(grouped_stats.forced == single_stats.forced);
  if (stats) *stats = grouped_stats;
  return grouped;
}

}  // namespace pskel::test
