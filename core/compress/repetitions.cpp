// The run finder (repetitions.h). A run with period p is at least 2p long, so it holds two
// probes j, j + p that are multiples of p; the run is found from the first such j and every
// later probe inside it is skipped. The same interval is found again at every multiple of its
// smallest period; only the smallest is kept (seed §3.2's "flag on second discovery").
#include "compress/repetitions.h"

#include <algorithm>

namespace pskel::compress {

void RunFinder::find(std::span<const uint32_t> text, uint32_t alphabet_size,
                     std::vector<Run>& runs) {
  text_ = text;
  alphabet_size_ = alphabet_size;
  lce_ready_ = false;
  runs.clear();
  const auto n = static_cast<index_t>(text.size());
  owner_.assign(text.size(), kNoRun);
  const uint32_t* s = text.data();
  for (index_t p = 1; p <= n / 2; ++p) {
    for (index_t j = 0; j + p < n;) {
      Run run;
      const Probe found = s[j] != s[j + p] ? Probe::kNothing : probe(runs, j, p, run);
      if (found == Probe::kNothing) {
        j += p;
        continue;
      }
      if (found == Probe::kNewRun) {
        std::fill(owner_.begin() + run.start, owner_.begin() + run.end(),
                  static_cast<uint32_t>(runs.size()));
        runs.push_back(run);
      }
      // Every later probe whose pair still lies inside the run would find it again.
      j += (run.end() - p - j + p - 1) / p * p;
    }
  }
}

// Most probes are settled by comparing a few symbols on either side (in cache, next to the
// probe). A longer match needs LCE queries, whose chains of cache misses dominate the scan on
// long periodic stretches; two cheaper tests come first. A run already found with a period q
// that divides p, and holding the pair, is all of the stretch of period p through it: its
// neighbours differ from the symbols q, hence p, inside it. This catches every run found again
// at a multiple of its period. And a run through j and j + p matches (text[x] == text[x + p])
// on a window at least p long around j, so on at least p / q consecutive points of a grid of
// step q through j.
RunFinder::Probe RunFinder::probe(const std::vector<Run>& runs, index_t j, index_t p, Run& run) {
  index_t ahead = compare_forward(j, j + p);
  index_t behind = compare_backward(j, j + p);
  if (ahead == kDirectCompare || behind == kDirectCompare) {
    if (owner_[j] != kNoRun) {
      const Run& known = runs[owner_[j]];
      if (p % known.period == 0 && j + p < known.end()) {
        run = known;
        return known.length >= 2 * p ? Probe::kKnownRun : Probe::kNothing;
      }
    }
    if (p > 2 * kDirectCompare && !grid_matches(j, p)) return Probe::kNothing;
    if (ahead == kDirectCompare) ahead = lce().forward(j, j + p);
    if (behind == kDirectCompare) behind = lce().backward(j, j + p);
  }
  if (ahead + behind < p) return Probe::kNothing;
  run = {j - behind, behind + p + ahead, p};
  return has_smaller_period(run) ? Probe::kKnownRun : Probe::kNewRun;
}

bool RunFinder::grid_matches(index_t j, index_t p) const {
  const auto n = static_cast<index_t>(text_.size());
  const index_t q = p / 8;
  const index_t needed = p / q;
  index_t matched = 1;
  for (index_t x = j + q; matched < needed && x + p < n && text_[x] == text_[x + p]; x += q)
    ++matched;
  for (index_t x = j - q; matched < needed && x >= 0 && text_[x] == text_[x + p]; x -= q)
    ++matched;
  return matched >= needed;
}

const Lce& RunFinder::lce() {
  if (!lce_ready_) {
    lce_.build(text_, alphabet_size_);
    lce_ready_ = true;
  }
  return lce_;
}

index_t RunFinder::compare_forward(index_t i, index_t j) const {
  const auto n = static_cast<index_t>(text_.size());
  const index_t limit = std::min(kDirectCompare, n - std::max(i, j));
  index_t l = 0;
  while (l < limit && text_[i + l] == text_[j + l]) ++l;
  return l;
}

index_t RunFinder::compare_backward(index_t i, index_t j) const {
  const index_t limit = std::min(kDirectCompare, std::min(i, j));
  index_t l = 0;
  while (l < limit && text_[i - 1 - l] == text_[j - 1 - l]) ++l;
  return l;
}

// Two periods p and q of one interval at least p + q long make gcd(p, q) a period too (Fine
// and Wilf), so the smallest period divides p: it is enough to try p / r for each prime r | p.
bool RunFinder::has_smaller_period(const Run& run) {
  const index_t p = run.period;
  if (p < 2) return false;
  if (smallest_factor_.size() <= static_cast<size_t>(p)) {
    const size_t size = std::max(static_cast<size_t>(p) + 1, 2 * smallest_factor_.size());
    smallest_factor_.assign(size, 0);
    for (size_t f = 2; f < size; ++f)
      if (smallest_factor_[f] == 0)
        for (size_t m = f; m < size; m += f)
          if (smallest_factor_[m] == 0) smallest_factor_[m] = static_cast<uint32_t>(f);
  }
  for (index_t rest = p; rest > 1;) {
    const auto prime = static_cast<index_t>(smallest_factor_[rest]);
    const index_t q = p / prime;
    const index_t l = compare_forward(run.start, run.start + q);
    if ((l < kDirectCompare ? l : lce().forward(run.start, run.start + q)) >= run.length - q)
      return true;
    while (rest % prime == 0) rest /= prime;
  }
  return false;
}

}  // namespace pskel::compress
