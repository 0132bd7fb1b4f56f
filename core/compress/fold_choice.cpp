// The marking step of Algorithm 4 (fold_choice.h). Runs come longest first, so a chosen run
// that overlaps a later candidate is at least as long and must cover one of its two ends:
// checking those two positions decides overlap in O(1).
#include "compress/fold_choice.h"

#include <algorithm>

namespace pskel::compress {

void FoldChooser::choose(std::vector<Run>& runs, index_t n, std::vector<Fold>& folds) {
  std::ranges::sort(runs, [](const Run& a, const Run& b) {
    return a.length != b.length ? a.length > b.length : a.start < b.start;
  });
  covered_.assign(static_cast<size_t>(n), 0);
  chosen_.clear();
  bool any_left_over = false;
  for (const Run& run : runs) {
    if (covered_[run.start] || covered_[run.end() - 1]) continue;
    std::fill(covered_.begin() + run.start, covered_.begin() + run.end(), 1);
    chosen_.push_back(run);
    any_left_over |= run.length % run.period != 0;
  }

  if (any_left_over) {
    crossing_.assign(static_cast<size_t>(n) + 1, 0);
    for (const Run& run : runs) {
      ++crossing_[run.start + 1];
      --crossing_[run.end()];
    }
    for (index_t i = 1; i <= n; ++i) crossing_[i] += crossing_[i - 1];
  }

  folds.clear();
  for (const Run& run : chosen_) {
    const index_t first = run.length % run.period == 0 ? run.start : first_copy(run);
    folds.push_back({first, run.period, run.length / run.period});
  }
  std::ranges::sort(folds, {}, &Fold::start);
}

// Among the starts that fold the same number of copies, the one cutting the fewest other runs;
// the leftmost on ties. The run itself crosses every cut strictly inside it and is not counted.
index_t FoldChooser::first_copy(const Run& run) const {
  const index_t left_over = run.length % run.period;
  const index_t folded = run.length - left_over;
  index_t best = run.start;
  index_t best_cuts = -1;
  for (index_t shift = 0; shift <= left_over; ++shift) {
    const index_t at = run.start + shift;
    const index_t cuts = crossing_[at] - (shift > 0) + crossing_[at + run.period] - 1 +
                         crossing_[at + folded] - (shift < left_over);
    if (best_cuts < 0 || cuts < best_cuts) {
      best = at;
      best_cuts = cuts;
    }
  }
  return best;
}

}  // namespace pskel::compress
