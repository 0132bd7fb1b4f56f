// pskel simulate DIR: predicts the traced job's run time by replaying its dependency graph under
// a communication model fitted to the trace (core/simulate), with what-if options.
#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>

#include "commands.h"
#include "util/json_text.h"
#include "simulate/simulate.h"
#include "trace/reader.h"

namespace pskel::cli {
namespace {

namespace sim = pskel::simulate;

struct SimulateOptions {
  std::string dir;
  bool json = false;
  bool partial = false;
  sim::WhatIf what_if;
};

// JSON has no infinity: a bandwidth without a data term is null.
nlohmann::json bandwidth_json(const sim::Fit& fit, double factor) {
  if (fit.ns_per_byte <= 0) return nullptr;
  return factor * 1e9 / fit.ns_per_byte;
}

std::string bandwidth_text(const sim::Fit& fit, double factor) {
  if (fit.ns_per_byte <= 0) return "-";
  return fmt::format("{:.1f}", factor * 1e3 / fit.ns_per_byte);   // MB/s
}

bool family_used(const sim::Graph& graph, sim::Family f) {
  for (const sim::Collective& c : graph.collectives)
    if (c.family == f) return true;
  return false;
}

// The trace's summary and dependency graph, read a rank at a time: each rank's records are
// freed once the graph holds what the replay needs, so the trace is never whole in memory (at
// 16,384 ranks it was 1.8 GB of a 3.9 GB peak).
struct TraceGraph {
  trace::TraceSummary summary;
  sim::Graph graph;
};
Result<TraceGraph> read_graph(const std::string& dir, const trace::ReadOptions& options) {
  trace::SummaryBuilder summary;
  std::optional<sim::GraphBuilder> builder;
  auto read = trace::read_trace_dir(dir, options, [&](trace::RankTrace& rank) {
    if (!builder) builder.emplace(rank.header.world_size);
    summary.add(rank);
    builder->add_rank(rank);
    rank.drop_records();
  });
  if (!read) return read.error();
  if (!builder) builder.emplace(0);
  return TraceGraph{summary.finish(), builder->finish()};
}

int run_simulate(const SimulateOptions& opt) {
  auto read = read_graph(opt.dir, {});
  bool truncated = false;
  if (!read) {
    // A job that did not finish: readable without its end blocks, replayed only if asked to.
    trace::ReadOptions lenient;
    lenient.allow_truncated = true;
    auto cut = read_graph(opt.dir, lenient);
    if (!cut) return fail(cut.error().line());
    if (!opt.partial) return fail(read.error().line() + " (--partial replays what it holds)");
    read = std::move(cut);
    truncated = true;
  }
  const trace::TraceSummary summary = std::move(read.value().summary);
  sim::Graph graph = std::move(read.value().graph);
  const sim::Model fitted = sim::fit_model(graph);
  graph.drop_traced();   // the replay's arrays take its place
  const sim::Model model = sim::apply_what_if(fitted, opt.what_if);
  const sim::Prediction p = sim::replay(graph, model, opt.what_if);

  std::vector<std::string> warnings = graph.warnings;
  if (truncated)
    warnings.insert(warnings.begin(), "some rank files have no end block (the job did not finish): "
                                      "the prediction covers what the trace holds");
  if (p.forced > 0)
    warnings.push_back(fmt::format("the replay gave up waiting {} time(s) (inconsistent trace)", p.forced));
  for (const std::string& w : warnings) fmt::print(stderr, "pskel: simulate: warning: {}\n", w);

  const double traced = summary.wall_seconds;
  const double error = traced > 0 ? 100.0 * (p.predicted_seconds - traced) / traced : 0.0;
  const double path = p.compute_seconds + p.communication_seconds;
  const double compute_share = path > 0 ? p.compute_seconds / path : 0.0;

  std::vector<sim::Family> shown;
  for (size_t k = 0; k < sim::kFamilyCount; ++k) {
    const auto f = static_cast<sim::Family>(k);
    if (model[f].samples > 0 || family_used(graph, f)) shown.push_back(f);
  }
  auto factor_of = [&](sim::Family f) { return sim::family_factor(f, model.ranks); };

  if (opt.json) {
    nlohmann::json families = nlohmann::json::object();
    for (sim::Family f : shown) {
      const sim::Fit& fit = model[f];
      families[std::string(sim::family_name(f))] = {
          {"t0_seconds", fit.t0_ns * 1e-9},
          {"bandwidth_bytes_per_second", bandwidth_json(fit, factor_of(f))},
          {"f_p", factor_of(f)},
          {"r2", fit.r2},
          {"samples", fit.samples},
          {"buckets", fit.buckets},
          {"fitted", fit.fitted},
      };
    }
    const nlohmann::json out = {
        {"trace_dir", opt.dir},
        {"ranks", graph.world_size},
        {"predicted_seconds", p.predicted_seconds},
        {"wall_seconds", traced},
        {"error_percent", error},
        {"critical_path",
         {{"rank", p.critical_rank},
          {"compute_seconds", p.compute_seconds},
          {"communication_seconds", p.communication_seconds},
          {"compute_share", compute_share},
          {"rank_switches", p.rank_switches}}},
        {"rank_end_seconds", p.rank_end_seconds},
        {"model", families},
        {"rendezvous_bytes",
         std::isfinite(model.rendezvous_bytes) ? nlohmann::json(model.rendezvous_bytes) : nullptr},
        {"what_if",
         {{"cpu_scale", opt.what_if.cpu_scale},
          {"grow", opt.what_if.grow},
          {"latency_seconds", opt.what_if.latency_s >= 0 ? nlohmann::json(opt.what_if.latency_s) : nullptr},
          {"bandwidth_bytes_per_second",
           opt.what_if.bandwidth > 0 ? nlohmann::json(opt.what_if.bandwidth) : nullptr}}},
        {"graph",
         {{"calls", [&] {
             size_t n = 0;
             for (const auto& ops : graph.ops) n += ops.size();
             return n;
           }()},
          {"messages", graph.messages.size()},
          {"collectives", graph.collectives.size()},
          {"unmatched_sends", graph.unmatched_sends},
          {"unmatched_receives", graph.unmatched_receives},
          {"incomplete_collectives", graph.incomplete_collectives}}},
        {"complete", !truncated},
        {"warnings", warnings},
    };
    fmt::print("{}\n", json_text(out, 2));
    return 0;
  }

  fmt::print("trace        {} ({} ranks)\n", opt.dir, graph.world_size);
  fmt::print("traced       {:.6f} s (end of MPI_Init to the last MPI_Finalize)\n", traced);
  fmt::print("predicted    {:.6f} s ({:+.2f} % against the traced run)\n", p.predicted_seconds, error);
  if (opt.what_if.cpu_scale != 1 || opt.what_if.grow != 1 || opt.what_if.latency_s >= 0 ||
      opt.what_if.bandwidth > 0)
    fmt::print("what-if      cpu-scale {} grow {} latency {} bandwidth {}\n", opt.what_if.cpu_scale,
               opt.what_if.grow,
               opt.what_if.latency_s >= 0 ? fmt::format("{} s", opt.what_if.latency_s) : "fitted",
               opt.what_if.bandwidth > 0 ? fmt::format("{} B/s", opt.what_if.bandwidth) : "fitted");
  fmt::print("critical     ends on rank {}: compute {:.6f} s ({:.1f} %), communication {:.6f} s, "
             "{} rank switches\n",
             p.critical_rank, p.compute_seconds, 100 * compute_share, p.communication_seconds,
             p.rank_switches);
  fmt::print("graph        {} messages, {} collectives; standard sends {}\n\n",
             graph.messages.size(), graph.collectives.size(),
             std::isfinite(model.rendezvous_bytes)
                 ? fmt::format("of {} bytes and more wait for the receiver (rendezvous)",
                               model.rendezvous_bytes)
                 : "never waited for the receiver (eager)");
  fmt::print("{:<15} {:>10} {:>12} {:>5} {:>7} {:>9}\n", "family", "T0 us", "B MB/s", "f(P)",
             "R2", "samples");
  for (sim::Family f : shown) {
    const sim::Fit& fit = model[f];
    fmt::print("{:<15} {:>10.3f} {:>12} {:>5} {:>7.3f} {:>9}{}\n", sim::family_name(f),
               fit.t0_ns * 1e-3, bandwidth_text(fit, factor_of(f)), factor_of(f), fit.r2,
               fit.samples, fit.fitted ? "" : "  (from p2p)");
  }
  return 0;
}

// A number above `least` (or at least `least` when `inclusive`), with a one-line complaint.
CLI::Validator number_above(double least, bool inclusive) {
  return CLI::Validator(
      [least, inclusive](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        const bool ok = !text.empty() && *end == '\0' && std::isfinite(v) &&
                        (inclusive ? v >= least : v > least);
        if (ok) return "";
        return fmt::format("must be a number {} {}, not \"{}\"", inclusive ? ">=" : ">", least, text);
      },
      inclusive ? "NUMBER >= 0" : "NUMBER > 0");
}

}  // namespace

Subcommand add_simulate_command(CLI::App& app) {
  auto opt = std::make_shared<SimulateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "simulate", "Predict the run time by replaying the trace's dependency graph under a fitted "
                  "communication model (critical path); what-if options");
  cmd->add_option("DIR", opt->dir, "Trace directory (written by `pskel run`)")->required();
  cmd->add_flag("--json", opt->json,
                "Print JSON (predicted_seconds, wall_seconds, model: per family t0_seconds, "
                "bandwidth_bytes_per_second, r2, samples; critical_path)");
  cmd->add_option("--cpu-scale", opt->what_if.cpu_scale, "Compute takes F times as long (default 1)")
      ->check(number_above(0, false));
  cmd->add_option("--latency", opt->what_if.latency_s,
                  "Message latency T0 in seconds instead of the fitted one (collectives: f(P)·T0)")
      ->check(number_above(0, true));
  cmd->add_option("--bandwidth", opt->what_if.bandwidth,
                  "Bandwidth B in bytes per second instead of the fitted one")
      ->check(number_above(0, false));
  cmd->add_option("--grow", opt->what_if.grow,
                  "The problem grows by F: every compute segment and every message size times F")
      ->check(number_above(0, false));
  cmd->add_flag("--partial", opt->partial,
                "Accept rank files without an end block (a job that did not finish): best effort");
  return {cmd, [opt]() { return run_simulate(*opt); }};
}

}  // namespace pskel::cli
