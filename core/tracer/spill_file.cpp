#include "spill_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace pskel::tracer {

SpillFile::~SpillFile() {
  if (fd_ >= 0) ::close(fd_);
  std::free(memory_);
}

bool SpillFile::open_file(const std::string& path) {
  path_ = path;
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  return fd_ >= 0 || fail("cannot create", errno);
}

void SpillFile::open_memory(const std::string& path, size_t cap) {
  path_ = path;
  cap_ = cap;
  held_ = true;
}

bool SpillFile::write(const void* data, size_t bytes) {
  if (closed_) return false;
  if (held_) {
    if (bytes > cap_ - used_) return spill() && write_fd(data, bytes);
    if (used_ + bytes > capacity_) {
      size_t grown = capacity_ ? capacity_ : size_t{64} << 10;
      while (grown < used_ + bytes) grown *= 2;
      if (grown > cap_) grown = cap_;
      void* moved = std::realloc(memory_, grown);
      if (moved == nullptr) return spill() && write_fd(data, bytes);  // the file, then
      memory_ = static_cast<unsigned char*>(moved);
      capacity_ = grown;
    }
    std::memcpy(memory_ + used_, data, bytes);
    used_ += bytes;
    return true;
  }
  return write_fd(data, bytes);
}

bool SpillFile::spill() {
  if (!held_) return fd_ >= 0 || (closed_ && !failed());
  held_ = false;
  bool ok = open_file(path_) && write_fd(memory_, used_);
  release_memory();
  if (ok && closed_) {
    ok = ::close(fd_) == 0 || fail("cannot close", errno);
    fd_ = -1;
  }
  return ok;
}

bool SpillFile::close() {
  closed_ = true;
  if (fd_ < 0) return !failed();
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) return fail("cannot close", errno);
  return !failed();
}

void SpillFile::forget() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  held_ = false;
  closed_ = true;
  release_memory();
}

void SpillFile::release_memory() {
  std::free(memory_);
  memory_ = nullptr;
  used_ = capacity_ = 0;
}

bool SpillFile::write_fd(const void* data, size_t bytes) {
  if (fd_ < 0) return false;
  const auto* p = static_cast<const unsigned char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::write(fd_, p, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail("cannot write", n < 0 ? errno : ENOSPC);
    p += n;
    bytes -= static_cast<size_t>(n);
  }
  return true;
}

bool SpillFile::fail(const char* what, int err) {
  if (error_.empty()) error_ = std::string(what) + " " + path_ + ": " + std::strerror(err);
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  closed_ = true;
  return false;
}

}  // namespace pskel::tracer
