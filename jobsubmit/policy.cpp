#include "policy.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "export/export.h"

namespace pskel::jobsubmit {

uint32_t limit_minutes(double predicted_seconds, const Limits& limits, uint32_t partition_max) {
  // decide() never passes a prediction outside the export's range; a direct caller might, and
  // the uint32 conversion below is undefined for NaN and for anything past 2^32.
  const double predicted =
      predicted_seconds >= 0 ? std::min(predicted_seconds, exportfile::kMaxPredictedSeconds) : 0.0;
  const double seconds = predicted * (1.0 + limits.margin) + limits.pad_seconds;
  double minutes = std::ceil(seconds / 60.0);
  if (!(minutes >= 1)) minutes = 1;
  if (!(minutes <= kMaxLimitMinutes)) minutes = kMaxLimitMinutes;
  uint32_t limit = static_cast<uint32_t>(minutes);
  if (partition_max != kInfinite && partition_max != kNoVal && limit > partition_max)
    limit = std::max<uint32_t>(partition_max, 1);
  return limit;
}

std::string seconds_text(double s) {
  if (!(s > 0)) s = 0;  // NaN, negatives and -0, which would print a sign
  if (s > exportfile::kMaxPredictedSeconds) s = exportfile::kMaxPredictedSeconds;
  // Sized for the clamped range. When to_chars fails, its ptr is the buffer's end, not the
  // text's: copying up to it once sent 32 bytes of slurmctld's stack to a user (1e30 s).
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, s, std::chars_format::fixed, 1);
  if (r.ec != std::errc()) return "";
  return std::string(buf, r.ptr);
}

uint32_t requested_nodes(uint32_t min_nodes, uint32_t max_nodes) {
  if (min_nodes == kNoVal || min_nodes == 0) return 0;
  const bool range = max_nodes != kNoVal && max_nodes != 0 && max_nodes != min_nodes;
  return range ? 0 : min_nodes;
}

Decision decide(config::Policy policy, double predicted_seconds, const Limits& limits,
                uint32_t user_limit, uint32_t partition_max) {
  Decision d;
  if (policy == config::Policy::Off) {
    d.why = "policy off";
    return d;
  }
  if (!exportfile::valid_predicted_seconds(predicted_seconds)) {
    // The export parser refuses these; a limit from NaN would be one minute, from 1e30 garbage.
    d.why = "prediction out of range";
    return d;
  }
  const uint32_t limit = limit_minutes(predicted_seconds, limits, partition_max);
  const bool user_gave_limit = user_limit != kNoVal;
  if (!user_gave_limit) {
    d.change = true;
    d.limit = limit;
    d.why = "no time limit requested";
    return d;
  }
  if (policy == config::Policy::Cap && user_limit != kInfinite &&
      static_cast<double>(user_limit) * 60.0 > predicted_seconds * limits.cap_factor &&
      limit < user_limit) {
    d.change = true;
    d.limit = limit;
    d.why = "requested limit above prediction x CapFactor";
    return d;
  }
  if (policy == config::Policy::Cap && user_limit == kInfinite) {
    d.change = true;
    d.limit = limit;
    d.why = "requested limit UNLIMITED";
    return d;
  }
  d.why = "requested limit kept";
  return d;
}

}  // namespace pskel::jobsubmit
