// Algorithm 4 of seed 000 (§3.3): rounds of find runs → choose folds → fold, until a round
// finds nothing. A folded run becomes one fresh symbol standing for (body, count); its body
// is folded the same way first, and the symbol is keyed on the folded body, so that equal
// loops are one symbol wherever and however they were found and outer loops fold around them.
#include "compress/compress.h"

#include <algorithm>
#include <stdexcept>
#include <unordered_map>

#include "compress/fold_choice.h"
#include "compress/repetitions.h"
#include "compress/sequence_table.h"

namespace pskel::compress {
namespace {

constexpr uint32_t kNone = UINT32_MAX;

// Internal symbols: [0, leaves) are the input's distinct symbols in order of first
// appearance; leaves + i is loop i of `loops_`.
class Compressor {
 public:
  explicit Compressor(CompressStats* stats) : stats_(stats ? stats : &ignored_) {}

  Sequence run(std::span<const Symbol> input);

 private:
  std::vector<uint32_t> intern_leaves(std::span<const Symbol> input);
  std::vector<uint32_t> fold_rounds(std::vector<uint32_t> text, bool top_level);
  uint32_t relabel(std::span<const uint32_t> text);
  uint32_t loop_symbol(std::span<const uint32_t> body, index_t count);
  Node node_of(uint32_t symbol) const;

  CompressStats ignored_;
  CompressStats* stats_;
  std::vector<Symbol> leaves_;          // [leaf symbol] = the caller's symbol
  SequenceTable raw_bodies_;            // bodies as found
  std::vector<uint32_t> folded_body_;   // [raw body id] = its id in bodies_
  SequenceTable bodies_;                // bodies after folding
  SequenceTable loops_;                 // (count, id in bodies_)

  // Workspace of one round; nested rounds (of loop bodies) reuse it once the round has chosen
  // its folds.
  RunFinder finder_;
  FoldChooser chooser_;
  std::vector<Run> runs_;
  // The text relabelled to [0, distinct symbols), then that number.
  WrittenArray<uint32_t> dense_;
  std::vector<uint32_t> label_;         // [symbol] = its label in dense_, kNone between rounds
};

Sequence Compressor::run(std::span<const Symbol> input) {
  if (input.size() > kMaxInputLength)
    throw std::length_error("pskel::compress: input longer than kMaxInputLength");
  const std::vector<uint32_t> folded = fold_rounds(intern_leaves(input), true);
  Sequence out;
  out.reserve(folded.size());
  for (const uint32_t symbol : folded) out.push_back(node_of(symbol));
  return out;
}

std::vector<uint32_t> Compressor::intern_leaves(std::span<const Symbol> input) {
  std::vector<uint32_t> text;
  text.reserve(input.size());
  const Symbol top = input.empty() ? 0 : *std::ranges::max_element(input);
  if (top < 2 * input.size() + 65536) {  // the usual case: symbols are small integers
    std::vector<uint32_t> label(size_t{top} + 1, kNone);
    for (const Symbol symbol : input) {
      uint32_t& l = label[symbol];
      if (l == kNone) {
        l = static_cast<uint32_t>(leaves_.size());
        leaves_.push_back(symbol);
      }
      text.push_back(l);
    }
  } else {
    std::unordered_map<Symbol, uint32_t> label;
    for (const Symbol symbol : input) {
      const auto [it, added] = label.try_emplace(symbol, static_cast<uint32_t>(leaves_.size()));
      if (added) leaves_.push_back(symbol);
      text.push_back(it->second);
    }
  }
  label_.assign(leaves_.size(), kNone);
  return text;
}

std::vector<uint32_t> Compressor::fold_rounds(std::vector<uint32_t> text, bool top_level) {
  std::vector<Fold> folds;
  std::vector<uint32_t> next;
  for (;;) {
    if (top_level) ++stats_->rounds;
    if (text.size() < 2) break;
    const uint32_t alphabet = relabel(text);
    finder_.find_terminated(dense_, alphabet, runs_);
    if (runs_.empty()) break;
    stats_->repetitions_found += runs_.size();
    chooser_.choose(runs_, static_cast<index_t>(text.size()), folds);
    stats_->folds += folds.size();

    next.clear();
    next.reserve(text.size());  // touches only what is written
    index_t done = 0;
    for (const Fold& fold : folds) {
      next.insert(next.end(), text.begin() + done, text.begin() + fold.start);
      next.push_back(loop_symbol({text.data() + fold.start, size_t(fold.period)}, fold.count));
      done = fold.end();
    }
    next.insert(next.end(), text.begin() + done, text.end());
    text.swap(next);
  }
  return text;
}

// Suffix arrays want a dense alphabet, and loop symbols number up to n; a text (a loop body
// especially) uses few of them. The run finder's terminator (the alphabet's size) follows.
uint32_t Compressor::relabel(std::span<const uint32_t> text) {
  dense_.resize(text.size() + 1);
  uint32_t next = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    uint32_t& l = label_[text[i]];
    if (l == kNone) l = next++;
    dense_[i] = l;
  }
  for (const uint32_t symbol : text) label_[symbol] = kNone;
  dense_[text.size()] = next;
  return next;
}

uint32_t Compressor::loop_symbol(std::span<const uint32_t> body, index_t count) {
  const SequenceTable::Entry raw = raw_bodies_.intern(body);
  if (raw.added) {
    folded_body_.resize(raw_bodies_.size(), kNone);
    // A body is shorter than the text it came from, so this recursion ends (depth <= log n).
    const std::vector<uint32_t> folded = fold_rounds({body.begin(), body.end()}, false);
    folded_body_[raw.id] = bodies_.intern(folded).id;
  }
  const uint32_t key[2] = {static_cast<uint32_t>(count), folded_body_[raw.id]};
  const SequenceTable::Entry loop = loops_.intern(key);
  if (loop.added) label_.push_back(kNone);
  return static_cast<uint32_t>(leaves_.size()) + loop.id;
}

Node Compressor::node_of(uint32_t symbol) const {
  if (symbol < leaves_.size()) return Node::leaf(leaves_[symbol]);
  const std::span<const uint32_t> key = loops_[symbol - static_cast<uint32_t>(leaves_.size())];
  const std::span<const uint32_t> body = bodies_[key[1]];
  Sequence nodes;
  nodes.reserve(body.size());
  for (const uint32_t s : body) nodes.push_back(node_of(s));
  return Node::loop(key[0], std::move(nodes));
}

}  // namespace

Sequence compress(std::span<const Symbol> input, CompressStats* stats) {
  if (stats) *stats = {};
  return Compressor(stats).run(input);
}

}  // namespace pskel::compress
