#include "meta_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <locale>
#include <sstream>

#include "trace/format.h"
#include "util/text.h"

namespace pskel::tracer {
namespace {

std::string quoted(const std::string& s) { return "\"" + json_escape(s) + "\""; }

std::string read_file(const char* path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::string executable() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
}

std::string args_json() {
  const std::string cmdline = read_file("/proc/self/cmdline");
  std::string out = "[";
  size_t start = 0;
  for (size_t i = 0; i < cmdline.size(); ++i) {
    if (cmdline[i] != '\0') continue;
    if (start > 0) out += ", ";
    out += quoted(cmdline.substr(start, i - start));
    start = i + 1;
  }
  return out + "]";
}

const char* flavour_name(uint32_t flavour) {
  switch (static_cast<trace::Flavour>(flavour)) {
    case trace::Flavour::mpich: return "mpich";
    case trace::Flavour::openmpi: return "openmpi";
    default: return "unknown";
  }
}

void append_u_escape(std::string& out, unsigned char c) {
  char esc[8];
  std::snprintf(esc, sizeof esc, "\\u%04x", c);
  out += esc;
}

}  // namespace

std::string json_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default: {
        const size_t n = c < 0x20 ? 0 : utf8_sequence_length(std::string_view(s).substr(i));
        if (n == 0) {
          append_u_escape(out, c);  // a control character, or a byte that is not UTF-8 (Latin-1)
        } else {
          out.append(s, i, n);
          i += n - 1;
        }
      }
    }
  }
  return out;
}

bool write_meta(const MetaInfo& info) {
  std::ostringstream j;
  j.imbue(std::locale::classic());  // JSON numbers, whatever locale the traced program set
  j.precision(17);
  const char* job = std::getenv("SLURM_JOB_ID");
  j << "{\n  \"format\": \"pskel-trace\",\n  \"version\": " << trace::kFormatVersion
    << ",\n  \"run_id\": " << quoted(info.run_id)
    << ",\n  \"complete\": " << (info.complete ? "true" : "false")
    << ",\n  \"job_id\": " << (job ? quoted(job) : "null")
    << ",\n  \"ranks\": " << info.ranks
    << ",\n  \"mpi\": " << quoted(flavour_name(info.flavour))
    << ",\n  \"executable\": " << quoted(executable())
    << ",\n  \"args\": " << args_json()
    << ",\n  \"start_realtime_ns\": " << info.start_realtime_ns
    << ",\n  \"end_realtime_ns\": " << info.end_realtime_ns
    << ",\n  \"init_entry_ns\": " << info.init_entry_ns
    << ",\n  \"records\": " << info.total_records << ",\n  \"hosts\": [";
  for (int r = 0; r < info.ranks; ++r) {
    const char* host = info.hosts.data() + static_cast<size_t>(r) * 64;
    j << (r ? ", " : "") << quoted(std::string(host, strnlen(host, 64)));
  }
  const auto numbers = [&j](const std::vector<double>& values) {
    j << "[";
    for (size_t r = 0; r < values.size(); ++r) {
      j << (r ? ", " : "");
      if (std::isfinite(values[r])) {
        j << values[r];
      } else {
        j << "null";  // JSON has no inf or nan
      }
    }
    j << "]";
  };
  j << "],\n  \"work_ns_per_unit\": ";
  numbers(info.work_ns_per_unit);
  if (!info.work_ns_per_unit_at_finalize.empty()) {
    j << ",\n  \"work_ns_per_unit_at_finalize\": ";
    numbers(info.work_ns_per_unit_at_finalize);
  }
  if (!info.work_ns_per_unit_in_run.empty()) {
    j << ",\n  \"work_ns_per_unit_in_run\": ";
    numbers(info.work_ns_per_unit_in_run);
  }
  if (!info.stream_ns_per_byte.empty()) {
    j << ",\n  \"stream_ns_per_byte\": ";
    numbers(info.stream_ns_per_byte);
  }
  if (!info.stream_ns_per_byte_in_run.empty()) {
    j << ",\n  \"stream_ns_per_byte_in_run\": ";
    numbers(info.stream_ns_per_byte_in_run);
  }
  if (!info.stream_kind.empty()) j << ",\n  \"stream_kind\": " << quoted(info.stream_kind);
  if (!info.finalize_write_ns.empty()) {
    j << ",\n  \"finalize_write_ns\": ";
    numbers(info.finalize_write_ns);
  }
  j << "\n}\n";

  const std::string text = j.str();
  const std::string path = info.dir + "/" + trace::kMetaFileName;
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const bool closed = ::close(fd) == 0;
  return written && closed && std::rename(tmp.c_str(), path.c_str()) == 0;
}

}  // namespace pskel::tracer
