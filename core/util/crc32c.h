// CRC-32C (Castagnoli), the checksum of trace blocks. Uses the SSE4.2 instruction where the
// CPU has it and a table otherwise; both give the same value. Thread-safe, no allocation.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pskel {

// CRC-32C of data[0..size-1], continuing from `crc` (0 to start).
uint32_t crc32c(const void* data, size_t size, uint32_t crc = 0);

}  // namespace pskel
