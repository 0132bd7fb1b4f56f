// Which MPI a command runs: read from the DT_NEEDED entries of the ELF programs named on its
// command line (libmpich.so.12 -> MPICH, libmpi.so.40 -> Open MPI), so that `pskel run`
// preloads the tracer built for that MPI. Pure functions over files; no process is started.
#pragma once

#include <string>
#include <vector>

#include "util/result.h"

namespace pskel::cli {

// The shared libraries an ELF64 file needs, or an Error if it is not a readable ELF64 file.
Result<std::vector<std::string>> elf_needed_libraries(const std::string& path);

// "mpich", "openmpi", or "" when a library list names neither.
std::string flavour_of_libraries(const std::vector<std::string>& needed);

// The flavour of the first argument of `command` that resolves (through PATH for bare names)
// to an ELF program linked against an MPI; "" if none does.
std::string detect_flavour(const std::vector<std::string>& command);

}  // namespace pskel::cli
