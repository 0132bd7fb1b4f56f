// All maximal repetitions ("runs") of a string, each with its smallest period (seed 000 §3.2):
// for each period p, positions 0, p, 2p, ... are probed, and where text[j] == text[j + p] the
// match is extended both ways. O(n log n) probes; the extensions cost O(1) each.
// Thread-compatible: one RunFinder per thread.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "compress/lce.h"
#include "compress/suffix_array.h"

namespace pskel::compress {

// text[start, start + length) has period `period` (text[i] == text[i + period] inside it),
// cannot be extended either way with that period, is at least two periods long, and no
// smaller period has all three properties on the same interval.
struct Run {
  index_t start = 0;
  index_t length = 0;
  index_t period = 0;

  index_t end() const { return start + length; }
  bool operator==(const Run&) const = default;
};

class RunFinder {
 public:
  RunFinder() = default;
  RunFinder(const RunFinder&) = delete;
  RunFinder& operator=(const RunFinder&) = delete;

  // Replaces `runs` by every run of `text`, each once, ordered by period, then start.
  // Keeps its workspace (about 44 bytes per symbol once built) for the next call.
  // REQUIRES: every text[i] < alphabet_size; text.size() <= kMaxTextLength.
  void find(std::span<const uint32_t> text, uint32_t alphabet_size, std::vector<Run>& runs);

 private:
  // Matches shorter than this are extended by direct comparison: most probes fail within a
  // few symbols, and strings without long matches never need the suffix arrays at all.
  static constexpr index_t kDirectCompare = 16;

  // What the pair (j, j + p) shows: no run of period p, a run found before with a smaller
  // period, or a new run. Sets `run` unless kNothing. REQUIRES: text[j] == text[j + p].
  enum class Probe { kNothing, kKnownRun, kNewRun };
  Probe probe(const std::vector<Run>& runs, index_t j, index_t p, Run& run);
  // Whether text[x] == text[x + p] on enough points of a grid through j for a run to be there.
  bool grid_matches(index_t j, index_t p) const;
  const Lce& lce();
  // Common extension of positions i and j by direct comparison, up to kDirectCompare.
  index_t compare_forward(index_t i, index_t j) const;
  index_t compare_backward(index_t i, index_t j) const;
  bool has_smaller_period(const Run& run);

  std::span<const uint32_t> text_;
  uint32_t alphabet_size_ = 0;
  bool lce_ready_ = false;
  Lce lce_;                                  // built on the first long match
  std::vector<uint32_t> smallest_factor_;    // [m]: smallest prime factor of m, for m >= 2
  static constexpr uint32_t kNoRun = UINT32_MAX;
  std::vector<uint32_t> owner_;              // [i]: the last run found that holds i, or kNoRun
};

}  // namespace pskel::compress
