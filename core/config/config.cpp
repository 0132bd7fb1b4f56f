#include "config/config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>

#include "util/text.h"

#ifndef PSKEL_SYSCONFDIR
#define PSKEL_SYSCONFDIR "/etc/slurm"
#endif
#ifndef PSKEL_TRACER_DIR
#define PSKEL_TRACER_DIR "/usr/lib/x86_64-linux-gnu/pskel"
#endif
#ifndef PSKEL_BINDIR
#define PSKEL_BINDIR "/usr/bin"
#endif

namespace pskel::config {
namespace {

// One setter per key: returns "" when the value is accepted, else why it is not.
using Setter = std::function<std::string(Config&, const std::string&)>;

Setter path_setter(std::string Config::*field) {
  return [field](Config& c, const std::string& v) -> std::string {
    if (v.empty() || v[0] != '/') return "must be an absolute path";
    c.*field = v;
    return "";
  };
}

Setter text_setter(std::string Config::*field) {
  return [field](Config& c, const std::string& v) -> std::string {
    if (v.empty()) return "must not be empty";
    c.*field = v;
    return "";
  };
}

// One of `words` (any case), kept in lower case.
Setter choice_setter(std::string Config::*field, std::vector<std::string> words) {
  return [field, words](Config& c, const std::string& v) -> std::string {
    const std::string word = lower(v);
    if (std::find(words.begin(), words.end(), word) != words.end()) {
      c.*field = word;
      return "";
    }
    std::string why = "must be ";
    for (size_t i = 0; i < words.size(); ++i)
      why += (i == 0 ? "" : i + 1 == words.size() ? " or " : ", ") + words[i];
    return why;
  };
}

template <class T>
Setter number_setter(T Config::*field, double lo, double hi) {
  return [field, lo, hi](Config& c, const std::string& v) -> std::string {
    double d = 0;
    if constexpr (std::is_integral_v<T>) {
      uint64_t u = 0;
      if (!parse_u64(v, &u)) return "must be a whole number";
      d = static_cast<double>(u);
      if (d < lo || d > hi) return "out of range";
      c.*field = static_cast<T>(u);
    } else {
      if (!parse_double(v, &d)) return "must be a number";
      if (d < lo || d > hi) return "out of range";
      c.*field = static_cast<T>(d);
    }
    return "";
  };
}

const std::map<std::string, Setter>& setters() {
  static const std::map<std::string, Setter> table = {
      {"spooldir", path_setter(&Config::spool_dir)},
      {"statedir", path_setter(&Config::state_dir)},
      {"database", path_setter(&Config::database)},
      {"exportfile", path_setter(&Config::export_file)},
      {"logfile", path_setter(&Config::log_file)},
      {"policy",
       [](Config& c, const std::string& v) -> std::string {
         const std::string p = lower(v);
         if (p == "unset-only") c.policy = Policy::UnsetOnly;
         else if (p == "cap") c.policy = Policy::Cap;
         else if (p == "off") c.policy = Policy::Off;
         else return "must be unset-only, cap or off";
         return "";
       }},
      {"margin", number_setter(&Config::margin, 0.0, 100.0)},
      {"pad", number_setter(&Config::pad_seconds, 0, 7 * 86400)},
      {"capfactor", number_setter(&Config::cap_factor, 1.0, 1000.0)},
      {"calibratepartitions",
       [](Config& c, const std::string& v) -> std::string {
         c.calibrate_partitions = split_list(v);
         return "";
       }},
      {"targetskeletonseconds", number_setter(&Config::target_skeleton_seconds, 0.01, 86400.0)},
      {"calibrationtimelimit", number_setter(&Config::calibration_time_limit, 1, 7 * 1440)},
      {"steptimeout", number_setter(&Config::step_timeout, 1, 7 * 86400)},
      {"workerthreads", number_setter(&Config::worker_threads, 1, 1024)},
      {"tracermpich", path_setter(&Config::tracer_mpich)},
      {"traceropenmpi", path_setter(&Config::tracer_openmpi)},
      {"mpi", choice_setter(&Config::mpi, {"auto", "mpich", "openmpi"})},
      {"tracefiles", choice_setter(&Config::trace_files, {"auto", "node", "rank"})},
      {"pskel", path_setter(&Config::pskel)},
      {"sbatch", path_setter(&Config::sbatch)},
      {"scontrol", path_setter(&Config::scontrol)},
      {"launchermpich", text_setter(&Config::launcher_mpich)},
      {"launcheropenmpi", text_setter(&Config::launcher_openmpi)},
      {"maxtracebytes", number_setter(&Config::max_trace_bytes, 1, 1e15)},
      {"heartbeatfile", path_setter(&Config::heartbeat_file)},
      {"guardinterval", number_setter(&Config::guard_interval, 1, 3600)},
      {"guardstep", number_setter(&Config::guard_step, 0.05, 10.0)},
      {"guardrequired",
       [](Config& c, const std::string& v) -> std::string {
         const std::string b = lower(v);
         if (b == "yes" || b == "true" || b == "1") c.guard_required = true;
         else if (b == "no" || b == "false" || b == "0") c.guard_required = false;
         else return "must be yes or no";
         return "";
       }},
  };
  return table;
}

}  // namespace

const char* policy_name(Policy policy) {
  switch (policy) {
    case Policy::UnsetOnly: return "unset-only";
    case Policy::Cap: return "cap";
    case Policy::Off: return "off";
  }
  return "?";
}

Config Config::defaults() {
  Config c;
  c.spool_dir = "/var/spool/pskel";
  c.state_dir = "/var/lib/pskel";
  c.tracer_mpich = std::string(PSKEL_TRACER_DIR) + "/libpskel-trace-mpich.so";
  c.tracer_openmpi = std::string(PSKEL_TRACER_DIR) + "/libpskel-trace-openmpi.so";
  c.pskel = std::string(PSKEL_BINDIR) + "/pskel";
  return c;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return out;
}

std::vector<std::string> split_list(const std::string& value, char separator) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= value.size()) {
    const size_t at = value.find(separator, start);
    const std::string item =
        value.substr(start, at == std::string::npos ? std::string::npos : at - start);
    if (!item.empty()) out.push_back(item);
    if (at == std::string::npos) break;
    start = at + 1;
  }
  return out;
}

