#include "proc_stats.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace pskel::tracer {

size_t read_proc_file(const char* path, char* buf, size_t capacity) {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t n;
  do {
    n = ::read(fd, buf, capacity - 1);
  } while (n < 0 && errno == EINTR);
  ::close(fd);
  const size_t got = n > 0 ? static_cast<size_t>(n) : 0;
  buf[got] = '\0';
  return got;
}
namespace {

// Reads a non-negative decimal at text[*at], skipping spaces first; -1 if there is none.
int64_t next_number(const char* text, size_t size, size_t* at) {
  size_t i = *at;
  while (i < size && text[i] == ' ') ++i;
  if (i >= size || text[i] < '0' || text[i] > '9') return -1;
  int64_t value = 0;
  for (; i < size && text[i] >= '0' && text[i] <= '9'; ++i) {
    if (value > (INT64_MAX - 9) / 10) return -1;  // no real counter is this large
    value = value * 10 + (text[i] - '0');
  }
  *at = i;
  return value;
}

// The value in kB of the meminfo line "<key>:   N kB", in bytes; -1 if absent.
int64_t meminfo_bytes(const char* text, size_t size, const char* key) {
  const size_t key_length = std::strlen(key);
  size_t line = 0;
  while (line < size) {
    if (size - line > key_length && std::memcmp(text + line, key, key_length) == 0 &&
        text[line + key_length] == ':') {
      size_t at = line + key_length + 1;
      const int64_t kb = next_number(text, size, &at);
      return kb < 0 || kb > INT64_MAX / 1024 ? -1 : kb * 1024;
    }
    const void* newline = std::memchr(text + line, '\n', size - line);
    if (newline == nullptr) break;
    line = static_cast<size_t>(static_cast<const char*>(newline) - text) + 1;
  }
  return -1;
}

}  // namespace

NodeCpuTicks parse_proc_stat(const char* text, size_t size) {
  NodeCpuTicks out;
  if (size < 4 || std::memcmp(text, "cpu ", 4) != 0) return out;
  size_t at = 4;
  int64_t fields[8];  // user nice system idle iowait irq softirq steal
  for (int64_t& field : fields) {
    field = next_number(text, size, &at);
    if (field < 0) return out;
  }
  const int64_t idle = fields[3] + fields[4];
  int64_t total = 0;
  for (const int64_t field : fields) total += field;
  out.total = total;
  out.busy = total - idle;
  return out;
}

NodeMemory parse_meminfo(const char* text, size_t size) {
  NodeMemory out;
  const int64_t total = meminfo_bytes(text, size, "MemTotal");
  const int64_t available = meminfo_bytes(text, size, "MemAvailable");
  out.total_bytes = total;
  if (total >= 0 && available >= 0 && available <= total) out.used_bytes = total - available;
  return out;
}

int64_t parse_statm_rss_bytes(const char* text, size_t size, int64_t page_bytes) {
  size_t at = 0;
  if (next_number(text, size, &at) < 0) return -1;  // total program size
  const int64_t pages = next_number(text, size, &at);
  if (pages < 0 || page_bytes <= 0 || pages > INT64_MAX / page_bytes) return -1;
  return pages * page_bytes;
}

int64_t parse_schedstat_run_delay_ns(const char* text, size_t size) {
  size_t at = 0;
  if (next_number(text, size, &at) < 0) return -1;  // time on a CPU
  return next_number(text, size, &at);
}

}  // namespace pskel::tracer
