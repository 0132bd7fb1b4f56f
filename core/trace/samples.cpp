#include "trace/samples.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include <fmt/format.h>

namespace pskel::trace {
namespace {

// A day of samples every millisecond is ~600 MB; anything larger is not a sample file.
constexpr int64_t kMaxSampleFileBytes = int64_t{1} << 30;

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
  if (parse_int(words[1]) != kSamplesVersion)
    return fmt::format("unsupported sample file version {} (this pskel reads {})", words[1],
                       kSamplesVersion);
  if (parse_int(words[2]) != rank)
    return fmt::format("holds rank {}, expected rank {}", words[2], rank);
  if (words[3] != run_id)
    return fmt::format("from another run (run id {}, meta.json has {})", words[3], run_id);
  const auto interval = parse_int(words[4]);
  if (!interval || *interval <= 0 || *interval > 3600 * 1000) return "corrupt: bad interval";
  out.interval_ms = static_cast<int>(*interval);
  return "";
}

std::string parse_sample_line(std::string_view line, SampleSeries& out) {
  const auto words = split_words(line);
  if (words.size() != kSampleColumns)
    return fmt::format("has {} values, expected {}", words.size(), kSampleColumns);
  int64_t v[kSampleColumns];
  for (int i = 0; i < kSampleColumns; ++i) {
    const auto value = parse_int(words[static_cast<size_t>(i)]);
    if (!value || *value < -1) return fmt::format("bad value '{}'", words[static_cast<size_t>(i)]);
    v[i] = *value;
  }
  if (!out.samples.empty() && v[0] < out.samples.back().t_ns) return "goes back in time";
  out.samples.push_back({v[0], v[1], v[2], v[3], v[4], v[5], v[6]});
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
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    if (errno == ENOENT) return std::optional<SampleSeries>{};
    return Error{path, errno == ELOOP ? "is a symbolic link (refused)" : std::strerror(errno)};
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Error{path, "not a regular file"};
  }
  if (st.st_size > kMaxSampleFileBytes) {
    ::close(fd);
    return Error{path, fmt::format("too large ({} bytes)", st.st_size)};
  }
  std::string text(static_cast<size_t>(st.st_size), '\0');
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::read(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  text.resize(done);
  auto series = parse_samples(text, path, rank, run_id);
  if (!series) return series.error();
  return std::optional<SampleSeries>{std::move(series).value()};
}

}  // namespace pskel::trace
