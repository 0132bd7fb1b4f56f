#include "util/file_read.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <utility>

#include "util/safe_dir.h"

namespace pskel {

Result<std::optional<OpenFile>> open_regular_file(const std::string& path, uint64_t max_bytes) {
  // O_NONBLOCK: opening a FIFO planted where a file is expected would otherwise wait for a
  // writer (and hang root's epilog); opened this way it fails the regular-file check instead.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (fd.get() < 0) {
    if (errno == ENOENT) return std::optional<OpenFile>{};
    return Error{path, errno == ELOOP ? "is a symbolic link (refused)" : std::strerror(errno)};
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return Error{path, std::strerror(errno)};
  if (!S_ISREG(st.st_mode)) return Error{path, "not a regular file"};
  const auto size = static_cast<uint64_t>(st.st_size);
  if (size > max_bytes) return Error{path, "too large (" + std::to_string(size) + " bytes)"};
  return std::optional<OpenFile>{OpenFile{std::move(fd), size}};
}

Result<std::optional<std::string>> read_regular_file_if_exists(const std::string& path,
                                                               uint64_t max_bytes) {
  auto file = open_regular_file(path, max_bytes);
  if (!file) return file.error();
  if (!file.value()) return std::optional<std::string>{};
  const UniqueFd& fd = file.value()->fd;
  const uint64_t size = file.value()->size;
  // Bytes appended after fstat are not read: the caller gets the file as it was at the open.
  std::string bytes(static_cast<size_t>(size), '\0');
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::read(fd.get(), bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error{path, std::strerror(errno)};
    if (n == 0) return Error{path, "shrank while being read"};
    done += static_cast<size_t>(n);
  }
  return std::optional<std::string>{std::move(bytes)};
}

Result<bool> pread_exact(int fd, void* out, size_t n, uint64_t offset, const std::string& path) {
  auto* p = static_cast<unsigned char*>(out);
  size_t done = 0;
  while (done < n) {
    const ssize_t got = ::pread(fd, p + done, n - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return Error{path, std::strerror(errno)};
    if (got == 0) return Error{path, "shrank while being read"};
    done += static_cast<size_t>(got);
  }
  return true;
}

Result<std::string> read_regular_file_range(const std::string& path, uint64_t offset,
                                            uint64_t bytes, uint64_t max_bytes) {
  if (bytes > max_bytes) return Error{path, "too large (" + std::to_string(bytes) + " bytes)"};
  auto file = open_regular_file(path, std::numeric_limits<uint64_t>::max());
  if (!file) return file.error();
  if (!file.value()) return Error{path, "missing"};
  if (file.value()->size < offset || file.value()->size - offset < bytes)
    return Error{path, "shrank while being read"};
  std::string text(static_cast<size_t>(bytes), '\0');
  if (auto r = pread_exact(file.value()->fd.get(), text.data(), text.size(), offset, path); !r)
    return r.error();
  return text;
}

Result<std::string> read_regular_file(const std::string& path, uint64_t max_bytes) {
  auto bytes = read_regular_file_if_exists(path, max_bytes);
  if (!bytes) return bytes.error();
  if (!bytes.value()) return Error{path, "missing"};
  return std::move(*bytes.value());
}

}  // namespace pskel
