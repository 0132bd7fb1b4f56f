// The merge, loop compression and loop tree of a trace directory, read twice (trace_loops.h).
#include "trace_loops.h"

#include <fmt/format.h>

#include <chrono>
#include <stdexcept>
#include <utility>

namespace pskel::cli {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

std::string_view phase_name(TraceLoopsPhase phase) {
  switch (phase) {
    case TraceLoopsPhase::kReadAndMerge: return "read trace and merge";
    case TraceLoopsPhase::kLoopCompression: return "loop compression";
    case TraceLoopsPhase::kLoopTree: return "loop tree";
  }
  return "";
}

Result<TraceLoops> trace_loops(const std::string& dir, const TraceLoopsHooks& hooks) {
  TraceLoops out;
  const auto phase = [&](TraceLoopsPhase next) {
    if (hooks.phase) hooks.phase(next, out);
  };
  const auto rank_read = [&](const trace::RankTrace& rank) {
    if (hooks.rank_read) hooks.rank_read(rank);
  };

  phase(TraceLoopsPhase::kReadAndMerge);
  std::optional<merge::Merger> merger;
  const auto merge_rank = [&](trace::RankTrace& rank) {
    const auto start = std::chrono::steady_clock::now();
    if (!merger) merger.emplace(rank.header.world_size);
    out.records_of.push_back(rank.records.size());
    trace::RankTrace kept = rank.without_records();
    merger->add(std::move(rank));
    rank = std::move(kept);
    out.merge_seconds += seconds_since(start);
    rank_read(rank);
  };
  std::optional<Result<trace::TraceSet>> read;
  try {
    read.emplace(trace::read_trace_dir(dir, {}, merge_rank));
  } catch (const std::length_error& e) {   // the merge's bound on all ranks' records
    return Error{dir, e.what()};
  }
  if (hooks.check_read) {
    if (std::optional<Error> refused = hooks.check_read(*read)) return *refused;
  }
  if (!*read) return read->error();
  if (!merger) return Error{dir, "the trace holds no rank"};   // read_trace_dir refuses it too
  out.trace = std::move(*read).value();
  auto start = std::chrono::steady_clock::now();
  out.merged = merger->finish(&out.merge_stats);
  out.merge_seconds += seconds_since(start);

  phase(TraceLoopsPhase::kLoopCompression);
  start = std::chrono::steady_clock::now();
  const std::vector<merge::Symbol> symbols = out.merged.symbols();
  if (symbols.size() > compress::kMaxInputLength)
    return Error{dir, fmt::format("{} merged events, more than the {} loop compression takes",
                                  symbols.size(), compress::kMaxInputLength)};
  const compress::Sequence folded = compress::compress(symbols, &out.compress_stats);
  out.compress_seconds = seconds_since(start);

  phase(TraceLoopsPhase::kLoopTree);
  looptree::TreeBuilder builder(out.merged, folded);
  auto reread = trace::reread_trace_dir(dir, out.records_of, [&](trace::RankTrace& rank) {
    rank_read(rank);
    start = std::chrono::steady_clock::now();
    builder.add(std::move(rank));
    out.tree_seconds += seconds_since(start);
  });
  if (!reread) return reread.error();
  start = std::chrono::steady_clock::now();
  out.tree = builder.finish();
  out.tree_seconds += seconds_since(start);
  return out;
}

}  // namespace pskel::cli
