// Directories that root (slurmstepd, the epilog worker) creates or reads on behalf of a job's
// user, without following symbolic links and checking who owns them. Users can write in their own
// job directory; anything there may be a trap (a symlink to /etc, a directory of someone else).
// Thread safety: reentrant; every function works on the file descriptors it is given.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <string>

#include "util/result.h"

namespace pskel {

// An owned file descriptor (closed on destruction; moves only).
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { reset(); }
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = other.release();
    }
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  int get() const { return fd_; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

// A root-owned directory (the spool or state directory): created with its parents (mode 0755)
// if missing; refused if it is a symlink, not owned by `owner`, or writable by others without
// the sticky bit.
Result<UniqueFd> ensure_private_root(const std::string& path, uid_t owner = 0);

// parent/name as a directory owned by uid:gid with mode 0700: created if missing. An existing
// one must be a real directory (not a symlink) owned by uid (or by the caller's euid, i.e. just
// created by a sibling task, in which case it is handed over). REQUIRES: name has no '/'.
Result<UniqueFd> ensure_owned_dir(int parent_fd, const std::string& parent_path,
                                  const std::string& name, uid_t uid, gid_t gid);

// Opens parent/name, which must be a real directory (not a symlink) owned by uid.
Result<UniqueFd> open_owned_dir(int parent_fd, const std::string& parent_path,
                                const std::string& name, uid_t uid);

}  // namespace pskel
