// pskel compress DIR | --symbols FILE [--json] [--show]: loop compression (seed 000 §3) of a
// trace directory, merged first (cmd_compress_trace.cpp), or of an integer string alone.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "util/json_text.h"
#include "compress/compress.h"
#include "compress/symbol_file.h"

namespace pskel::cli {
namespace {

namespace cz = pskel::compress;

// Leaves as integers, loops as {"iterations": n, "body": [...]}.
nlohmann::json tree_json(const cz::Sequence& seq) {
  nlohmann::json out = nlohmann::json::array();
  for (const cz::Node& node : seq) {
    if (node.is_loop())
      out.push_back({{"iterations", node.iterations}, {"body", tree_json(node.body)}});
    else
      out.push_back(node.symbol);
  }
  return out;
}

struct Shape {
  uint64_t loops = 0;
  int depth = 0;
};

Shape shape_of(const cz::Sequence& seq) {
  Shape shape;
  for (const cz::Node& node : seq) {
    if (!node.is_loop()) continue;
    const Shape inner = shape_of(node.body);
    shape.loops += 1 + inner.loops;
    shape.depth = std::max(shape.depth, 1 + inner.depth);
  }
  return shape;
}

int compress_symbols(const std::string& file, bool json, bool show) {
  auto read = cz::read_symbol_file(file);
  if (!read) return fail(read.error().line());
  const std::vector<cz::Symbol>& input = read.value();

  cz::CompressStats stats;
  const auto start = std::chrono::steady_clock::now();
  const cz::Sequence tree = cz::compress(input, &stats);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const uint64_t length = cz::compressed_length(tree);
  const auto name = [](cz::Symbol s) { return std::to_string(s); };

  if (json) {
    nlohmann::json out = {
        {"symbols_file", file},
        {"input_length", input.size()},
        {"compressed_length", length},
        {"compress_seconds", seconds},
        {"rounds", stats.rounds},
        {"repetitions_found", stats.repetitions_found},
        {"folds", stats.folds},
        {"tree", tree_json(tree)},
    };
    if (show) out["text"] = cz::to_string(tree, name);
    fmt::print("{}\n", json_text(out, 2));
    return 0;
  }
  const Shape shape = shape_of(tree);
  fmt::print("symbols     {}\n", file);
  fmt::print("input       {} symbols\n", input.size());
  fmt::print("compressed  {} ({:.1f}x shorter)\n", length,
             length ? static_cast<double>(input.size()) / static_cast<double>(length) : 0.0);
  fmt::print("loops       {} in the tree, nested {} deep\n", shape.loops, shape.depth);
  fmt::print("rounds      {} ({} runs found, {} folded)\n", stats.rounds, stats.repetitions_found,
             stats.folds);
  fmt::print("time        {:.3f} s\n", seconds);
  if (show) fmt::print("\n{}\n", cz::to_string(tree, name));
  return 0;
}

}  // namespace

Subcommand add_compress_command(CLI::App& app) {
  struct Options {
    std::string dir;
    std::string symbols;
    bool json = false;
    bool show = false;
  };
  auto opt = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "compress", "Fold the loops of a trace (merge + loop compression), or of an integer string");
  cmd->footer(
      "Give exactly one of DIR and --symbols, e.g.\n"
      "  pskel compress trace/ --show\n"
      "  pskel compress --symbols calls.txt --json\n"
      "The compressed length counts the events (symbols) left in the folded tree; loop markers\n"
      "are not counted.\n"
      "--json keys with DIR: merged_events, compressed_length, main_loop, merge_seconds,\n"
      "  merge_groups (groups of ranks that behave alike, aligned as one), compress_seconds.\n"
      "--json keys with --symbols: input_length, compressed_length, compress_seconds, rounds,\n"
      "  repetitions_found, folds, tree (symbols as integers, loops as\n"
      "  {\"iterations\": N, \"body\": [...]}), and text with --show.");
  CLI::Option* dir = cmd->add_option("DIR", opt->dir, "Trace directory (written by `pskel run`)");
  CLI::Option* symbols =
      cmd->add_option("--symbols", opt->symbols,
                      "Compress FILE alone: one integer in [0, 4294967295] per line, blank "
                      "lines ignored")
          ->type_name("FILE");
  dir->excludes(symbols);
  cmd->add_flag("--json", opt->json, "Print JSON (keys below)");
  cmd->add_flag("--show", opt->show,
                "Also print the loop tree as text, e.g. \"1 ( 2 3 )^10 4\" (with --json: key text)");
  cmd->parse_complete_callback([dir, symbols] {
    if (dir->count() == 0 && symbols->count() == 0)
      throw CLI::RequiredError("A trace directory DIR or --symbols FILE");
  });
  return {cmd, [opt, symbols]() {
            if (symbols->count() > 0)
              return compress_symbols(opt->symbols, opt->json, opt->show);
            return compress_trace_dir(CompressTraceArgs{opt->dir, opt->json, opt->show});
          }};
}

}  // namespace pskel::cli
