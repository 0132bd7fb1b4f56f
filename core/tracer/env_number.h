// The tracer's numeric settings from the environment (PSKEL_SAMPLE_MS, PSKEL_STREAM_PROBE_MB,
// PSKEL_TRACE_MEMORY_MB): one rule for all, so that a typo never stops a traced program.
#pragma once

#include <cstdlib>

namespace pskel::tracer {

// The decimal value of `name`, at most `max`; `fallback` if unset, empty, not a number or
// under `min`.
inline long number_from_env(const char* name, long fallback, long min, long max) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (*end != '\0' || value < min) return fallback;
  return value < max ? value : max;
}

}  // namespace pskel::tracer
