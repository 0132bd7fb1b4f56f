// The run finder (repetitions.h), by either method.
#include "compress/repetitions.h"

#include <algorithm>
#include <cstring>

namespace pskel::compress {
namespace {

// Length of the common prefix of a[0..limit) and b[0..limit), eight symbols at a time.
index_t common_forward(const uint32_t* a, const uint32_t* b, index_t limit) {
  index_t l = 0;
  while (l + 8 <= limit && std::memcmp(a + l, b + l, 8 * sizeof(uint32_t)) == 0) l += 8;
  while (l < limit && a[l] == b[l]) ++l;
  return l;
}

// Length of the common suffix of a[-limit..0) and b[-limit..0).
index_t common_backward(const uint32_t* a, const uint32_t* b, index_t limit) {
  index_t l = 0;
  while (l + 8 <= limit && std::memcmp(a - l - 8, b - l - 8, 8 * sizeof(uint32_t)) == 0) l += 8;
  while (l < limit && a[-1 - l] == b[-1 - l]) ++l;
  return l;
}

}  // namespace

void RunFinder::find(std::span<const uint32_t> text, uint32_t alphabet_size,
                     std::vector<Run>& runs) {
  search(text, {}, alphabet_size, runs);
}

void RunFinder::find_terminated(std::span<const uint32_t> terminated_text,
                                uint32_t alphabet_size, std::vector<Run>& runs) {
  search(terminated_text.first(terminated_text.size() - 1), terminated_text, alphabet_size, runs);
}

void RunFinder::search(std::span<const uint32_t> text, std::span<const uint32_t> terminated,
                       uint32_t alphabet_size, std::vector<Run>& runs) {
  text_ = text;
  alphabet_size_ = alphabet_size;
  runs.clear();
  used_lyndon_roots_ = method_ == Method::kLyndonRoots || !find_by_probes(runs);
  if (!used_lyndon_roots_) return;
  runs.clear();
  if (terminated.empty()) {
    terminated_.assign(text.begin(), text.end());
    terminated_.push_back(alphabet_size);
    terminated = terminated_;
  }
  find_by_lyndon_roots(terminated, runs);
}

// The seed's probes. A run with period p is at least 2p long, so it holds two probes j, j + p
// that are multiples of p; the run is found from the first such j and every later probe inside
// it is skipped. O(n log n) probes, which read the text with a stride of p: in cache for short
// strings, a miss each for long ones. Strings without long matches (no loops) are done here;
// the first long match means loops, where the Lyndon roots are faster whatever the length.
bool RunFinder::find_by_probes(std::vector<Run>& runs) {
  const auto n = static_cast<index_t>(text_.size());
  const uint32_t* s = text_.data();
  for (index_t p = 1; p <= n / 2; ++p) {
    for (index_t j = 0; j + p < n;) {
      if (s[j] != s[j + p]) {
        j += p;
        continue;
      }
      const index_t ahead = common_forward(s + j, s + j + p, std::min(kDirectCompare, n - j - p));
      const index_t behind = common_backward(s + j, s + j + p, std::min(kDirectCompare, j));
      if (ahead == kDirectCompare || behind == kDirectCompare) return false;
      if (ahead + behind < p) {
        j += p;
        continue;
      }
      // The same interval is found again at every multiple of its smallest period; only the
      // smallest is kept (seed §3.2's "flag on second discovery").
      const Run run{j - behind, behind + p + ahead, p};
      if (!has_smaller_period(run)) runs.push_back(run);
      // Every later probe whose pair still lies inside the run would find it again.
      j += (run.end() - j - 1) / p * p;
    }
  }
  return true;
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
  const uint32_t* s = text_.data() + run.start;
  for (index_t rest = p; rest > 1;) {
    const auto prime = static_cast<index_t>(smallest_factor_[rest]);
    const index_t q = p / prime;
    if (common_forward(s, s + q, run.length - q) == run.length - q) return true;
    while (rest % prime == 0) rest /= prime;
  }
  return false;
}

// The runs theorem (Bannai, I, Inenaga, Nakashima, Takeda, Tsuruta, SIAM J. Comput. 46(5),
// 2017): a run of smallest period p holds a factor of length p that is the longest Lyndon word
// starting at its position, under the symbols' order or under its reverse (whichever puts the
// symbol after the run below the one p before it). So the longest Lyndon word at each position,
// under both orders, names the one period a run through there can have; the match is extended
// both ways (match_forward, match_backward), and a candidate inside a run already found with
// that period is skipped. A Lyndon word is primitive, so a run found this way has its smallest
// period, and no run is found twice within one order.
//
// A terminator larger than every symbol (no run holds it) makes the suffixes distinct and none
// a prefix of another: the reverse order then ranks them exactly backwards, so one suffix array
// serves both orders.
void RunFinder::find_by_lyndon_roots(std::span<const uint32_t> terminated,
                                     std::vector<Run>& runs) {
  const auto n = static_cast<index_t>(text_.size());
  if (n < 2) return;
  lyndon_end_.resize(static_cast<size_t>(n) + 2);
  rank_.resize(static_cast<size_t>(n) + 1);
  const std::span<index_t> sa(lyndon_end_.data(), static_cast<size_t>(n) + 1);
  build_suffix_array(terminated, alphabet_size_ + 1, sa);
  for (index_t r = 0; r <= n; ++r) rank_[sa[r]] = r;

  if (!periods_clean_ || last_of_period_.size() < static_cast<size_t>(n) / 2 + 1)
    last_of_period_ = util::ZeroedArray<uint32_t>(static_cast<size_t>(n) / 2 + 1);
  periods_clean_ = false;
  waste_left_ = waste_per_symbol_ * static_cast<int64_t>(n);
  lce_ready_ = false;
  for (const bool reversed : {false, true}) {
    find_lyndon_ends(reversed);
    for (index_t i = 0; i < n; ++i) {
      const index_t p = lyndon_end_[i] - i;
      if (p > n / 2 || i + p > n) continue;  // a run is at least two periods long
      // [i, i + p) inside a run of period p: extending from i would give that run again.
      const uint32_t last = last_of_period_[p];
      if (last != 0 && runs[last - 1].start <= i && i + p <= runs[last - 1].end()) continue;
      const index_t ahead = match_forward(i, i + p);
      const index_t behind = match_backward(i, i + p);
      if (ahead + behind < p) {
        waste_left_ -= ahead + behind + 1;
        continue;
      }
      runs.push_back({i - behind, behind + p + ahead, p});
      last_of_period_[p] = static_cast<uint32_t>(runs.size());
    }
  }
  for (const Run& run : runs) last_of_period_[run.period] = 0;
  periods_clean_ = true;
  // A run whose roots come under both orders was found once by each.
  std::ranges::sort(runs, [](const Run& a, const Run& b) {
    return a.period != b.period ? a.period < b.period : a.start < b.start;
  });
  runs.erase(std::unique(runs.begin(), runs.end()), runs.end());
}

// Most candidates fail within a few symbols, and the comparisons that find a run are paid for by
// its length, but a candidate can match p - 1 symbols and fail (0^k 1 0^k: at each position of
// the first block, with p up to k): direct comparison alone is quadratic there. So what failing
// candidates compare has a budget linear in n, and past it a long match is measured by an LCE
// query in O(1).
index_t RunFinder::match_forward(index_t i, index_t j) {
  const auto n = static_cast<index_t>(text_.size());
  const uint32_t* s = text_.data();
  if (waste_left_ > 0) return common_forward(s + i, s + j, n - j);
  const index_t l = common_forward(s + i, s + j, std::min(kDirectCompare, n - j));
  return l < kDirectCompare ? l : lce().forward(i, j);
}

index_t RunFinder::match_backward(index_t i, index_t j) {
  const uint32_t* s = text_.data();
  if (waste_left_ > 0) return common_backward(s + i, s + j, i);
  const index_t l = common_backward(s + i, s + j, std::min(kDirectCompare, i));
  return l < kDirectCompare ? l : lce().backward(i, j);
}

const Lce& RunFinder::lce() {
  if (!lce_ready_) {
    lce_.build(text_, alphabet_size_);
    lce_ready_ = true;
  }
  return lce_;
}

// The longest Lyndon word at i ends at the next suffix that sorts below suffix i (Hohlweg and
// Reutenauer, 2003); under the reverse order, the next one above it. Each position's answer is
// found by jumping along the answers already known to its right: amortised O(n).
void RunFinder::find_lyndon_ends(bool reversed) {
  const auto n = static_cast<index_t>(text_.size());
  const index_t* rank = rank_.data();
  index_t* next = lyndon_end_.data();
  next[n] = n + 1;  // the terminator's suffix is the last one: none follows it
  for (index_t i = n - 1; i >= 0; --i) {
    index_t j = i + 1;
    if (reversed) {
      while (j <= n && rank[j] < rank[i]) j = next[j];
    } else {
      while (j <= n && rank[j] > rank[i]) j = next[j];
    }
    next[i] = j;
  }
}

}  // namespace pskel::compress