bool parse_u64(std::string_view s, uint64_t* out) {
  if (s.empty()) return false;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size();
}

bool parse_double(std::string_view s, double* out) {
  if (s.empty() || s[0] == '+' || s[0] == ' ') return false;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size() && std::isfinite(*out);
}

// A key or value quoted in an error: one short line whatever the file holds (a 900 kB value
// of control characters is the file's problem, not the log's).
std::string shown(std::string_view text) { return one_line(text, 80); }

Result<std::vector<Pair>> split_pairs(std::string_view line) {
  std::vector<Pair> pairs;
  size_t i = 0;
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
  while (true) {
    while (i < line.size() && blank(line[i])) ++i;
    if (i >= line.size() || line[i] == '#') break;
    const size_t key_start = i;
    while (i < line.size() && !blank(line[i]) && line[i] != '=') ++i;
    const std::string key(line.substr(key_start, i - key_start));
    if (i >= line.size() || line[i] != '=') return Error{"", "expected Key=Value, got " + shown(key)};
    if (key.empty()) return Error{"", "missing key before '='"};
    ++i;
    std::string value;
    if (i < line.size() && line[i] == '"') {
      const size_t close = line.find('"', i + 1);
      if (close == std::string_view::npos) return Error{"", shown(key) + ": unterminated quote"};
      value = line.substr(i + 1, close - i - 1);
      i = close + 1;
      if (i < line.size() && !blank(line[i]) && line[i] != '#')
        return Error{"", shown(key) + ": text after closing quote"};
    } else {
      const size_t start = i;
      while (i < line.size() && !blank(line[i]) && line[i] != '#') ++i;
      value = line.substr(start, i - start);
    }
    pairs.push_back({key, value});
  }
  return pairs;
}

Result<Config> parse_config(std::string_view text, const std::string& origin, Config base) {
  Config c = std::move(base);
  bool database_set = false, export_set = false, log_set = false, heartbeat_set = false;
  size_t line_no = 0;
  while (!text.empty()) {
    ++line_no;
    const size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    if (line.find('\0') != std::string_view::npos)
      return Error{origin, "line " + std::to_string(line_no) + ": NUL byte"};
    auto pairs = split_pairs(line);
    const std::string where = origin + ":" + std::to_string(line_no);
    if (!pairs) return Error{where, pairs.error().what};
    for (const Pair& p : pairs.value()) {
      const std::string key = lower(p.key);
      const auto it = setters().find(key);
      if (it == setters().end()) return Error{where, "unknown key " + shown(p.key)};
      if (std::string why = it->second(c, p.value); !why.empty())
        return Error{where, shown(p.key) + "=" + shown(p.value) + ": " + why};
      database_set |= key == "database";
      export_set |= key == "exportfile";
      log_set |= key == "logfile";
      heartbeat_set |= key == "heartbeatfile";
    }
  }
  if (!database_set) c.database = c.state_dir + "/pskel.db";
  if (!export_set) c.export_file = c.state_dir + "/predictions.export";
  if (!log_set) c.log_file = c.state_dir + "/worker.log";
  if (!heartbeat_set) c.heartbeat_file = c.state_dir + "/guard.heartbeat";
  return c;
}

Result<Config> load_given_config(const std::string& given) {
  return given.empty() ? load_config(default_config_path(), /*missing_ok=*/true) : load_config(given);
}

Result<Config> load_config(const std::string& path, bool missing_ok) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT && missing_ok) return parse_config("", path);
    return Error{path, std::string("cannot open: ") + std::strerror(errno)};
  }
  constexpr size_t kMax = 1 << 20;
  std::string text;
  struct stat st;
  bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  if (ok) {
    char buf[8192];
    ssize_t got;
    while ((got = ::read(fd, buf, sizeof buf)) > 0 && text.size() <= kMax)
      text.append(buf, static_cast<size_t>(got));
    ok = got == 0 && text.size() <= kMax;
  }
  ::close(fd);
  if (!ok) return Error{path, "not a regular file of at most 1 MiB"};
  return parse_config(text, path);
}

std::string default_config_path() {
  const char* env = std::getenv("PSKEL_CONF");
  if (env && *env) return env;
  return std::string(PSKEL_SYSCONFDIR) + "/pskel.conf";
}

}  // namespace pskel::config
