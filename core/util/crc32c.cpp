#include "crc32c.h"

#include <array>
#include <cstring>

namespace pskel {
namespace {

constexpr uint32_t kPolynomial = 0x82F63B78;  // reflected Castagnoli polynomial

constexpr std::array<uint32_t, 256> make_table() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPolynomial : c >> 1;
    table[i] = c;
  }
  return table;
}
constexpr auto kTable = make_table();

uint32_t crc32c_table(const unsigned char* p, size_t n, uint32_t crc) {
  while (n--) crc = kTable[(crc ^ *p++) & 0xFF] ^ (crc >> 8);
  return crc;
}

#if defined(__x86_64__)
// The instruction's latency is 3 cycles and it takes one every cycle, so one CRC chain uses a
// third of it. Long inputs run three chains over three lanes of kLaneBytes at once (a trace
// block of 1 MB: ~3x faster, ~10 ns less per traced call), and the lanes' CRCs are joined by
// the linearity of CRCs: crc(A B) = shift(crc(A), |B|) ^ crc_from_zero(B), where shift(c, n)
// is the CRC register after n zero bytes from c, a linear map of c's 32 bits, tabled below.
constexpr size_t kLaneBytes = 4096;

// The CRC register's map over n zero bytes as the images of its 32 bits (a 32 x 32 matrix over
// GF(2)), built by squaring the map of one zero byte: feeding n zero bytes one by one takes more
// steps than compilers allow a constant expression. REQUIRES: n a power of two.
using BitImages = std::array<uint32_t, 32>;

constexpr uint32_t apply(const BitImages& map, uint32_t c) {
  uint32_t out = 0;
  for (int b = 0; b < 32; ++b)
    if (c >> b & 1) out ^= map[b];
  return out;
}

constexpr BitImages zero_bytes_map(size_t n) {
  BitImages map{};
  for (int b = 0; b < 32; ++b) {
    const uint32_t c = uint32_t{1} << b;
    map[b] = kTable[c & 0xFF] ^ (c >> 8);
  }
  for (size_t bytes = 1; bytes < n; bytes *= 2) {
    BitImages squared{};
    for (int b = 0; b < 32; ++b) squared[b] = apply(map, map[b]);
    map = squared;
  }
  return map;
}

// shift(c, n) for a fixed n as four byte-indexed tables: the map of each of c's bytes.
struct ShiftTable {
  std::array<std::array<uint32_t, 256>, 4> byte;
  uint32_t operator()(uint32_t c) const {
    return byte[0][c & 0xFF] ^ byte[1][(c >> 8) & 0xFF] ^ byte[2][(c >> 16) & 0xFF] ^
           byte[3][c >> 24];
  }
};

constexpr ShiftTable make_shift_table(size_t n) {
  const BitImages bit_image = zero_bytes_map(n);
  ShiftTable t{};
  for (int k = 0; k < 4; ++k)
    for (uint32_t v = 0; v < 256; ++v)
      for (int b = 0; b < 8; ++b)
        if (v >> b & 1) t.byte[k][v] ^= bit_image[8 * k + b];
  return t;
}

static_assert((kLaneBytes & (kLaneBytes - 1)) == 0, "zero_bytes_map squares: a power of two");
constexpr ShiftTable kShiftOneLane = make_shift_table(kLaneBytes);
constexpr ShiftTable kShiftTwoLanes = make_shift_table(2 * kLaneBytes);

__attribute__((target("sse4.2"))) uint32_t crc32c_sse42(const unsigned char* p, size_t n,
                                                         uint32_t crc) {
  uint64_t c = crc;
  for (; n >= 3 * kLaneBytes; n -= 3 * kLaneBytes, p += 3 * kLaneBytes) {
    uint64_t c1 = 0, c2 = 0;
    for (size_t i = 0; i < kLaneBytes; i += 8) {
      uint64_t w0, w1, w2;
      std::memcpy(&w0, p + i, 8);
      std::memcpy(&w1, p + kLaneBytes + i, 8);
      std::memcpy(&w2, p + 2 * kLaneBytes + i, 8);
      c = __builtin_ia32_crc32di(c, w0);
      c1 = __builtin_ia32_crc32di(c1, w1);
      c2 = __builtin_ia32_crc32di(c2, w2);
    }
    c = kShiftTwoLanes(static_cast<uint32_t>(c)) ^ kShiftOneLane(static_cast<uint32_t>(c1)) ^
        static_cast<uint32_t>(c2);
  }
  for (; n >= 8; n -= 8, p += 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    c = __builtin_ia32_crc32di(c, word);
  }
  uint32_t c32 = static_cast<uint32_t>(c);
  while (n--) c32 = __builtin_ia32_crc32qi(c32, *p++);
  return c32;
}
#endif

}  // namespace

uint32_t crc32c(const void* data, size_t size, uint32_t crc) {
  const auto* p = static_cast<const unsigned char*>(data);
  crc = ~crc;
#if defined(__x86_64__)
  static const bool has_sse42 = __builtin_cpu_supports("sse4.2");
  crc = has_sse42 ? crc32c_sse42(p, size, crc) : crc32c_table(p, size, crc);
#else
  crc = crc32c_table(p, size, crc);
#endif
  return ~crc;
}

}  // namespace pskel
