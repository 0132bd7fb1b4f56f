// Which runs one round of Algorithm 4 folds (seed 000 §3.3): longest first, leftmost first on
// ties, skipping any run that overlaps one already chosen; and where inside each chosen run
// the folded copies start. Thread-compatible: one FoldChooser per thread.
#pragma once

#include <cstdint>
#include <vector>

#include "compress/repetitions.h"
#include "compress/suffix_array.h"

namespace pskel::compress {

// text[start, start + period * count) becomes `count` copies of text[start, start + period).
struct Fold {
  index_t start = 0;
  index_t period = 0;
  index_t count = 0;

  index_t end() const { return start + period * count; }
  bool operator==(const Fold&) const = default;
};

class FoldChooser {
 public:
  FoldChooser() = default;
  FoldChooser(const FoldChooser&) = delete;
  FoldChooser& operator=(const FoldChooser&) = delete;

  // Replaces `folds` by the folds of one round, ordered by start and pairwise disjoint.
  // A run of length L and period p folds floor(L / p) copies; the L mod p symbols left over
  // stay plain, after the copies (the seed's (ABC)^3 A) unless starting the copies up to
  // L mod p symbols later cuts fewer of the other runs of this round: at the fold's two ends
  // and between its copies, where a cut run could not fold inside the loop body or next to
  // the loop later on.
  // runs: every run of a text of length n (RunFinder's output); reordered.
  void choose(std::vector<Run>& runs, index_t n, std::vector<Fold>& folds);

 private:
  index_t first_copy(const Run& run) const;

  std::vector<uint8_t> covered_;    // [i]: a chosen run covers position i
  std::vector<index_t> crossing_;   // [i]: how many runs have start < i < end
  std::vector<Run> chosen_;
};

}  // namespace pskel::compress
