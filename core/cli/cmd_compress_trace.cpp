// `pskel compress DIR`: reads a trace directory, merges the ranks (Algorithms 1-2), folds the
// loops (Algorithms 3-4) and prints the loop tree. A thin shell over trace_loops.h.
#include <fmt/format.h>

#include <vector>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "util/json_text.h"
#include "looptree/looptree.h"
#include "trace_loops.h"

namespace pskel::cli {
namespace {

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
  auto stages = trace_loops(args.dir);
  if (!stages) return fail(stages.error().line());
  const TraceLoops& loops = stages.value();
  const size_t ranks = loops.trace.ranks.size();
  const merge::MergedTrace& merged = loops.merged;
  const looptree::LoopTree& tree = loops.tree;

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
        {"merge_seconds", loops.merge_seconds},
        {"merge_groups", loops.merge_stats.groups},
        {"compress_seconds", loops.compress_seconds},
        {"annotate_seconds", loops.tree_seconds},
        {"rounds", loops.compress_stats.rounds},
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
  fmt::print("merge              {:.3f} s ({} {} of ranks that behave alike)\n",
             loops.merge_seconds, loops.merge_stats.groups,
             loops.merge_stats.groups == 1 ? "group" : "groups");
  fmt::print("compress           {:.3f} s ({} rounds)\n", loops.compress_seconds,
             loops.compress_stats.rounds);
  return 0;
}

}  // namespace pskel::cli
