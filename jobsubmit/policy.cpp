#include "policy.h"

#include <cmath>

namespace pskel::jobsubmit {

uint32_t limit_minutes(double predicted_seconds, const Limits& limits, uint32_t partition_max) {
  const double seconds =
      std::max(0.0, predicted_seconds) * (1.0 + limits.margin) + limits.pad_seconds;
  double minutes = std::ceil(seconds / 60.0);
  if (!(minutes >= 1)) minutes = 1;
  if (minutes > 0xfffffff0u) minutes = 0xfffffff0u;  // stay clear of NO_VAL/INFINITE
  uint32_t limit = static_cast<uint32_t>(minutes);
  if (partition_max != kInfinite && partition_max != kNoVal && limit > partition_max)
    limit = std::max<uint32_t>(partition_max, 1);
  return limit;
}

Decision decide(config::Policy policy, double predicted_seconds, const Limits& limits,
                uint32_t user_limit, uint32_t partition_max) {
  Decision d;
  if (policy == config::Policy::Off) {
    d.why = "policy off";
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
