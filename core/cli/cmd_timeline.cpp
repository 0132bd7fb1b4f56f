// pskel timeline DIR -o FILE [--format html|perfetto] [--json]: the run as a timeline.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <optional>
#include <cstring>
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "util/json_text.h"
#include "timeline/page.h"
#include "timeline/timeline.h"
#include "trace/reader.h"
#include "trace/samples.h"
#include "util/text.h"

namespace pskel::cli {

std::string write_file_replacing(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".tmp";
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return std::strerror(errno);
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string reason = n < 0 ? std::strerror(errno) : "short write";
      ::close(fd);
      ::unlink(temporary.c_str());
      return reason;
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0 || ::rename(temporary.c_str(), path.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    ::unlink(temporary.c_str());
    return reason;
  }
  return "";
}

namespace {

// "0-15,100,200-203" as its ranges [first, last]; nullopt unless every item is a rank or a
// range a-b with a <= b (ranks below 2^24). Not expanded: the count is checked first.
std::optional<std::vector<std::pair<int, int>>> parse_rank_list(const std::string& text) {
  std::vector<std::pair<int, int>> out;
  size_t at = 0;
  const auto number = [&](long& value) {
    const size_t begin = at;
    value = 0;
    while (at < text.size() && text[at] >= '0' && text[at] <= '9' && value < (1L << 24))
      value = value * 10 + (text[at++] - '0');
    return at > begin && value < (1L << 24);
  };
  while (true) {
    long first = 0, last = 0;
    if (!number(first)) return std::nullopt;
    last = first;
    if (at < text.size() && text[at] == '-') {
      ++at;
      if (!number(last) || last < first) return std::nullopt;
    }
    out.emplace_back(static_cast<int>(first), static_cast<int>(last));
    if (at == text.size()) break;
    if (text[at++] != ',') return std::nullopt;
  }
  return out;
}

// The ranks of the ranges, ascending without repeats, or nullopt if they are more than `limit`
// ("0-16777215" is refused without taking 64 MB).
std::optional<std::vector<int>> ranks_of(std::vector<std::pair<int, int>> ranges, size_t limit) {
  std::sort(ranges.begin(), ranges.end());
  std::vector<int> out;
  int next = 0;  // the lowest rank not yet listed
  for (auto [first, last] : ranges) {
    first = std::max(first, next);
    if (first > last) continue;
    if (out.size() + static_cast<size_t>(last - first + 1) > limit) return std::nullopt;
    for (int r = first; r <= last; ++r) out.push_back(r);
    next = last + 1;
  }
  return out;
}

}  // namespace

Subcommand add_timeline_command(CLI::App& app) {
  struct Options {
    std::string dir;
    std::string output;
    std::string format = "html";
    bool json = false;
    std::string ranks;
    size_t max_lanes = timeline::PageOptions{}.max_lanes;
  };
  auto opt = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "timeline", "Draw a trace as a timeline: per rank states over time, per node CPU and memory");
  cmd->add_option("DIR", opt->dir, "Trace directory (written by `pskel run`)")->required();
  cmd->add_option("-o,--output", opt->output, "File to write (HTML page or trace-event JSON)")
      ->required();
  cmd->add_option("--format", opt->format,
                  "html: a self-contained page; perfetto: Chrome trace-event JSON for "
                  "ui.perfetto.dev and chrome://tracing")
      ->check(CLI::IsMember({"html", "perfetto"}));
  cmd->add_option("--ranks", opt->ranks,
                  "With more ranks than --max-lanes: the ranks whose calls the page draws, "
                  "e.g. 0-15,4096 (default: 0-15); all ranks are drawn in groups above them")
      ->type_name("LIST");
  cmd->add_option("--max-lanes", opt->max_lanes,
                  "Most ranks whose every call the page draws (default 256); a job of more is "
                  "drawn in groups of ranks, and the calls of the --ranks")
      ->check(CLI::Range(size_t{1}, size_t{4096}));
  cmd->add_flag("--json", opt->json,
                "Print what was written as JSON (output, format, ranks, nodes, calls, samples)");
  return {cmd, [opt]() {
    timeline::PageOptions page;
    page.max_lanes = opt->max_lanes;
    if (!opt->ranks.empty()) {
      auto ranges = parse_rank_list(opt->ranks);
      if (!ranges)
        return usage_error(fmt::format("--ranks {}: not a list of ranks and ranges (0-15,4096)",
                                       one_line(opt->ranks, 80)));
      auto ranks = ranks_of(std::move(*ranges), opt->max_lanes);
      if (!ranks)
        return usage_error(fmt::format("--ranks {}: more ranks than --max-lanes ({})",
                                       one_line(opt->ranks, 80), opt->max_lanes));
      page.ranks = std::move(*ranks);
    }
    // A rank's records become its lane's calls and are freed as it is read: the trace is never
    // whole in memory (at 16,384 ranks it was two thirds of the peak).
    timeline::TimelineBuilder builder;
    std::optional<Error> samples_error;
    size_t ranks_with_samples = 0;
    auto trace = trace::read_trace_dir(opt->dir, {}, [&](trace::RankTrace& rank) {
      std::optional<trace::SampleSeries> series;
      if (!samples_error) {
        auto read = trace::read_samples(opt->dir, rank.header.rank, trace::run_id(rank.header));
        if (read)
          series = std::move(read).value();
        else
          samples_error = read.error();
      }
      if (series) ++ranks_with_samples;
      builder.add_rank(rank, series ? &*series : nullptr);
      rank.drop_records();
    });
    if (!trace) return fail(trace.error().line());
    if (samples_error) return fail(samples_error->line());
    const timeline::Timeline t = builder.finish(trace.value().meta);
    const std::string text =
        opt->format == "perfetto" ? timeline::perfetto_json(t) : timeline::timeline_page(t, page);
    const std::string problem = write_file_replacing(opt->output, text);
    if (!problem.empty()) return fail(fmt::format("{}: cannot write: {}", opt->output, problem));
    // Perfetto's JSON holds every rank: it has its own way to fold threads away.
    const timeline::PageLayout layout =
        opt->format == "html" ? timeline::page_layout(t, page) : timeline::PageLayout{};
    if (opt->json) {
      const nlohmann::json out = {
          {"output", opt->output},          {"format", opt->format},
          {"ranks", t.lanes.size()},        {"nodes", t.nodes.size()},
          {"calls", timeline::call_count(t)}, {"ranks_with_samples", ranks_with_samples},
          {"bytes_written", text.size()},   {"groups", layout.groups},
          {"group_size", layout.group_size}, {"ranks_drawn", layout.lanes},
      };
      fmt::print("{}\n", json_text(out, 2));
    } else if (layout.groups > 0) {
      fmt::print("wrote {} ({}, {} ranks in {} groups of {}, the calls of {} of them, {} bytes)\n",
                 opt->output, opt->format, t.lanes.size(), layout.groups, layout.group_size,
                 layout.lanes.size(), text.size());
    } else {
      fmt::print("wrote {} ({}, {} ranks, {} calls, {} bytes)\n", opt->output, opt->format,
                 t.lanes.size(), timeline::call_count(t), text.size());
    }
    return 0;
  }};
}

}  // namespace pskel::cli
