// pskel timeline DIR -o FILE [--format html|perfetto] [--json]: the run as a timeline.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "util/json_text.h"
#include "timeline/page.h"
#include "timeline/timeline.h"
#include "trace/reader.h"
#include "trace/samples.h"

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

Subcommand add_timeline_command(CLI::App& app) {
  struct Options {
    std::string dir;
    std::string output;
    std::string format = "html";
    bool json = false;
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
  cmd->add_flag("--json", opt->json,
                "Print what was written as JSON (output, format, ranks, nodes, calls, samples)");
  return {cmd, [opt]() {
    auto trace = trace::read_trace_dir(opt->dir);
    if (!trace) return fail(trace.error().line());
    const trace::TraceSet& set = trace.value();
    const std::string run_id = set.meta.value("run_id", "");
    std::vector<std::optional<trace::SampleSeries>> samples(set.ranks.size());
    size_t ranks_with_samples = 0;
    for (size_t r = 0; r < set.ranks.size(); ++r) {
      auto series = trace::read_samples(opt->dir, static_cast<int>(r), run_id);
      if (!series) return fail(series.error().line());
      samples[r] = std::move(series).value();
      if (samples[r]) ++ranks_with_samples;
    }
    const timeline::Timeline t = timeline::build_timeline(set, samples);
    const std::string text =
        opt->format == "perfetto" ? timeline::perfetto_json(t) : timeline::timeline_page(t);
    const std::string problem = write_file_replacing(opt->output, text);
    if (!problem.empty()) return fail(fmt::format("{}: cannot write: {}", opt->output, problem));
    if (opt->json) {
      const nlohmann::json out = {
          {"output", opt->output},          {"format", opt->format},
          {"ranks", t.lanes.size()},        {"nodes", t.nodes.size()},
          {"calls", timeline::call_count(t)}, {"ranks_with_samples", ranks_with_samples},
          {"bytes_written", text.size()},
      };
      fmt::print("{}\n", json_text(out, 2));
    } else {
      fmt::print("wrote {} ({}, {} ranks, {} calls, {} bytes)\n", opt->output, opt->format,
                 t.lanes.size(), timeline::call_count(t), text.size());
    }
    return 0;
  }};
}

}  // namespace pskel::cli
