// Which MPI a program uses: read from the DT_NEEDED entries of its ELF file (libmpich.so.12 ->
// MPICH, libmpi.so.40 -> Open MPI), so that the tracer built for that MPI is the one preloaded.
// Used by `pskel run` and by spank_pskel.so inside slurmstepd, hence: no exceptions escape
// except std::bad_alloc, every read is bounded, nothing is executed.
// Thread safety: all functions are reentrant (they read files and their arguments only).
#pragma once

#include <elf.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"
#include "util/safe_dir.h"

namespace pskel::flavour {

inline constexpr const char* kMpich = "mpich";
inline constexpr const char* kOpenMpi = "openmpi";

// Reads exactly `n` bytes at `offset` of `fd` (pread, retried on short reads): false at the
// end of the file or on an error. The ELF readers' one way to read (also core/doctor's).
bool read_exact(int fd, uint64_t offset, void* out, size_t n);

// An ELF64 file opened for reading: a regular file (never a FIFO waited on) whose header says
// ELF64; the ELF readers' one way to open (also core/doctor's). Errors: "cannot open: ...",
// "not a regular file", "not an ELF64 file".
struct Elf64File {
  UniqueFd fd;
  uint64_t size = 0;  // at the open
  Elf64_Ehdr header{};
};
Result<Elf64File> open_elf64(const std::string& path);

// The shared libraries an ELF64 file needs, or an Error if it is not a readable ELF64 file.
// Reads only the ELF header, the program headers, the dynamic section and the strings it names.
Result<std::vector<std::string>> elf_needed_libraries(const std::string& path);

// "mpich", "openmpi", or "" when a library list names neither.
std::string flavour_of_libraries(const std::vector<std::string>& needed);

// Where `name` is: itself if it contains a '/' (relative to `cwd` unless absolute or cwd is
// empty), else the first executable `dir/name` for dir in the colon-separated `path_env`
// ("" entries mean cwd). "" if nothing executable is found.
std::string resolve_program(const std::string& name, std::string_view path_env,
                            const std::string& cwd = "");

// The flavour of the first word of `words` that resolves (see resolve_program) to an ELF program
// linked against an MPI; words starting with '-' are skipped. "" if none does.
std::string detect_flavour(const std::vector<std::string>& words, std::string_view path_env,
                           const std::string& cwd = "");

// The words of a shell script, for detect_flavour: split at blanks and the shell's operators
// (; & | < > ( ) ` quotes and newlines), comments dropped, at most `max_words` of them. Not a
// shell parser: it finds `./app` in `mpiexec -n 4 ./app > out`, which is what is needed here.
std::vector<std::string> script_words(std::string_view text, size_t max_words = 4096);

}  // namespace pskel::flavour
