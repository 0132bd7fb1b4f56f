#include "guard/heartbeat.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>

namespace pskel::guard {
namespace {

constexpr std::string_view kMagic = "pskel-guard ";
constexpr std::string_view kInterval = "interval=";

std::string age_text(int64_t seconds) {
  if (seconds < 120) return std::to_string(seconds) + " s";
  if (seconds < 7200) return std::to_string(seconds / 60) + " min";
  return std::to_string(seconds / 3600) + " h";
}

}  // namespace

Result<bool> write_heartbeat(const std::string& path, uint32_t interval_seconds) {
  const std::string tmp = path + ".tmp";
  const std::string text = std::string(kMagic) + "pid=" + std::to_string(::getpid()) + " " +
                           std::string(kInterval) + std::to_string(interval_seconds) + "\n";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return Error{tmp, std::strerror(errno)};
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  if (!written || ::rename(tmp.c_str(), path.c_str()) != 0) return Error{path, std::strerror(errno)};
  return true;
}

Heartbeat read_heartbeat(const std::string& path, std::time_t now) {
  Heartbeat h;
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return h;
  struct stat st;
  char buf[128];
  ssize_t n = -1;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) n = ::pread(fd, buf, sizeof buf, 0);
  ::close(fd);
  if (n <= 0) return h;
  const std::string_view text(buf, static_cast<size_t>(n));
  const size_t at = text.find(kInterval);
  if (!text.starts_with(kMagic) || at == std::string_view::npos) return h;
  uint32_t interval = 0;
  for (size_t i = at + kInterval.size(); i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    interval = interval * 10 + static_cast<uint32_t>(text[i] - '0');
    if (interval > 86400) return h;
  }
  if (interval == 0) return h;
  h.present = true;
  h.interval_seconds = interval;
  h.age_seconds = std::max<int64_t>(0, static_cast<int64_t>(now - st.st_mtime));
  // Three missed looks, and 10 s for one that waited on a busy slurmctld.
  h.alive = h.age_seconds <= 3 * int64_t{interval} + 10;
  return h;
}

std::string describe(const Heartbeat& h, const std::string& path) {
  if (!h.present) return "NOT running (no heartbeat at " + path + ")";
  return std::string(h.alive ? "running" : "NOT running") + " (last look " + age_text(h.age_seconds) + " ago)";
}

}  // namespace pskel::guard
