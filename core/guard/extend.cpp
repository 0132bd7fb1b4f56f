#include "guard/extend.h"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace pskel::guard {
namespace {

constexpr std::string_view kLimitPrefix = "pskel: time limit ";
constexpr std::string_view kFromPrediction = " min from prediction #";
constexpr std::string_view kWithout = ", without pskel: ";
constexpr std::string_view kPartitionDefault = "partition default";

// Reads a decimal number at the front of `s` and removes it; false when there is none.
template <class T>
bool take_number(std::string_view& s, T* out) {
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  if (ec != std::errc() || end == s.data()) return false;
  s.remove_prefix(static_cast<size_t>(end - s.data()));
  return true;
}

bool take(std::string_view& s, std::string_view word) {
  if (!s.starts_with(word)) return false;
  s.remove_prefix(word.size());
  return true;
}

std::string minutes_text(uint32_t minutes) {
  return minutes == kNoLimit ? "UNLIMITED" : std::to_string(minutes) + " min";
}

}  // namespace

std::string limit_comment(uint32_t limit_minutes, int64_t prediction_id,
                          std::optional<uint32_t> requested_minutes) {
  return std::string(kLimitPrefix) + std::to_string(limit_minutes) + std::string(kFromPrediction) +
         std::to_string(prediction_id) + std::string(kWithout) +
         (requested_minutes ? std::to_string(*requested_minutes) + " min" : std::string(kPartitionDefault));
}

std::optional<PskelLimit> parse_limit_comment(std::string_view s) {
  // job_submit appends it to what an administrator may have written before it.
  const size_t at = s.find(kLimitPrefix);
  if (at == std::string_view::npos) return std::nullopt;
  s.remove_prefix(at);
  PskelLimit limit;
  if (!take(s, kLimitPrefix) || !take_number(s, &limit.limit_minutes) || !take(s, kFromPrediction) ||
      !take_number(s, &limit.prediction_id) || !take(s, kWithout))
    return std::nullopt;
  if (take(s, kPartitionDefault)) return limit;
  uint32_t requested = 0;
  if (!take_number(s, &requested) || !take(s, " min")) return std::nullopt;
  limit.requested_minutes = requested;
  return limit;
}

uint32_t ceiling_minutes(const PskelLimit& limit, const RunningJob& job) {
  uint32_t ceiling = limit.requested_minutes ? *limit.requested_minutes
                     : job.partition_default_minutes != kNoLimit ? job.partition_default_minutes
                                                                 : job.partition_max_minutes;
  return std::min(ceiling, job.partition_max_minutes);
}

int64_t lead_seconds(const GuardSettings& settings) {
  return std::max<int64_t>(30, 3 * int64_t{settings.interval_seconds});
}

std::optional<Extension> decide(const RunningJob& job, const GuardSettings& settings) {
  const auto limit = parse_limit_comment(job.admin_comment);
  if (!limit || job.time_limit_minutes == kNoLimit) return std::nullopt;
  const uint32_t ceiling = ceiling_minutes(*limit, job);
  if (job.time_limit_minutes >= ceiling) return std::nullopt;
  const int64_t left = int64_t{job.time_limit_minutes} * 60 - job.elapsed_seconds;
  if (left > lead_seconds(settings)) return std::nullopt;
  // Geometric steps: a job that runs far past its prediction needs few extensions, and each
  // one leaves at least the lead before the next look.
  const double step = std::ceil(job.time_limit_minutes * settings.step);
  const int64_t lead_minutes = (lead_seconds(settings) + 59) / 60;
  const int64_t wanted = std::max<int64_t>(
      {int64_t{job.time_limit_minutes} + std::max<int64_t>(1, static_cast<int64_t>(step)),
       (job.elapsed_seconds + 59) / 60 + 2 * lead_minutes});
  Extension e;
  e.prediction_id = limit->prediction_id;
  e.from_minutes = job.time_limit_minutes;
  e.to_minutes = static_cast<uint32_t>(std::min<int64_t>(wanted, ceiling));
  e.ceiling_minutes = ceiling;
  e.elapsed_seconds = job.elapsed_seconds;
  e.reached_ceiling = e.to_minutes == ceiling;
  return e;
}

std::string extension_comment(const Extension& e) {
  return "pskel guard: extended " + std::to_string(e.from_minutes) + " -> " +
         minutes_text(e.to_minutes) + " after " + std::to_string(e.elapsed_seconds) + " s" +
         (e.reached_ceiling ? " (the limit without pskel)" : "");
}

}  // namespace pskel::guard
