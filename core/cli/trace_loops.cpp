// The merge, loop compression and loop tree of a trace directory, read twice (trace_loops.h).
#include "trace_loops.h"

#include <fmt/format.h>

#include <chrono>
#include <utility>

namespace pskel::cli {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

Result<TraceLoops> trace_loops(const std::string& dir, const TraceLoopsHooks& hooks) {
  TraceLoops out;
  const auto phase = [&](std::string_view name) {
    if (hooks.phase) hooks.phase(name, out);
  };
  const auto rank_read = [&](const trace::RankTrace& rank) {
    if (hooks.rank_read) hooks.rank_read(rank);
  };

  phase("read trace and merge");
  std::optional<merge::Merger> merger;
  uint64_t records = 0;
  auto read = trace::read_trace_dir(dir, {}, [&](trace::RankTrace& rank) {
    records += rank.records.size();
    if (records >= merge::kMaxRecords) {   // checked here, where the directory is known
      rank.drop_records();
      return;
    }
    const auto start = std::chrono::steady_clock::now();
    if (!merger) merger.emplace(rank.header.world_size);
    out.records_of.push_back(rank.records.size());
    trace::RankTrace kept = rank.without_records();
    merger->add(std::move(rank));
    rank = std::move(kept);
    out.merge_seconds += seconds_since(start);
    rank_read(rank);
  });
  if (hooks.check_read) {
    if (std::optional<Error> refused = hooks.check_read(read)) return *refused;
  }
  if (!read) return read.error();
  if (records >= merge::kMaxRecords)
    return Error{dir, fmt::format("{} calls in all ranks together, more than the {} the merge "
                                  "takes", records, merge::kMaxRecords - 1)};
  if (!merger) return Error{dir, "the trace holds no rank"};   // read_trace_dir refuses it too
  out.trace = std::move(read).value();
  auto start = std::chrono::steady_clock::now();
  out.merged = merger->finish(&out.merge_stats);
  out.merge_seconds += seconds_since(start);

  phase("loop compression");
  start = std::chrono::steady_clock::now();
  const std::vector<merge::Symbol> symbols = out.merged.symbols();
  if (symbols.size() > compress::kMaxInputLength)
    return Error{dir, fmt::format("{} merged events, more than the {} loop compression takes",
                                  symbols.size(), compress::kMaxInputLength)};
  const compress::Sequence folded = compress::compress(symbols, &out.compress_stats);
  out.compress_seconds = seconds_since(start);

  phase("loop tree");
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
