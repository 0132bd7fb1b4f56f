#include "worker/slurm_text.h"

#include "config/config.h"

namespace pskel::worker {

std::optional<int64_t> parse_duration(std::string_view text) {
  int64_t days = 0;
  const size_t dash = text.find('-');
  if (dash != std::string_view::npos) {
    uint64_t d = 0;
    if (!config::parse_u64(text.substr(0, dash), &d)) return std::nullopt;
    days = static_cast<int64_t>(d);
    text.remove_prefix(dash + 1);
  }
  int64_t parts[3];
  int n = 0;
  while (true) {
    const size_t colon = text.find(':');
    uint64_t v = 0;
    if (n == 3 || !config::parse_u64(text.substr(0, colon), &v) || v > 1000000) return std::nullopt;
    parts[n++] = static_cast<int64_t>(v);
    if (colon == std::string_view::npos) break;
    text.remove_prefix(colon + 1);
  }
  if (n < 2) return std::nullopt;
  const int64_t hms = n == 3 ? parts[0] * 3600 + parts[1] * 60 + parts[2] : parts[0] * 60 + parts[1];
  return days * 86400 + hms;
}

std::string field(std::string_view record, std::string_view key) {
  size_t at = 0;
  while ((at = record.find(key, at)) != std::string_view::npos) {
    const bool starts_field = at == 0 || record[at - 1] == ' ' || record[at - 1] == '\n';
    const size_t eq = at + key.size();
    if (starts_field && eq < record.size() && record[eq] == '=') {
      const size_t end = record.find_first_of(" \n", eq + 1);
      return std::string(record.substr(eq + 1, end == std::string_view::npos ? end : end - eq - 1));
    }
    at = eq;
  }
  return "";
}

std::vector<exportfile::Partition> parse_partitions(std::string_view text) {
  std::vector<exportfile::Partition> out;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    exportfile::Partition p;
    p.name = field(line, "PartitionName");
    if (!exportfile::valid_word(p.name)) continue;
    const std::string max = field(line, "MaxTime");
    if (const auto seconds = parse_duration(max)) p.max_minutes = static_cast<uint32_t>(*seconds / 60);
    p.is_default = field(line, "Default") == "YES";
    out.push_back(std::move(p));
  }
  return out;
}

std::optional<JobEnd> parse_job(std::string_view record) {
  JobEnd end;
  end.state = field(record, "JobState");
  if (end.state.empty()) return std::nullopt;
  if (const auto run = parse_duration(field(record, "RunTime")))
    end.runtime_seconds = static_cast<double>(*run);
  const auto count = [&](std::string_view key, uint32_t* out) {
    uint64_t n = 0;
    if (config::parse_u64(field(record, key), &n) && n <= 0xffffffffu) *out = static_cast<uint32_t>(n);
  };
  count("NumTasks", &end.ntasks);
  count("NumNodes", &end.nodes);
  count("Restarts", &end.restarts);
  return end;
}

}  // namespace pskel::worker
