// Normalisation and merge of per-rank traces (seed 000 §2.2, Algorithms 1 and 2): one merged
// sequence of events, each naming the ranks that took part and pointing at each rank's own
// record. Events are interned into integer symbols so that loop compression compares integers.
#pragma once

#include <cstdint>
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
  // Per rank, per record: ns of computation before it (its t_start minus the t_end of the
  // rank's previous MPI call in original order; pseudo-records are skipped and have gap 0).
  std::vector<std::vector<int64_t>> gap_ns;
  // Per symbol: a readable description of what the symbol stands for, e.g.
  // "MPI_Isend comm=0 peers=[+1 +1 +1 -]".
  std::vector<std::string> symbol_key;

  std::span<const Part> parts_of(const Event& e) const {
    return {parts.data() + e.first_part, e.part_count};
  }
  std::vector<Symbol> symbols() const;
};

struct MergeOptions {
  int lookahead = 64;     // Algorithm 2's m
};

struct MergeStats {
  uint64_t reordered = 0;   // records moved by Algorithm 1
  uint64_t unmatched = 0;   // times Algorithm 2 had to split ranks at a mismatch
};

// Pure: reads nothing but `trace`.
MergedTrace merge(const trace::TraceSet& trace, const MergeOptions& options = {},
                  MergeStats* stats = nullptr);

}  // namespace pskel::merge
