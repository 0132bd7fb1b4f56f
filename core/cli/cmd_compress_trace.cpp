// `pskel compress DIR`: reads a trace directory, merges the ranks (Algorithms 1-2), folds the
// loops (Algorithms 3-4) and prints the loop tree. A thin shell over merge, compress, looptree.
#include <fmt/format.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "util/json_text.h"
#include "compress/compress.h"
#include "looptree/looptree.h"
#include "merge/merge.h"
#include "trace/reader.h"

namespace pskel::cli {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

nlohmann::json tree_json(const std::vector<looptree::Item>& items) {
  nlohmann::json out = nlohmann::json::array();
  for (const looptree::Item& item : items) {
    if (item.is_loop()) {
      out.push_back({{"iterations", item.loop().iterations}, {"body", tree_json(item.loop().body)}});
    } else {
      out.push_back(looptree::describe(item.event()));
    }
  }
  return out;
}

}  // namespace

int compress_trace_dir(const CompressTraceArgs& args) {
  // The trace is read twice, a window of ranks at a time, so that a job's trace is never held
  // whole: the merge keeps of a rank that behaves like an earlier one a few bytes a call, and
  // the loop tree its statistics.
  std::optional<merge::Merger> merger;
  std::vector<uint64_t> records_of;  // per rank, from the first read
  double merge_seconds = 0;
  auto read = trace::read_trace_dir(args.dir, {}, [&](trace::RankTrace& rank) {
    const auto start = std::chrono::steady_clock::now();
    if (!merger) merger.emplace(rank.header.world_size);
    records_of.push_back(rank.records.size());
    merger->add(std::move(rank));
    merge_seconds += seconds_since(start);
  });
  if (!read) return fail(read.error().line());
  const size_t ranks = read.value().ranks.size();

  auto start = std::chrono::steady_clock::now();
  merge::MergeStats merge_stats;
  const merge::MergedTrace merged = merger->finish(&merge_stats);
  merge_seconds += seconds_since(start);

  start = std::chrono::steady_clock::now();
  compress::CompressStats compress_stats;
  const std::vector<merge::Symbol> symbols = merged.symbols();
  if (symbols.size() > compress::kMaxInputLength)
    return fail(fmt::format("{}: {} merged events, more than the {} loop compression takes",
                            args.dir, symbols.size(), compress::kMaxInputLength));
  const compress::Sequence folded = compress::compress(symbols, &compress_stats);
  const double compress_seconds = seconds_since(start);

  double annotate_seconds = 0;
  looptree::TreeBuilder builder(merged, folded);
  read = trace::reread_trace_dir(args.dir, records_of, [&](trace::RankTrace& rank) {
    start = std::chrono::steady_clock::now();
    builder.add(std::move(rank));
    annotate_seconds += seconds_since(start);
  });
  if (!read) return fail(read.error().line());
  start = std::chrono::steady_clock::now();
  const looptree::LoopTree tree = builder.finish();
  annotate_seconds += seconds_since(start);

  const looptree::MainLoop main = looptree::main_loop(tree);
  const uint64_t compressed = looptree::compressed_length(tree);
  if (args.json) {
    nlohmann::json main_json = nullptr;
    if (main.loop != nullptr)
      main_json = {{"body_length", main.events_per_iteration},
                   {"iterations", main.loop->iterations},
                   {"executions", main.loop->executions}};
    nlohmann::json out = {
        {"trace_dir", args.dir},
        {"ranks", ranks},
        {"merged_events", merged.events.size()},
        {"symbols", merged.symbol_key.size()},
        {"compressed_length", compressed},
        {"main_loop", main_json},
        {"merge_seconds", merge_seconds},
        {"merge_groups", merge_stats.groups},
        {"compress_seconds", compress_seconds},
        {"annotate_seconds", annotate_seconds},
        {"rounds", compress_stats.rounds},
    };
    if (args.show) out["tree"] = tree_json(tree.items);
    fmt::print("{}\n", json_text(out, 2));
    return 0;
  }
  if (args.show) {
    fmt::print("{}\n", looptree::to_string(tree));
    return 0;
  }
  fmt::print("trace              {}\n", args.dir);
  fmt::print("ranks              {}\n", ranks);
  fmt::print("merged events      {} ({} distinct)\n", merged.events.size(), merged.symbol_key.size());
  fmt::print("compressed length  {}\n", compressed);
  if (main.loop != nullptr)
    fmt::print("main loop          {} iterations of {} events\n", main.loop->iterations,
               main.events_per_iteration);
  fmt::print("merge              {:.3f} s ({} {} of ranks that behave alike)\n", merge_seconds,
             merge_stats.groups, merge_stats.groups == 1 ? "group" : "groups");
  fmt::print("compress           {:.3f} s ({} rounds)\n", compress_seconds, compress_stats.rounds);
  return 0;
}

}  // namespace pskel::cli
