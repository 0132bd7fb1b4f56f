#include "export/export.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <type_traits>
#include <vector>

#include "util/crc32c.h"
#include "util/file_read.h"

namespace pskel::exportfile {
namespace {

constexpr std::string_view kHeader = "pskel-export 3";
// Version 2 (before run-time models): no M lines, and the end line has no M count.
constexpr std::string_view kHeaderV2 = "pskel-export 2";
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

// An unsigned number as the writer writes it: exactly 2 x sizeof(T) lower-case hex digits.
template <class T>
bool to_hex(std::string_view s, T* out) {
  if (s.size() != 2 * sizeof(T)) return false;
  for (const char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;  // as written
  const auto r = std::from_chars(s.data(), s.data() + s.size(), *out, 16);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

// Any finite number as the writer writes it (a model's coefficients and exponents have signs).
bool to_finite(std::string_view s, double* out) {
  if (s.empty() || s[0] == '+') return false;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size() && std::isfinite(*out);
}

// An M line's words after "M": the fields in order, each checked on the way.
bool append_model(std::string& out, const Model& m) {
  char key[24];
  snprintf(key, sizeof key, "%016llx", static_cast<unsigned long long>(m.shape_key));
  std::string line = "M";
  auto word = [&](auto v) {
    line += ' ';
    return append_field(line, v);
  };
  bool ok = word(m.uid) && word(std::string_view(m.app)) && word(std::string_view(key)) &&
            word(m.model_id) && word(m.parameters) && word(m.low_ratio) && word(m.high_ratio) &&
            word(m.intercept) && word(m.groups.size());
  for (const ModelGroup& g : m.groups) {
    ok = ok && word(g.weight) && word(g.clamp ? 1 : 0) && word(g.constant) && word(g.terms.size());
    for (const ModelTerm& t : g.terms) {
      ok = ok && word(t.coefficient) && word(t.factors.size());
      for (const ModelFactor& f : t.factors)
        ok = ok && word(f.parameter) && word(f.exponent) && word(f.log_exponent);
    }
  }
  if (!ok) return false;
  out += line;
  out += '\n';
  return true;
}

// Reads an M line (its words, "M" first); an error names the field.
Result<Model> parse_model(std::string_view line) {
  std::vector<std::string_view> w;
  size_t i = 0;
  while (i <= line.size()) {
    const size_t end = line.find(' ', i);
    w.push_back(line.substr(i, end == std::string_view::npos ? std::string_view::npos : end - i));
    if (end == std::string_view::npos) break;
    i = end + 1;
  }
  size_t at = 1;
  auto next = [&]() -> std::optional<std::string_view> {
    if (at >= w.size() || w[at].empty()) return std::nullopt;
    return w[at++];
  };
  auto number = [&](double* v) { auto t = next(); return t && to_finite(*t, v); };
  auto count = [&](size_t* v, size_t most) {
    auto t = next();
    return t && to_int(*t, v) && *v <= most;
  };
  Model m;
  auto t = next();
  if (!t || !to_int(*t, &m.uid)) return Error{"", "bad uid"};
  t = next();
  if (!t || !valid_word(*t)) return Error{"", "bad application"};
  m.app = *t;
  t = next();
  if (!t || !to_hex(*t, &m.shape_key)) return Error{"", "bad shape key"};
  t = next();
  if (!t || !to_int(*t, &m.model_id)) return Error{"", "bad model id"};
  size_t parameters = 0, groups = 0;
  if (!count(&parameters, kMaxModelParameters) || parameters == 0)
    return Error{"", "bad parameter count"};
  m.parameters = static_cast<uint32_t>(parameters);
  if (!number(&m.low_ratio) || !number(&m.high_ratio) || !number(&m.intercept) ||
      !count(&groups, kMaxModelGroups))
    return Error{"", "bad interval, intercept or group count"};
  for (size_t g = 0; g < groups; ++g) {
    ModelGroup group;
    size_t clamp = 0, terms = 0;
    if (!number(&group.weight) || !count(&clamp, 1) || !number(&group.constant) ||
        !count(&terms, kMaxModelTerms))
      return Error{"", "bad group"};
    group.clamp = clamp == 1;
    for (size_t k = 0; k < terms; ++k) {
      ModelTerm term;
      size_t factors = 0;
      if (!number(&term.coefficient) || !count(&factors, kMaxModelFactors) || factors == 0)
        return Error{"", "bad term"};
      for (size_t f = 0; f < factors; ++f) {
        ModelFactor factor;
        size_t parameter = 0, log_exponent = 0;
        if (!count(&parameter, parameters - 1) || !number(&factor.exponent) ||
            !count(&log_exponent, 2))
          return Error{"", "bad factor"};
        factor.parameter = static_cast<uint32_t>(parameter);
        factor.log_exponent = static_cast<int>(log_exponent);
        term.factors.push_back(factor);
      }
      group.terms.push_back(std::move(term));
    }
    m.groups.push_back(std::move(group));
  }
  if (at != w.size()) return Error{"", "fields after the model"};
  if (!valid_model(m)) return Error{"", "model out of range"};
  return m;
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

bool valid_input(std::string_view input) {
  uint64_t key;
  return input == "-" || to_hex(input, &key);
}

bool valid_entry(const Entry& e) {
  return valid_word(e.partition) && valid_word(e.app) && e.ntasks > 0 && e.nodes > 0 &&
         valid_predicted_seconds(e.predicted_seconds) && valid_input(e.input);
}

std::string model_line(const Model& m) {
  std::string out;
  if (!valid_model(m) || !append_model(out, m)) return "";
  out.pop_back();  // the newline
  return out;
}

Result<Model> parse_model_line(std::string_view line) {
  if (!line.starts_with("M ")) return Error{"", "not a model line"};
  return parse_model(line);
}

bool valid_model(const Model& m) {
  if (!valid_word(m.app) || m.parameters == 0 || m.parameters > kMaxModelParameters ||
      m.groups.size() > kMaxModelGroups || !(m.low_ratio > 0 && m.low_ratio <= 1) ||
      !(m.high_ratio >= 1 && m.high_ratio <= 100) || !std::isfinite(m.intercept))
    return false;
  for (const ModelGroup& g : m.groups) {
    if (!std::isfinite(g.weight) || !std::isfinite(g.constant) || g.terms.size() > kMaxModelTerms)
      return false;
    for (const ModelTerm& t : g.terms) {
      if (!std::isfinite(t.coefficient) || t.factors.empty() ||
          t.factors.size() > kMaxModelFactors)
        return false;
      for (const ModelFactor& f : t.factors)
        if (f.parameter >= m.parameters || !(std::fabs(f.exponent) <= 8) || f.log_exponent < 0 ||
            f.log_exponent > 2)
          return false;
    }
  }
  return true;
}

double model_seconds(const Model& m, std::span<const double> parameters) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (parameters.size() != m.parameters) return nan;
  for (double p : parameters)
    if (!(p > 0) || !std::isfinite(p)) return nan;
  double seconds = m.intercept;
  for (const ModelGroup& g : m.groups) {
    double value = g.constant;
    for (const ModelTerm& t : g.terms) {
      double product = t.coefficient;
      for (const ModelFactor& f : t.factors) {
        const double x = parameters[f.parameter];
        product *= std::pow(x, f.exponent) * std::pow(std::log2(x), f.log_exponent);
      }
      value += product;
    }
    if (g.clamp && value < 0) value = 0;
    seconds += g.weight * value;
  }
  return std::isfinite(seconds) ? seconds : nan;
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
                           std::string_view(e.app), std::string_view(e.input));
  }
  size_t models = 0;
  for (const Model& m : data.models)
    if (valid_model(m)) models += append_model(out, m);
  char crc[16];
  snprintf(crc, sizeof crc, "%08x", crc32c(out.data(), out.size()));
  append_line(out, std::string_view("end"), entries, partitions, models, std::string_view(crc));
  return out;
}

Result<Data> parse(std::string_view text, const std::string& origin) {
  Data data;
  size_t line_no = 0, pos = 0;
  auto bad = [&](const std::string& what) {
    return Error{origin, "line " + std::to_string(line_no) + ": " + what};
  };
  bool ended = false;
  bool v1 = false, v2 = false;
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
      v2 = line == kHeaderV2;
      if (line != kHeader && !v1 && !v2)
        return bad("not a pskel export (expected \"pskel-export 3\")");
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
      // Version 1 has no <nodes>: its fields are read as version 2's with nodes = 1. Versions
      // 1 and 2 have no <input>: any.
      std::string_view w[9];
      w[8] = "-";
      if (v1) {
        if (!split_words(line, w, 7)) return bad("prediction line needs 6 fields");
        std::move_backward(w + 3, w + 7, w + 8);
        w[3] = "1";
      } else if (v2) {
        if (!split_words(line, w, 8)) return bad("prediction line needs 7 fields");
      } else if (!split_words(line, w, 9)) {
        return bad("prediction line needs 8 fields");
      }
      if (!valid_input(w[8])) return bad("bad input key");
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
      e.input = w[8];
      data.entries.push_back(std::move(e));
    } else if (line.starts_with("M ") && !v1 && !v2) {
      auto model = parse_model(line);
      if (!model.ok()) return bad("model line: " + model.error().what);
      data.models.push_back(std::move(model.value()));
    } else if (line.starts_with("end ")) {
      // Versions 1 and 2 have no M count: read as 0.
      std::string_view w[5];
      const bool has_models = !v1 && !v2;
      size_t n_entries = 0, n_partitions = 0, n_models = 0;
      uint32_t crc = 0;
      if (!split_words(line, w, has_models ? 5 : 4) || !to_int(w[1], &n_entries) ||
          !to_int(w[2], &n_partitions) || (has_models && !to_int(w[3], &n_models)) ||
          !to_hex(w[has_models ? 4 : 3], &crc))
        return bad("bad end line");
      if (n_entries != data.entries.size() || n_partitions != data.partitions.size() ||
          n_models != data.models.size())
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
