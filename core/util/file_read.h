// Reads a whole file from a place a job's user can write in (a trace directory, the prediction
// export's directory) without being led elsewhere: a symbolic link, FIFO, device or directory
// is refused, never followed or waited on, and an oversized file is refused before it is read.
// Thread safety: reentrant.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "util/result.h"
#include "util/safe_dir.h"

namespace pskel {

// The bytes `path` held when it was opened. It must be a regular file of at most `max_bytes`.
// Errors name `path` and say one of: "missing", "is a symbolic link (refused)",
// "not a regular file", "too large (N bytes)", "shrank while being read", or the system's text.
// Only the last component of `path` is checked for a symbolic link.
Result<std::string> read_regular_file(const std::string& path, uint64_t max_bytes);

// A regular file opened for reading with the checks of read_regular_file (no symlink, FIFO or
// device; at most `max_bytes`), for readers that check a file's header before reading the rest.
// std::nullopt when the file is missing.
struct OpenFile {
  UniqueFd fd;
  uint64_t size = 0;  // at the open
};
Result<std::optional<OpenFile>> open_regular_file(const std::string& path, uint64_t max_bytes);

// As read_regular_file, but a missing file is no error: std::nullopt.
Result<std::optional<std::string>> read_regular_file_if_exists(const std::string& path,
                                                               uint64_t max_bytes);

// `n` bytes of `fd` from `offset` into `out`; errors name `path` ("shrank while being read" if
// the file ends before them).
Result<bool> pread_exact(int fd, void* out, size_t n, uint64_t offset, const std::string& path);

// `bytes` bytes of the regular file `path` from `offset` (a section of a larger file), with the
// checks of read_regular_file; `bytes` must be at most `max_bytes`.
Result<std::string> read_regular_file_range(const std::string& path, uint64_t offset,
                                            uint64_t bytes, uint64_t max_bytes);

}  // namespace pskel
