#include "trace/samples.h"

#include <algorithm>
#include <charconv>
#include <limits>

#include <fmt/format.h>

#include "util/file_read.h"

namespace pskel::trace {
namespace {

// A day of samples every millisecond is ~600 MB; anything larger is not a sample file.

std::vector<std::string_view> split_words(std::string_view line) {
  std::vector<std::string_view> words;
  size_t at = 0;
  while (at < line.size()) {
    const size_t space = line.find(' ', at);
    const size_t end = space == std::string_view::npos ? line.size() : space;
    words.push_back(line.substr(at, end - at));
    at = end + 1;
  }
  return words;
}

std::optional<int64_t> parse_int(std::string_view word) {
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), value);
  if (ec != std::errc() || end != word.data() + word.size() || word.empty()) return std::nullopt;
  return value;
}

std::string check_header(std::string_view line, int rank, std::string_view run_id,
                         SampleSeries& out) {
  const auto words = split_words(line);
  if (words.size() != 5 || words[0] != kSamplesMagic) return "not a pskel sample file";
  const auto version = parse_int(words[1]);
  if (!version || *version < 1 || *version > kSamplesVersion)
    return fmt::format("unsupported sample file version {} (this pskel reads 1 to {})", words[1],
                       kSamplesVersion);
  out.version = static_cast<int>(*version);
  if (parse_int(words[2]) != rank)
    return fmt::format("holds rank {}, expected rank {}", words[2], rank);
  if (words[3] != run_id)
    return fmt::format("from another run (run id {}, meta.json has {})", words[3], run_id);
  const auto interval = parse_int(words[4]);
  if (!interval || *interval <= 0 || *interval > 3600 * 1000) return "corrupt: bad interval";
  out.interval_ms = static_cast<int>(*interval);
  return "";
}

// The time of the latest line of any kind (lines of all kinds are in one time order), or the
// lowest int64 before the first.
int64_t latest_t_ns(const SampleSeries& out) {
  int64_t latest = std::numeric_limits<int64_t>::min();
  if (!out.samples.empty()) latest = out.samples.back().t_ns;
  if (!out.run_delay.empty()) latest = std::max(latest, out.run_delay.back().t_ns);
  if (!out.probes.empty()) latest = std::max(latest, out.probes.back().t_ns);
  return latest;
}

// "d <t_ns> <run_delay_ns>": the run-queue delay alone, written between samples when it grew.
// "p <t_ns> <probe_ns>": a calibration probe. Both are a time and a value >= 0.
std::string parse_time_value_line(std::string_view line, SampleSeries& out) {
  const bool delay_line = line[0] == 'd';
  const auto words = split_words(line);
  if (words.size() != 3)
    return fmt::format("has {} words, expected {}, time and {}", words.size(), line[0],
                       delay_line ? "delay" : "ns");
  const auto t = parse_int(words[1]);
  const auto value = parse_int(words[2]);
  if (!t || !value || *t < 0 || *value < 0)
    return fmt::format("bad {} line '{}'", delay_line ? "run-queue delay" : "probe", line);
  if (*t < latest_t_ns(out)) return "goes back in time";
  if (delay_line)
    out.run_delay.push_back({*t, *value});
  else
    out.probes.push_back({*t, *value});
  return "";
}

std::string parse_sample_line(std::string_view line, SampleSeries& out) {
  const auto words = split_words(line);
  if (words.size() != static_cast<size_t>(out.columns()))
    return fmt::format("has {} values, expected {}", words.size(), out.columns());
  int64_t v[kSampleColumns];
  std::fill(v, v + kSampleColumns, -1);   // a version 1 file has no run-queue delay
  for (int i = 0; i < out.columns(); ++i) {
    const auto value = parse_int(words[static_cast<size_t>(i)]);
    if (!value || *value < -1) return fmt::format("bad value '{}'", words[static_cast<size_t>(i)]);
    v[i] = *value;
  }
  if (v[0] < latest_t_ns(out)) return "goes back in time";
  out.samples.push_back({v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]});
  if (v[7] >= 0) out.run_delay.push_back({v[0], v[7]});
  return "";
}

}  // namespace

Result<SampleSeries> parse_samples(std::string_view text, const std::string& name, int rank,
                                   std::string_view run_id) {
  SampleSeries out;
  out.rank = rank;
  size_t at = 0;
  int line_number = 0;
  while (at < text.size()) {
    const size_t newline = text.find('\n', at);
    if (newline == std::string_view::npos) break;  // cut short by a killed process: dropped
    const std::string_view line = text.substr(at, newline - at);
    at = newline + 1;
    ++line_number;
    std::string problem;
    if (line_number == 1) {
      problem = check_header(line, rank, run_id, out);
    } else if (line.starts_with("#")) {
      constexpr std::string_view kCost = "# sampler_cpu_ns ";
      if (line.starts_with(kCost)) out.sampler_cpu_ns = parse_int(line.substr(kCost.size())).value_or(-1);
    } else if ((line.starts_with("d ") && out.version >= 2) ||
               (line.starts_with("p ") && out.version >= 3)) {
      problem = parse_time_value_line(line, out);
    } else {
      problem = parse_sample_line(line, out);
    }
    if (!problem.empty()) {
      if (line_number == 1) return Error{name, problem};
      return Error{name, fmt::format("corrupt: line {} {}", line_number, problem)};
    }
  }
  if (line_number == 0) return Error{name, "empty or cut short before its header line"};
  return out;
}

Result<std::optional<SampleSeries>> read_samples(const std::string& dir, int rank,
                                                 std::string_view run_id) {
  const std::string path = fmt::format("{}/{}{}", dir, kSamplesFilePrefix, rank);
  auto text = read_regular_file_if_exists(path, kMaxSampleFileBytes);
  if (!text) return text.error();
  if (!text.value()) return std::optional<SampleSeries>{};
  auto series = parse_samples(*text.value(), path, rank, run_id);
  if (!series) return series.error();
  return std::optional<SampleSeries>{std::move(series).value()};
}

int64_t footprint_bytes(const std::vector<ResourceSample>& samples) {
  int64_t first = -1, largest = -1;
  size_t known = 0;
  for (const ResourceSample& sample : samples) {
    if (sample.rss_bytes < 0) continue;
    if (known++ == 0) first = sample.rss_bytes;
    largest = std::max(largest, sample.rss_bytes);
  }
  return known < 2 ? -1 : largest - first;
}

}  // namespace pskel::trace
