// CRC-32C (core/util/crc32c.h): known vectors, continuation, and agreement of the accelerated
// path with a plain bitwise reference at every length and alignment.
#include "util/crc32c.h"

#include <cstdint>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include <doctest/doctest.h>

namespace {

// The definition, one bit at a time (reflected Castagnoli polynomial).
uint32_t reference_crc32c(const unsigned char* p, size_t n) {
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) {
    crc ^= p[i];
    for (int k = 0; k < 8; ++k) crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
  }
  return ~crc;
}

std::vector<unsigned char> pseudo_random_bytes(size_t n) {
  std::vector<unsigned char> v(n);
  uint32_t x = 0x12345678u;
  for (auto& b : v) {
    x = x * 1664525u + 1013904223u;
    b = static_cast<unsigned char>(x >> 24);
  }
  return v;
}

}  // namespace

TEST_CASE("crc32c of \"123456789\" is the published check value 0xE3069283") {
  const char* s = "123456789";
  CHECK(pskel::crc32c(s, 9) == 0xE3069283u);
}

TEST_CASE("crc32c matches the RFC 3720 (iSCSI) test vectors") {
  unsigned char buf[32];
  std::memset(buf, 0x00, sizeof buf);
  CHECK(pskel::crc32c(buf, sizeof buf) == 0x8A9136AAu);
  std::memset(buf, 0xFF, sizeof buf);
  CHECK(pskel::crc32c(buf, sizeof buf) == 0x62A8AB43u);
  std::iota(buf, buf + 32, static_cast<unsigned char>(0));
  CHECK(pskel::crc32c(buf, sizeof buf) == 0x46DD794Eu);
  for (int i = 0; i < 32; ++i) buf[i] = static_cast<unsigned char>(31 - i);
  CHECK(pskel::crc32c(buf, sizeof buf) == 0x113FDB5Cu);
}

TEST_CASE("crc32c of empty input is 0 and continuing with empty input keeps the crc") {
  CHECK(pskel::crc32c(nullptr, 0) == 0u);
  const char* s = "abc";
  CHECK(pskel::crc32c(s, 0) == 0u);
  const uint32_t partial = pskel::crc32c(s, 3);
  CHECK(partial != 0u);
  CHECK(pskel::crc32c(s, 0, partial) == partial);
  CHECK(pskel::crc32c(nullptr, 0, 0xDEADBEEFu) == 0xDEADBEEFu);
}

TEST_CASE("crc32c computed incrementally over any split equals the one-shot crc") {
  const auto data = pseudo_random_bytes(300);
  const uint32_t whole = pskel::crc32c(data.data(), data.size());
  CHECK(whole == reference_crc32c(data.data(), data.size()));
  for (size_t split = 0; split <= data.size(); ++split) {
    const uint32_t first = pskel::crc32c(data.data(), split);
    const uint32_t both = pskel::crc32c(data.data() + split, data.size() - split, first);
    CHECK_MESSAGE(both == whole, "split at " << split);
  }
  // Three pieces, the middle one shorter than a word.
  uint32_t c = pskel::crc32c(data.data(), 13);
  c = pskel::crc32c(data.data() + 13, 3, c);
  c = pskel::crc32c(data.data() + 16, data.size() - 16, c);
  CHECK(c == whole);
}

TEST_CASE("crc32c agrees with a bitwise reference at every length and misalignment") {
  const auto data = pseudo_random_bytes(200);
  for (size_t offset = 0; offset < 8; ++offset) {
    for (size_t n = 0; n + offset <= data.size(); ++n) {
      const uint32_t got = pskel::crc32c(data.data() + offset, n);
      const uint32_t want = reference_crc32c(data.data() + offset, n);
      if (got != want) FAIL_CHECK("offset " << offset << " length " << n);
    }
  }
  CHECK(pskel::crc32c(data.data() + 1, 100) == reference_crc32c(data.data() + 1, 100));
}

TEST_CASE("crc32c agrees with the reference on inputs long enough for parallel lanes") {
  // The SSE4.2 path runs three lanes of 4 KiB at once on inputs of 12 KiB and more: lengths
  // around multiples of that, at several misalignments, and continued from a non-zero crc.
  const auto data = pseudo_random_bytes(3 * 12288 + 64);
  for (size_t n : {12287u, 12288u, 12289u, 12295u, 24576u, 30000u, 36864u, 36871u}) {
    for (size_t offset : {0u, 1u, 7u}) {
      if (offset + n > data.size()) continue;
      CHECK_MESSAGE(pskel::crc32c(data.data() + offset, n) ==
                        reference_crc32c(data.data() + offset, n),
                    "offset " << offset << " length " << n);
    }
  }
  const uint32_t head = pskel::crc32c(data.data(), 5);
  CHECK(pskel::crc32c(data.data() + 5, 30000, head) == reference_crc32c(data.data(), 30005));
}

TEST_CASE("crc32c detects a single flipped bit") {
  auto data = pseudo_random_bytes(64);
  const uint32_t original = pskel::crc32c(data.data(), data.size());
  for (size_t bit = 0; bit < data.size() * 8; ++bit) {
    data[bit / 8] ^= static_cast<unsigned char>(1u << (bit % 8));
    if (pskel::crc32c(data.data(), data.size()) == original) FAIL_CHECK("bit " << bit);
    data[bit / 8] ^= static_cast<unsigned char>(1u << (bit % 8));
  }
  CHECK(pskel::crc32c(data.data(), data.size()) == original);
}
