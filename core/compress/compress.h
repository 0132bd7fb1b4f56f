// Loop compression (seed 000 §3, Algorithms 3 and 4): finds the loops of an integer string with
// a suffix array and folds them, longest first, until no adjacent repetition is left. The
// result is a loop tree that expands back to the input exactly. Knows nothing of MPI.
#pragma once

#include <cstddef>
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

// `rounds` counts the top level's rounds, the last one (which finds nothing) included; loop
// bodies are folded by rounds of their own, whose runs and folds count in the two sums.
struct CompressStats {
  int rounds = 0;                 // suffix-array rounds (Algorithm 4's do-loop)
  uint64_t repetitions_found = 0; // maximal repetitions found, summed over rounds
  uint64_t folds = 0;             // repetitions folded, summed over rounds
};

// The longest input compress() accepts (its positions are 32-bit; a longer string would not
// fit the memory target anyway).
inline constexpr size_t kMaxInputLength = size_t{1} << 30;

// Folds `input`. Deterministic: equal inputs give equal trees.
// Guarantees: expand(compress(x)) == x; no sequence in the tree (the top level or a loop body)
// holds two equal adjacent blocks of nodes; equal loops are equal subtrees.
// REQUIRES: input.size() <= kMaxInputLength (else throws std::length_error).
// Time O(n log n) per round (Algorithm 4 repeats while anything folds); memory about 60 bytes
// per input symbol at the peak.
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
