#include "export/export.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <type_traits>

#include "util/crc32c.h"
#include "util/file_read.h"

namespace pskel::exportfile {
namespace {

constexpr std::string_view kHeader = "pskel-export 2";
// Version 1 (before node counts): E lines without <nodes>, every prediction for one node.
constexpr std::string_view kHeaderV1 = "pskel-export 1";

// The shortest text that reads back as `v` (what from_chars parses); false when it does not fit,
// which no double does: the longest, "-2.2250738585072014e-308", has 24 characters.
bool append_number(std::string& out, double v) {
  if (v == 0) v = 0;  // -0 would be written "-0", which the parser refuses
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  if (r.ec != std::errc()) return false;
  out.append(buf, r.ptr);
  return true;
}

template <class T>
void append_int(std::string& out, T v) {
  char buf[32];  // 20 digits and a sign at most
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ec == std::errc() ? r.ptr : buf);
}

bool append_field(std::string& out, std::string_view v) {
  out += v;
  return true;
}
bool append_field(std::string& out, double v) { return append_number(out, v); }
template <class T>
  requires std::is_integral_v<T>
bool append_field(std::string& out, T v) {
  append_int(out, v);
  return true;
}

// Appends the fields separated by one blank, and a newline; on a field that cannot be written,
// appends nothing and returns false.
template <class First, class... Rest>
bool append_line(std::string& out, const First& first, const Rest&... rest) {
  const size_t start = out.size();
  bool ok = append_field(out, first);
  ((ok = ok && (out += ' ', append_field(out, rest))), ...);
  if (!ok) {
    out.resize(start);
    return false;
  }
  out += '\n';
  return true;
}

// Splits a line into exactly `n` blank-separated words; false on any other shape.
bool split_words(std::string_view line, std::string_view* words, size_t n) {
  size_t count = 0, i = 0;
  while (i < line.size()) {
    if (line[i] == ' ') return false;  // exactly one blank between words
    const size_t end = line.find(' ', i);
    if (count == n) return false;
    words[count++] = line.substr(i, end == std::string_view::npos ? end : end - i);
    if (end == std::string_view::npos) break;
    i = end + 1;
    if (i == line.size()) return false;  // trailing blank
  }
  return count == n;
}

template <class T>
bool to_int(std::string_view s, T* out) {
  if (s.empty() || s[0] == '+') return false;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

// A predicted run time as the writer writes it: no sign (not even "-0"), no inf or nan, within
// kMaxPredictedSeconds.
bool to_seconds(std::string_view s, double* out) {
  if (s.empty() || s[0] == '+' || s[0] == '-') return false;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size() && valid_predicted_seconds(*out);
}

bool to_hex32(std::string_view s, uint32_t* out) {
  if (s.size() != 8) return false;
  for (const char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;  // as written
  const auto r = std::from_chars(s.data(), s.data() + s.size(), *out, 16);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

Error syscall_error(const std::string& path, const char* what) {
  return Error{path, std::string(what) + ": " + std::strerror(errno)};
}

// A field of a bad record as quoted in an error: slurmctld's log gets no byte of a corrupt file
// that is not printable.
std::string quoted(std::string_view field) {
  return valid_word(field) ? std::string(field) : std::string("(unprintable)");
}

}  // namespace

bool valid_word(std::string_view word) {
  if (word.empty() || word.size() > 128) return false;
  for (const char c : word)
    if (c <= ' ' || c > '~') return false;
  return true;
}

bool valid_predicted_seconds(double seconds) {
  return seconds >= 0 && seconds <= kMaxPredictedSeconds;  // false for nan
}

std::string layout_text(uint32_t ntasks, uint32_t nodes) {
  return std::to_string(ntasks) + " tasks on " + std::to_string(nodes) + (nodes == 1 ? " node" : " nodes");
}

bool valid_entry(const Entry& e) {
  return valid_word(e.partition) && valid_word(e.app) && e.ntasks > 0 && e.nodes > 0 &&
         valid_predicted_seconds(e.predicted_seconds);
}

std::string format(const Data& data) {
  std::string out;
  out.reserve(64 + data.partitions.size() * 32 + data.entries.size() * 52);
  out += kHeader;
  out += '\n';
  size_t partitions = 0, entries = 0;
  for (const Partition& p : data.partitions) {
    if (!valid_word(p.name)) continue;
    const std::string max = p.max_minutes == kUnlimited ? "unlimited" : std::to_string(p.max_minutes);
    partitions += append_line(out, std::string_view("P"), std::string_view(p.name),
                              std::string_view(max), std::string_view(p.is_default ? "default" : "-"));
  }
  for (const Entry& e : data.entries) {
    if (!valid_entry(e)) continue;
    entries += append_line(out, std::string_view("E"), e.uid, e.ntasks, e.nodes,
                           std::string_view(e.partition), e.predicted_seconds, e.prediction_id,
                           std::string_view(e.app));
  }
  char crc[16];
  snprintf(crc, sizeof crc, "%08x", crc32c(out.data(), out.size()));
  append_line(out, std::string_view("end"), entries, partitions, std::string_view(crc));
  return out;
}

Result<Data> parse(std::string_view text, const std::string& origin) {
  Data data;
  size_t line_no = 0, pos = 0;
  auto bad = [&](const std::string& what) {
    return Error{origin, "line " + std::to_string(line_no) + ": " + what};
  };
  bool ended = false;
  bool v1 = false;
  while (pos < text.size()) {
    ++line_no;
    const size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) return bad("last line has no newline (truncated file)");
    const std::string_view line = text.substr(pos, nl - pos);
    const size_t line_start = pos;
    pos = nl + 1;
    if (ended) return bad("text after the end line");
    if (line_no == 1) {
      v1 = line == kHeaderV1;
      if (line != kHeader && !v1) return bad("not a pskel export (expected \"pskel-export 2\")");
      continue;
    }
    if (line.starts_with("P ")) {
      std::string_view w[4];
      if (!split_words(line, w, 4)) return bad("partition line needs 3 fields");
      Partition p;
      if (!valid_word(w[1])) return bad("bad partition name");
      p.name = w[1];
      if (w[2] != "unlimited" && (!to_int(w[2], &p.max_minutes) || p.max_minutes == kUnlimited))
        return bad("bad partition max time: " + quoted(w[2]));
      if (w[3] != "default" && w[3] != "-") return bad("expected default or -");
      p.is_default = w[3] == "default";
      data.partitions.push_back(std::move(p));
    } else if (line.starts_with("E ")) {
      // Version 1 has no <nodes>: its fields are read as version 2's with nodes = 1.
      std::string_view w[8];
      if (v1) {
        if (!split_words(line, w, 7)) return bad("prediction line needs 6 fields");
        std::move_backward(w + 3, w + 7, w + 8);
        w[3] = "1";
      } else if (!split_words(line, w, 8)) {
        return bad("prediction line needs 7 fields");
      }
      Entry e;
      if (!to_int(w[1], &e.uid) || !to_int(w[2], &e.ntasks) || e.ntasks == 0 ||
          !to_int(w[3], &e.nodes) || e.nodes == 0)
        return bad("bad uid, task count or node count");
      if (!valid_word(w[4]) || !valid_word(w[7])) return bad("bad partition or application");
      if (!to_seconds(w[5], &e.predicted_seconds))
        return bad("bad predicted seconds (not a number from 0 to " +
                   std::to_string(static_cast<uint64_t>(kMaxPredictedSeconds)) +
                   "): " + quoted(w[5]));
      if (!to_int(w[6], &e.prediction_id)) return bad("bad prediction id");
      e.partition = w[4];
      e.app = w[7];
      data.entries.push_back(std::move(e));
    } else if (line.starts_with("end ")) {
      std::string_view w[4];
      size_t n_entries = 0, n_partitions = 0;
      uint32_t crc = 0;
      if (!split_words(line, w, 4) || !to_int(w[1], &n_entries) || !to_int(w[2], &n_partitions) ||
          !to_hex32(w[3], &crc))
        return bad("bad end line");
      if (n_entries != data.entries.size() || n_partitions != data.partitions.size())
        return bad("end line counts do not match the records (truncated file)");
      if (crc != crc32c(text.data(), line_start)) return bad("checksum mismatch (corrupt file)");
      ended = true;
    } else {
      return bad("unknown record");
    }
  }
  if (!ended) return Error{origin, "no end line (truncated file)"};
  return data;
}

Result<bool> write_atomic(const std::string& path, const Data& data) {
  const std::string text = format(data);
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  std::string tmp = path + ".tmp.XXXXXX";
  const int fd = ::mkostemp(tmp.data(), O_CLOEXEC);
  if (fd < 0) return syscall_error(tmp, "create");
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      ::unlink(tmp.c_str());
      return syscall_error(tmp, "write");
    }
    done += static_cast<size_t>(n);
  }
  if (::fchmod(fd, 0644) != 0 || ::fsync(fd) != 0) {
    ::close(fd);
    ::unlink(tmp.c_str());
    return syscall_error(tmp, "fsync");
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return syscall_error(path, "rename");
  }
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return true;
}

Result<std::string> read_file(const std::string& path) {
  return read_regular_file(path, kMaxFileBytes);
}

}  // namespace pskel::exportfile
