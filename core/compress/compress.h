// Loop compression (seed 000 §3, Algorithms 3 and 4): finds the loops of an integer string with
// a suffix array and folds them, longest first, until no adjacent repetition is left. The
// result is a loop tree that expands back to the input exactly. Knows nothing of MPI.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace pskel::compress {

using Symbol = uint32_t;

// One element of a folded sequence: a symbol, or a loop whose body runs `iterations` (>= 2)
// times. A leaf has iterations == 0 and an empty body.
struct Node {
  Symbol symbol = 0;
  uint64_t iterations = 0;
  std::vector<Node> body;

  bool is_loop() const { return iterations != 0; }
  static Node leaf(Symbol s) { return Node{s, 0, {}}; }
  static Node loop(uint64_t n, std::vector<Node> body) { return Node{0, n, std::move(body)}; }
  bool operator==(const Node&) const = default;
};
using Sequence = std::vector<Node>;

struct CompressStats {
  int rounds = 0;                 // suffix-array rounds (Algorithm 4's do-loop)
  uint64_t repetitions_found = 0; // maximal repetitions found, summed over rounds
  uint64_t folds = 0;             // repetitions folded, summed over rounds
};

// Folds `input`. Deterministic: equal inputs give equal trees.
Sequence compress(std::span<const Symbol> input, CompressStats* stats = nullptr);

// The input `compress` was given: every loop body written out `iterations` times.
std::vector<Symbol> expand(const Sequence& tree);

// Leaves in the tree, loop markers not counted: the seed's measure of a folding's length.
uint64_t compressed_length(const Sequence& tree);
// Symbols the tree stands for (== expand(tree).size(), without expanding).
uint64_t expanded_length(const Sequence& tree);

// "1 ( 2 3 )^10 4", with `name` turning a symbol into text.
std::string to_string(const Sequence& tree, const std::function<std::string(Symbol)>& name);

}  // namespace pskel::compress
