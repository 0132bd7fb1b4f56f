// The value of a small data symbol of an ELF64 shared object, read from the file without loading
// it: a Slurm plugin cannot be dlopen'ed outside a Slurm daemon (its libslurm symbols would not
// resolve), and `pskel doctor` needs its `plugin_version`, the Slurm version it was built for.
// Every read is bounded; nothing is executed. Thread safety: reentrant.
#pragma once

#include <cstdint>
#include <string>

#include "util/result.h"

namespace pskel::doctor {

// The 4-byte value of the dynamic symbol `name` in `path`. Error when the file is not an ELF64
// object, has no such symbol, or the symbol has no bytes in the file (.bss).
Result<uint32_t> read_u32_symbol(const std::string& path, const std::string& name);

// SLURM_VERSION_NUMBER's layout: 0x160508 for 22.05.8.
inline uint32_t slurm_version_number(uint32_t major, uint32_t minor, uint32_t micro) {
  return (major << 16) | (minor << 8) | micro;
}
// "22.05.8"
std::string slurm_version_text(uint32_t version_number);

}  // namespace pskel::doctor
