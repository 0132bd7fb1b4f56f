// The first stages of every command that needs a trace's loop tree (`pskel compress DIR`,
// `pskel skeleton`): the trace directory read a window of ranks at a time into the merge, the
// merged events folded into loops, and the directory read again into the loop tree. The trace
// is never held whole: of each rank, its header and samples are kept.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compress/compress.h"
#include "looptree/looptree.h"
#include "merge/merge.h"
#include "trace/reader.h"
#include "util/result.h"

namespace pskel::cli {

struct TraceLoops {
  trace::TraceSet trace;              // meta, and per rank its header and samples; no records
  std::vector<uint64_t> records_of;   // per rank, its record count, for a further reread
  merge::MergedTrace merged;
  merge::MergeStats merge_stats;
  compress::CompressStats compress_stats;
  looptree::LoopTree tree;
  double merge_seconds = 0, compress_seconds = 0, tree_seconds = 0;   // reading not included
};

enum class TraceLoopsPhase { kReadAndMerge, kLoopCompression, kLoopTree };
// "read trace and merge", "loop compression", "loop tree": for progress lines.
std::string_view phase_name(TraceLoopsPhase phase);

struct TraceLoopsHooks {
  // Given the first read's result (its ranks given to the merge, which is not yet finished);
  // an Error returned stops there.
  // Without it, a read that failed is the error as it is.
  std::function<std::optional<Error>(const Result<trace::TraceSet>&)> check_read;
  // As each stage begins, with what the stages before it made.
  std::function<void(TraceLoopsPhase phase, const TraceLoops& so_far)> phase;
  std::function<void(const trace::RankTrace&)> rank_read;   // each rank, on each read
};

// Errors: the first read's (or check_read's), more merged events than loop compression takes,
// a rank whose record count changed between the reads.
Result<TraceLoops> trace_loops(const std::string& dir, const TraceLoopsHooks& hooks = {});

}  // namespace pskel::cli
