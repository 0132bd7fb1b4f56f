// pskel info DIR [--json]: what a trace holds.
#include <fmt/format.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "util/json_text.h"
#include "util/text.h"
#include "trace/reader.h"

namespace pskel::cli {
namespace {

// "0-3, 8, 10-11": ranks in order, runs written as ranges.
std::string rank_ranges(const std::vector<int>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    out += (out.empty() ? "" : ", ") +
           (j == i ? std::to_string(ranks[i]) : fmt::format("{}-{}", ranks[i], ranks[j]));
    i = j + 1;
  }
  return out;
}

}  // namespace

Subcommand add_info_command(CLI::App& app) {
  struct Options {
    std::string dir;
    bool json = false;
  };
  auto opt = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("info", "Summarise a trace: ranks, events, calls per MPI function");
  cmd->add_option("DIR", opt->dir, "Trace directory (written by `pskel run`)")->required();
  cmd->add_flag("--json", opt->json, "Print JSON (keys: ranks, events, events_per_rank, functions, wall_seconds, "
                "cpu_wait_fraction, hosts: host -> its ranks)");
  return {cmd, [opt]() {
    // A rank's records are summed up and freed as it is read: a window of ranks in memory.
    trace::SummaryBuilder summary;
    auto trace = trace::read_trace_dir(opt->dir, {}, [&](trace::RankTrace& rank) {
      summary.add(rank);
      rank.drop_records();
    });
    if (!trace) return fail(trace.error().line());
    const trace::TraceSummary s = summary.finish();
    const nlohmann::json& meta = trace.value().meta;
    nlohmann::json hosts = nlohmann::json::object();
    for (const auto& [host, ranks] : s.hosts) hosts[host] = ranks;
    if (opt->json) {
      nlohmann::json functions = nlohmann::json::object();
      for (const auto& [name, calls] : s.functions) functions[name] = calls;
      const nlohmann::json out = {
          {"trace_dir", opt->dir},         {"ranks", s.ranks},
          {"events", s.events},            {"events_per_rank", s.events_per_rank},
          {"functions", functions},        {"wall_seconds", s.wall_seconds},
          {"bytes", s.bytes},              {"mpi", meta.value("mpi", "")},
          {"executable", meta.value("executable", "")},
          {"complete", meta.value("complete", false)},
          {"cpu_wait_fraction", s.run_delay_fraction},
          {"hosts", hosts},
      };
      fmt::print("{}\n", json_text(out, 2));
      return 0;
    }
    fmt::print("trace       {}\n", opt->dir);
    fmt::print("program     {}\n", meta.value("executable", "?"));
    fmt::print("mpi         {}\n", meta.value("mpi", "?"));
    fmt::print("ranks       {}\n", s.ranks);
    for (const auto& [host, ranks] : s.hosts)
      fmt::print("{:<12}{} ({} rank{}: {})\n", s.hosts.size() > 1 ? "  host" : "host", one_line(host, 64),
                 ranks.size(), ranks.size() == 1 ? "" : "s", rank_ranges(ranks));
    fmt::print("events      {} ({:.1f} per rank)\n", s.events,
               s.ranks ? static_cast<double>(s.events) / s.ranks : 0.0);
    fmt::print("wall        {:.3f} s\n", s.wall_seconds);
    fmt::print("bytes       {}\n", s.bytes);
    const auto& ranks = trace.value().ranks;
    if (std::any_of(ranks.begin(), ranks.end(), [](const auto& r) { return !r.run_delay.empty(); })) {
      const double worst = *std::max_element(s.run_delay_fraction.begin(), s.run_delay_fraction.end());
      // The node's other load: taken out of the compute gaps (trace/gaps.h), worth knowing.
      fmt::print("cpu wait    {:.1f} % of the run at most (a rank waiting for a CPU{})\n", 100 * worst,
                 worst > 0.05 ? ": the node was busy while traced" : "");
    }
    fmt::print("\n");
    fmt::print("{:<28} {:>12}\n", "function", "calls");
    for (const auto& [name, calls] : s.functions) fmt::print("{:<28} {:>12}\n", name, calls);
    return 0;
  }};
}

}  // namespace pskel::cli
