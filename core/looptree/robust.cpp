// Robust typical gap; see robust.h.
#include "looptree/robust.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace pskel::looptree {

namespace {

// At most this many blocks: a burst of a second in a run of a minute then stays within one or
// two blocks, and each block still averages many iterations (a pattern that repeats every few
// iterations is one value per block, not noise).
constexpr size_t kMaxBlocks = 16;
// A burst is a few blocks: more than blocks / kBurstShare deviating is the program's own
// behaviour (a phase, a trend), kept as it is.
constexpr size_t kBurstShare = 8;
// How far above the median a block must lie: this many robust standard deviations of the
// blocks (1.4826 MAD), and at least kMinRise of the median and kMinRiseNs, so that the jitter of
// a very regular series is not taken for a burst. And the block's excess time must exceed
// kLargeSamples times a block's typical largest sample (the median of the blocks' maxima): where
// block boundaries fall on a pattern that repeats (a heavy iteration every 24) moves a block's
// sum by about one such sample, not more.
constexpr double kSpreads = 4.0;
constexpr double kLargeSamples = 2.0;
constexpr double kMinRise = 0.02;
constexpr double kMinRiseNs = 1000.0;

double median(std::vector<double> v) {
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  const double upper = v[mid];
  if (v.size() % 2 == 1) return upper;
  return (*std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid)) + upper) / 2;
}

}  // namespace

RobustMean robust_mean(std::span<const int64_t> values) {
  RobustMean out;
  if (values.empty()) return out;
  double total = 0;
  for (int64_t v : values) total += static_cast<double>(v);
  out.plain_mean = out.mean = total / static_cast<double>(values.size());
  if (values.size() < kRobustMinSamples) return out;

  // Blocks of consecutive samples: [n * b / B, n * (b + 1) / B).
  const size_t n = values.size();
  const size_t blocks = std::min(kMaxBlocks, n / 2);
  std::vector<double> sums(blocks, 0), means(blocks), maxima(blocks, 0);
  std::vector<size_t> sizes(blocks);
  for (size_t b = 0; b < blocks; ++b) {
    const size_t from = n * b / blocks, to = n * (b + 1) / blocks;
    for (size_t i = from; i < to; ++i) {
      sums[b] += static_cast<double>(values[i]);
      maxima[b] = std::max(maxima[b], static_cast<double>(values[i]));
    }
    sizes[b] = to - from;
    means[b] = sums[b] / static_cast<double>(sizes[b]);
  }
  out.blocks = static_cast<uint32_t>(blocks);

  const double mid = median(means);
  std::vector<double> deviations(blocks);
  for (size_t b = 0; b < blocks; ++b) deviations[b] = std::abs(means[b] - mid);
  const double spread = 1.4826 * median(deviations);
  const double limit = mid + std::max({kSpreads * spread, kMinRise * std::abs(mid), kMinRiseNs});
  const double largest = median(maxima);
  std::vector<bool> burst(blocks);
  size_t deviating = 0, bursts = 0;
  for (size_t b = 0; b < blocks; ++b) {
    const double excess = sums[b] - mid * static_cast<double>(sizes[b]);
    deviating += means[b] > limit ? 1 : 0;
    burst[b] = means[b] > limit && excess > kLargeSamples * largest;
    bursts += burst[b] ? 1 : 0;
  }
  if (bursts == 0 || deviating > blocks / kBurstShare) return out;

  double kept_sum = 0;
  size_t kept_n = 0;
  for (size_t b = 0; b < blocks; ++b) {
    if (burst[b]) continue;
    kept_sum += sums[b];
    kept_n += sizes[b];
  }
  out.mean = kept_sum / static_cast<double>(kept_n);
  out.left_out = static_cast<uint32_t>(bursts);
  return out;
}

}  // namespace pskel::looptree
