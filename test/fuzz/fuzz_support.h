// What the fuzz targets share: the one scratch directory they may write in, files written there
// from an input, inputs split into several files, and rank files made checkable again after a
// mutation (libFuzzer cannot forge a CRC-32C).
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "trace/format.h"
#include "util/crc32c.h"

namespace pskel::fuzz {

using Bytes = std::span<const uint8_t>;

inline std::string_view as_text(Bytes data) {
  return {reinterpret_cast<const char*>(data.data()), data.size()};
}

// A fresh $TMPDIR/pskel-fuzz-XXXXXX (default /tmp) per process (libFuzzer's -fork and -jobs
// children each get their own), removed when the process exits normally. Every file a target
// writes is in here. scripts/fuzz points TMPDIR at /dev/shm: the store's fsyncs on a disk
// would cut its executions per second fivefold.
inline const std::string& scratch_dir() {
  struct Dir {
    std::string path;
    Dir() {
      const char* tmp = std::getenv("TMPDIR");
      std::string name = std::string(tmp && *tmp ? tmp : "/tmp") + "/pskel-fuzz-XXXXXX";
      if (::mkdtemp(name.data()) == nullptr) {
        std::perror(("pskel fuzz: mkdtemp " + name).c_str());
        std::abort();  // a target that cannot write its files would only report false findings
      }
      path = name;
    }
    ~Dir() {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
  };
  static const Dir dir;
  return dir.path;
}

// A subdirectory of the scratch directory, created once.
inline std::string scratch_subdir(const std::string& name) {
  const std::string path = scratch_dir() + "/" + name;
  std::error_code ignored;
  std::filesystem::create_directory(path, ignored);
  return path;
}

// Replaces `path` with exactly `data` (O_TRUNC: the previous input's longer file must not
// shine through). Aborts on failure for the same reason as scratch_dir.
inline void write_file(const std::string& path, std::string_view data) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  size_t done = 0;
  while (fd >= 0 && done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  if (fd < 0 || done != data.size() || ::close(fd) != 0) {
    std::perror(("pskel fuzz: " + path).c_str());
    std::abort();
  }
}

// Several files in one input: the parts between separators. A multi-byte separator, not NUL,
// since rank files are binary; the seeds are written with it (test/fuzz/make-corpus) so
// mutations keep the layout. At most `max_parts`: the last part keeps any further separators.
inline constexpr std::string_view kFileSeparator = "\n==pskel-fuzz-next-file==\n";

inline std::vector<std::string_view> split_files(std::string_view data, size_t max_parts) {
  std::vector<std::string_view> parts;
  while (parts.size() + 1 < max_parts) {
    const size_t at = data.find(kFileSeparator);
    if (at == std::string_view::npos) break;
    parts.push_back(data.substr(0, at));
    data.remove_prefix(at + kFileSeparator.size());
  }
  parts.push_back(data);
  return parts;
}

// Rewrites the CRC-32C of every block of a rank file whose payload is all there, walking the
// blocks as the reader does. Without this nearly every mutation of a record dies at the
// checksum check and the record parser behind it is never reached.
inline void fix_block_checksums(std::vector<uint8_t>& file) {
  using trace::BlockHeader;
  size_t at = sizeof(trace::FileHeader);
  while (at <= file.size() && file.size() - at >= sizeof(BlockHeader)) {
    BlockHeader b;
    std::memcpy(&b, file.data() + at, sizeof b);
    const size_t payload_at = at + sizeof b;
    if (file.size() - payload_at < b.payload_bytes) return;
    b.crc32c = crc32c(file.data() + payload_at, b.payload_bytes);
    std::memcpy(file.data() + at, &b, sizeof b);
    at = payload_at + b.payload_bytes;
  }
}

}  // namespace pskel::fuzz
