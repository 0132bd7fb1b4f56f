// The fields of a rank file, for the unit tests (test_support.h) and the synthetic traces of
// test/bench/tracegen: a header with every field the tracer fills, and record equality. No
// doctest.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

#include "trace/format.h"

// Records have no padding (format.h asserts their size), so bytewise equality is field equality.
namespace pskel::trace {
inline bool operator==(const Record& a, const Record& b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}
}  // namespace pskel::trace

namespace pskel::test {

// Copies `s` into a fixed-size field, cut to fit, the rest zeroed (a full field has no NUL).
inline void copy_str(char* dst, size_t size, std::string_view s) {
  std::memset(dst, 0, size);
  std::memcpy(dst, s.data(), s.size() < size ? s.size() : size);
}

struct HeaderFields {
  int32_t rank = 0;
  int32_t world_size = 1;
  trace::Flavour flavour = trace::Flavour::openmpi;
  int64_t base_realtime_ns = 1'700'000'000'123'456'789;
  double work_ns_per_unit = 3.25;
  uint32_t pid = 4242;
  std::string_view run_id = "run-0123456789abcdef";
  std::string_view hostname = "node017.cluster";
};

inline trace::FileHeader file_header(const HeaderFields& f) {
  trace::FileHeader h{};
  std::memcpy(h.magic, trace::kFileMagic, sizeof h.magic);
  h.version = trace::kFormatVersion;
  h.header_bytes = sizeof(trace::FileHeader);
  h.record_bytes = sizeof(trace::Record);
  h.rank = f.rank;
  h.world_size = f.world_size;
  h.flavour = static_cast<uint32_t>(f.flavour);
  h.base_realtime_ns = f.base_realtime_ns;
  h.work_ns_per_unit = f.work_ns_per_unit;
  h.pid = f.pid;
  copy_str(h.run_id, sizeof h.run_id, f.run_id);
  copy_str(h.hostname, sizeof h.hostname, f.hostname);
  return h;
}

}  // namespace pskel::test
