// Normalisation and merge of per-rank traces (seed 000 §2.2, Algorithms 1 and 2): one merged
// sequence of events, each naming the ranks that took part and pointing at each rank's own
// record. Events are interned into integer symbols so that loop compression compares integers.
// Pure functions over a TraceSet; thread-compatible (no shared state).
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "trace/reader.h"
#include "util/result.h"

namespace pskel::merge {

using Symbol = uint32_t;

// One rank's part in a merged event: its record in the TraceSet (index into
// TraceSet::ranks[rank].records, in the rank's original order).
struct Part {
  int32_t rank;
  uint32_t record;
};

struct Event {
  Symbol symbol;          // equal symbols <=> same call shape (see MergedTrace::symbol_key)
  uint16_t function;      // trace::FunctionId
  uint32_t first_part;    // parts[first_part, first_part + part_count), ascending rank
  uint32_t part_count;
};

struct MergedTrace {
  int world_size = 0;
  std::vector<Event> events;
  std::vector<Part> parts;
  // Per symbol: a readable description of what the symbol stands for, e.g.
  // "MPI_Isend comm=0 peers=[+1 +1 +1 -]".
  std::vector<std::string> symbol_key;
  // Per rank, ascending: its records that are replies (reply_records), whose peer in the
  // symbol key is "the source of the rank's last wildcard receive", not a rank.
  std::vector<std::vector<uint32_t>> replies;

  std::span<const Part> parts_of(const Event& e) const {
    return {parts.data() + e.first_part, e.part_count};
  }
  std::vector<Symbol> symbols() const;
  bool is_reply(int32_t rank, uint32_t record) const {
    if (rank < 0 || static_cast<size_t>(rank) >= replies.size()) return false;
    const std::vector<uint32_t>& r = replies[static_cast<size_t>(rank)];
    return std::binary_search(r.begin(), r.end(), record);
  }
};

struct MergeOptions {
  int lookahead = 64;     // Algorithm 2's m (negative values count as 0)
  // Align ranks that make the same calls with the same relative peers as one group. The
  // result is the same either way; false aligns rank by rank (for tests and benchmarks).
  bool group_alike = true;
};

struct MergeStats {
  uint64_t reordered = 0;   // records moved by Algorithm 1
  uint64_t unmatched = 0;   // times Algorithm 2 had to split ranks at a mismatch, or held a
                            // rank back from an event whose function it was at but whose
                            // peers were another statement's (align.cpp: strays)
  uint64_t pulled = 0;      // records Algorithm 2 moved forward within their round to join an
                            // event (order differences Algorithm 1 left)
  uint64_t forced = 0;      // mismatches whose chosen call was split from a rank that has a call
                            // of its shape within the look-ahead and could not pull it (in
                            // periodic code mostly the same statement of its next iteration)
  uint64_t groups = 0;      // groups of ranks that behave alike, each aligned as one (the rank
                            // count when MergeOptions::group_alike is false)
};

// All ranks' records together must be fewer than this: parts number them in 32 bits.
inline constexpr uint64_t kMaxRecords = std::numeric_limits<uint32_t>::max();

// Pure: reads nothing but `trace`. Events: every record whose function is not of kind meta,
// each in exactly one event. Event order: Algorithm 2 (core/merge/align.cpp) over each rank's
// records in normalized_order(), except calls it pulls forward within their round; parts keep
// their original record index, so a rank's call order is recoverable. When the busiest rank's
// calls are a supersequence of every other rank's (ranks differ only by skipping calls, or by
// orders Algorithm 1 removes), there are exactly as many events as the busiest rank has calls.
// Symbol key: function, comm id, participating ranks and per participant its peers relative to
// its rank (PROC_NULL, MPI_ANY_SOURCE, replies and untranslatable ranks as markers; a Start has the
// peers of the call that created its request), root, op, in-place flag, and the request count
// of Waitall/Testall/Startall; never counts, bytes, tags, times or request ids. `stats` may be
// null; it is overwritten.
// REQUIRES: fewer than kMaxRecords records in all ranks together (else throws
// std::length_error).
// O(n·L) when ranks agree, O(m·n·L) at worst (n ranks, L records on the busiest, m look-ahead);
// with group_alike, n in the alignment's cost is the number of groups of alike ranks
// (MergeStats::groups), and O(n·L) remains for reading, normalising and the parts.
MergedTrace merge(const trace::TraceSet& trace, const MergeOptions& options = {},
                  MergeStats* stats = nullptr);

// merge() over ranks handed one at a time, in rank order, so that a job's trace need not be
// held whole: a rank that behaves like an earlier one (MergeStats::groups) is read only in its
// window of ranks, after which the merge keeps of it 16 bytes a call (its parts, canonical
// order and part keys), or its parts' 8 where its order and part keys are its group leader's.
// The result is merge()'s, whatever the window.
//   Merger merger(world_size);
//   read_trace_dir(dir, {}, [&](RankTrace& r) { merger.add(std::move(r)); });
//   MergedTrace merged = merger.finish(&stats);
class Merger {
 public:
  explicit Merger(int world_size, const MergeOptions& options = {});
  ~Merger();
  Merger(const Merger&) = delete;
  Merger& operator=(const Merger&) = delete;

  // The next rank (0, 1, ...). Lent: `rank` must stay unchanged until finish(). Given: the
  // merger frees a grouped member's trace as soon as its window is merged, and keeps the
  // records of its groups' leaders, which the alignment reads.
  // Throws std::length_error past 2^32 records in all ranks together, std::logic_error past
  // world_size ranks.
  void add(const trace::RankTrace& rank);
  void add(trace::RankTrace&& rank);
  // REQUIRES: world_size ranks added; called once. `stats` may be null; it is overwritten.
  MergedTrace finish(MergeStats* stats = nullptr);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The records of `rank` that reply to its last wildcard receive (core/merge/replies.cpp): the
// first k sends right after an MPI_Recv with MPI_ANY_SOURCE that go to the source it resolved
// to, on its communicator, k the same for every request answered but at most one, the replies
// most of the sends of their shape and reaching more than one rank. Ascending. O(records).
std::vector<uint32_t> reply_records(const trace::RankTrace& rank);

// Algorithm 1 alone: indices of `rank`'s event records (pseudo-records left out) in the
// canonical order merge() uses (core/merge/normalize.cpp documents it). `moved` (may be null)
// receives how many records are not at their call-order position.
std::vector<uint32_t> normalized_order(const trace::RankTrace& rank, uint64_t* moved = nullptr);

}  // namespace pskel::merge
