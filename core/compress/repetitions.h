// All maximal repetitions ("runs") of a string, each with its smallest period. Two methods,
// the same runs: the seed's probes (000 §3.2: for each period p, positions 0, p, 2p, ...), the
// cheapest while every match is short; and, from the first long match on, the runs theorem's
// Lyndon roots (one suffix array, then one candidate period per position and order, checked by
// direct comparison, which reads memory in order where long matches make probes miss cache, or
// by LCE queries once failed candidates have cost a budget linear in n).
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
  enum class Method {
    kProbesFirst,   // probes; the Lyndon roots from the first match of kDirectCompare symbols
    kLyndonRoots,   // the Lyndon roots only (tests)
  };

  // The Lyndon roots compare symbols directly, but for candidates that turn out not to be runs
  // at most `waste_per_symbol` per symbol of the text, in all; past that, matches longer than
  // kDirectCompare are measured by LCE queries.
  static constexpr int64_t kWastePerSymbol = 512;

  explicit RunFinder(Method method = Method::kProbesFirst,
                     int64_t waste_per_symbol = kWastePerSymbol)
      : method_(method), waste_per_symbol_(waste_per_symbol) {}
  RunFinder(const RunFinder&) = delete;
  RunFinder& operator=(const RunFinder&) = delete;

  // Replaces `runs` by every run of `text`, each once, ordered by period, then start.
  // Keeps its workspace for the next call: 8 bytes per symbol once the Lyndon roots ran (4 more
  // for find()'s copy of the text, and at most 2 of a sparse table, of which only the pages
  // used are faulted in), 44 more once they needed LCE queries.
  // REQUIRES: every text[i] < alphabet_size < UINT32_MAX; text.size() < kMaxTextLength.
  void find(std::span<const uint32_t> text, uint32_t alphabet_size, std::vector<Run>& runs);
  // The same for a text followed by one symbol more, alphabet_size, that is not part of it: the
  // Lyndon roots need that terminator, and a caller that leaves room for it saves a copy.
  // REQUIRES: as find(), and terminated_text.back() == alphabet_size.
  void find_terminated(std::span<const uint32_t> terminated_text, uint32_t alphabet_size,
                       std::vector<Run>& runs);

  // Whether the last find() used the Lyndon roots.
  bool used_lyndon_roots() const { return used_lyndon_roots_; }

  // Matches shorter than this are extended by the probes; a longer one hands over to the roots.
  static constexpr index_t kDirectCompare = 16;

 private:
  // `terminated` is empty when the caller left no room for the terminator.
  void search(std::span<const uint32_t> text, std::span<const uint32_t> terminated,
              uint32_t alphabet_size, std::vector<Run>& runs);
  // False, with `runs` incomplete, on meeting a match of kDirectCompare symbols.
  bool find_by_probes(std::vector<Run>& runs);
  void find_by_lyndon_roots(std::span<const uint32_t> terminated, std::vector<Run>& runs);
  // lyndon_end_[i] = the end of the longest Lyndon word at i, under the symbols' order or their
  // reverse.
  void find_lyndon_ends(bool reversed);
  // How far text[i..] and text[j..] match forward, and text[..i) and text[..j) backward.
  // REQUIRES: i < j.
  index_t match_forward(index_t i, index_t j);
  index_t match_backward(index_t i, index_t j);
  const Lce& lce();
  bool has_smaller_period(const Run& run);

  Method method_;
  int64_t waste_per_symbol_;
  bool used_lyndon_roots_ = false;
  std::span<const uint32_t> text_;
  uint32_t alphabet_size_ = 0;
  std::vector<uint32_t> smallest_factor_;    // [m]: smallest prime factor of m, for m >= 2
  std::vector<uint32_t> terminated_;         // text + one symbol larger than all, for find()
  WrittenArray<index_t> rank_;               // [i]: rank of terminated text's suffix i
  WrittenArray<index_t> lyndon_end_;         // suffix array, then Lyndon ends
  // [p]: 1 + the index in `runs` of the last run found of period p, or 0. All zero between
  // searches (each clears what it set; `periods_clean_` is false if one was cut short), so it is
  // allocated once, at the longest text's size, and only the pages of periods found are touched.
  util::ZeroedArray<uint32_t> last_of_period_;
  bool periods_clean_ = true;
  int64_t waste_left_ = 0;                   // what failing candidates may still compare
  bool lce_ready_ = false;
  Lce lce_;                                  // built when the budget runs out
};

}  // namespace pskel::compress
