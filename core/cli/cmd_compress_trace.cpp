// `pskel compress DIR`: reads a trace directory, merges the ranks (Algorithms 1-2), folds the
// loops (Algorithms 3-4) and prints the loop tree. A thin shell over merge, compress, looptree.
#include <fmt/format.h>

#include <chrono>
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
  auto read = trace::read_trace_dir(args.dir);
  if (!read) return fail(read.error().line());
  const trace::TraceSet& trace = read.value();

  auto start = std::chrono::steady_clock::now();
  merge::MergeStats merge_stats;
  const merge::MergedTrace merged = merge::merge(trace, {}, &merge_stats);
  const double merge_seconds = seconds_since(start);

  start = std::chrono::steady_clock::now();
  compress::CompressStats compress_stats;
  const std::vector<merge::Symbol> symbols = merged.symbols();
  if (symbols.size() > compress::kMaxInputLength)
    return fail(fmt::format("{}: {} merged events, more than the {} loop compression takes",
                            args.dir, symbols.size(), compress::kMaxInputLength));
  const compress::Sequence folded = compress::compress(symbols, &compress_stats);
  const double compress_seconds = seconds_since(start);

  start = std::chrono::steady_clock::now();
  const looptree::LoopTree tree = looptree::build(trace, merged, folded);
  const double annotate_seconds = seconds_since(start);

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
        {"ranks", trace.ranks.size()},
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
  fmt::print("ranks              {}\n", trace.ranks.size());
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
