#include "util/safe_dir.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

namespace pskel {
namespace {

constexpr int kDirFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

Error sys_error(const std::string& path, const char* what, int err) {
  if (err == ELOOP || err == ENOTDIR)
    return Error{path, std::string(what) + ": is a symbolic link or not a directory"};
  return Error{path, std::string(what) + ": " + std::strerror(err)};
}

}  // namespace

Result<UniqueFd> ensure_private_root(const std::string& path, uid_t owner) {
  if (path.empty() || path[0] != '/') return Error{path, "not an absolute path"};
  // mkdir -p, each component opened without following symlinks.
  UniqueFd dir(::open("/", kDirFlags));
  if (dir.get() < 0) return sys_error("/", "open", errno);
  size_t i = 1;
  std::string walked;
  while (i < path.size()) {
    const size_t slash = path.find('/', i);
    const std::string part = path.substr(i, slash == std::string::npos ? slash : slash - i);
    i = slash == std::string::npos ? path.size() : slash + 1;
    if (part.empty() || part == ".") continue;
    if (part == "..") return Error{path, "'..' in path"};
    walked += "/" + part;
    if (::mkdirat(dir.get(), part.c_str(), 0755) != 0 && errno != EEXIST)
      return sys_error(walked, "mkdir", errno);
    UniqueFd next(::openat(dir.get(), part.c_str(), kDirFlags));
    if (next.get() < 0) return sys_error(walked, "open", errno);
    dir = std::move(next);
  }
  struct stat st;
  if (::fstat(dir.get(), &st) != 0) return sys_error(path, "stat", errno);
  if (st.st_uid != owner)
    return Error{path, "owned by uid " + std::to_string(st.st_uid) + ", not " +
                           std::to_string(owner)};
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX))
    return Error{path, "writable by others without the sticky bit"};
  return dir;
}

Result<UniqueFd> ensure_owned_dir(int parent_fd, const std::string& parent_path,
                                  const std::string& name, uid_t uid, gid_t gid) {
  const std::string path = parent_path + "/" + name;
  if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
    return Error{path, "bad directory name"};
  bool created = ::mkdirat(parent_fd, name.c_str(), 0700) == 0;
  if (!created && errno != EEXIST) return sys_error(path, "mkdir", errno);
  UniqueFd fd(::openat(parent_fd, name.c_str(), kDirFlags));
  if (fd.get() < 0) return sys_error(path, "open", errno);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return sys_error(path, "stat", errno);
  if (st.st_uid != uid) {
    // Only we (root) can create entries in the spool: a directory owned by us is one a sibling
    // task of this job created a moment ago and has not handed over yet.
    if (st.st_uid != ::geteuid())
      return Error{path, "owned by uid " + std::to_string(st.st_uid) + ", not the job's user " +
                             std::to_string(uid)};
    created = true;
  }
  if (created) {
    if (::fchown(fd.get(), uid, gid) != 0) return sys_error(path, "chown", errno);
    if (::fchmod(fd.get(), 0700) != 0) return sys_error(path, "chmod", errno);
  }
  return fd;
}

Result<UniqueFd> open_owned_dir(int parent_fd, const std::string& parent_path,
                                const std::string& name, uid_t uid) {
  const std::string path = parent_path + "/" + name;
  UniqueFd fd(::openat(parent_fd, name.c_str(), kDirFlags));
  if (fd.get() < 0) return sys_error(path, "open", errno);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return sys_error(path, "stat", errno);
  if (st.st_uid != uid)
    return Error{path, "owned by uid " + std::to_string(st.st_uid) + ", not the job's user " +
                           std::to_string(uid)};
  return fd;
}

}  // namespace pskel
