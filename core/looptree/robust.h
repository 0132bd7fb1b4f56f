// The typical duration of a repeated compute gap, robust to a burst of interference in the
// traced run: a skeleton copies one run, and a burst (another process on the core, the host
// taking the CPU) must not become part of it. The series is cut into consecutive blocks; blocks
// whose mean lies far above the blocks' median are left out, if they are few. Many deviating
// blocks are the program's own phases, not a burst, and are all kept.
#pragma once

#include <cstdint>
#include <span>

namespace pskel::looptree {

struct RobustMean {
  double mean = 0;          // ns: the mean of the kept blocks (the plain mean if none was left out)
  double plain_mean = 0;    // ns: the mean of the whole series
  uint32_t blocks = 0;      // blocks the series was cut into (0: too short to judge)
  uint32_t left_out = 0;    // blocks left out as a burst
};

// Series shorter than this are not judged: with few iterations a burst and the program's own
// variation cannot be told apart.
inline constexpr size_t kRobustMinSamples = 16;

// REQUIRES: values in execution order (a block is a stretch of time).
RobustMean robust_mean(std::span<const int64_t> values);

}  // namespace pskel::looptree
