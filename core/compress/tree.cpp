// The loop tree's own operations (compress.h): writing it out, measuring it, printing it.
// Recursive over loop bodies; the depth is at most log2 of the expanded length.
#include <cstdint>
#include <string>
#include <vector>

#include "compress/compress.h"

namespace pskel::compress {
namespace {

void expand_into(const Sequence& seq, std::vector<Symbol>& out) {
  for (const Node& node : seq) {
    if (!node.is_loop()) {
      out.push_back(node.symbol);
      continue;
    }
    const size_t first = out.size();
    expand_into(node.body, out);
    const size_t body = out.size() - first;
    for (uint64_t i = 1; i < node.iterations; ++i)
      for (size_t k = 0; k < body; ++k) out.push_back(out[first + k]);
  }
}

void print_into(const Sequence& seq, const std::function<std::string(Symbol)>& name,
                std::string& out) {
  for (const Node& node : seq) {
    if (!out.empty()) out += ' ';
    if (!node.is_loop()) {
      out += name(node.symbol);
      continue;
    }
    out += '(';
    print_into(node.body, name, out);
    out += " )^" + std::to_string(node.iterations);
  }
}

}  // namespace

std::vector<Symbol> expand(const Sequence& tree) {
  std::vector<Symbol> out;
  out.reserve(expanded_length(tree));
  expand_into(tree, out);
  return out;
}

uint64_t compressed_length(const Sequence& tree) {
  uint64_t leaves = 0;
  for (const Node& node : tree) leaves += node.is_loop() ? compressed_length(node.body) : 1;
  return leaves;
}

uint64_t expanded_length(const Sequence& tree) {
  uint64_t symbols = 0;
  for (const Node& node : tree)
    symbols += node.is_loop() ? node.iterations * expanded_length(node.body) : 1;
  return symbols;
}

std::string to_string(const Sequence& tree, const std::function<std::string(Symbol)>& name) {
  std::string out;
  print_into(tree, name, out);
  return out;
}

}  // namespace pskel::compress
