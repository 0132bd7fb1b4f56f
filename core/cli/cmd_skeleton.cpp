// pskel skeleton DIR -o OUT [--scale K|auto]: trace -> merged -> folded -> loop tree ->
// OUT/skeleton.c (core/skeleton), compiled with the trace's MPI into OUT/skeleton, described in
// OUT/skeleton.json. A thin shell over the pipeline.
#include <fmt/format.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <vector>
#include <nlohmann/json.hpp>

#include "child/child.h"
#include "commands.h"
#include "progress/progress.h"
#include "util/json_text.h"
#include "flavour/flavour.h"
#include "skeleton/skeleton.h"
#include "trace/reader.h"
#include "trace_loops.h"

namespace pskel::cli {
namespace {

namespace fs = std::filesystem;

bool write_file(const fs::path& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  return static_cast<bool>(out);
}

std::string first_line(const std::string& text) {
  const size_t start = text.find_first_not_of(" \n");
  if (start == std::string::npos) return "";
  const size_t end = text.find('\n', start);
  return text.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

// Why a trace directory that read_trace_dir refused or whose meta.json says it is incomplete
// cannot give a skeleton: a job that did not finish gets an error saying so.
Error incomplete_trace(const std::string& dir, const Result<trace::TraceSet>& read) {
  if (read) {
    return Error{dir, "meta.json says the trace is incomplete (a rank failed to write or "
                      "dropped records): a skeleton needs a complete trace"};
  }
  trace::ReadOptions lenient;
  lenient.allow_truncated = true;
  std::string unfinished;  // the first rank file without an end block
  auto partial = trace::read_trace_dir(dir, lenient, [&](trace::RankTrace& rank) {
    if (!rank.complete && unfinished.empty()) unfinished = rank.source;
    rank.drop_records();
  });
  if (partial && !unfinished.empty())
    return Error{dir, fmt::format("the traced job did not finish ({} has no end block: "
                                  "killed, or it never reached MPI_Finalize); a skeleton needs a "
                                  "complete trace",
                                  unfinished)};
  return read.error();
}

bool marked_incomplete(const trace::TraceSet& trace) {
  const auto& meta = trace.meta;
  return meta.is_object() && meta.contains("complete") && meta["complete"] == false;
}

struct SkeletonOptions {
  std::string dir, out, scale = "1", cc, gaps = "typical";
  double min_seconds = skeleton::Options{}.min_seconds;
  bool json = false;
  bool compile = true;
};

int run_skeleton(const SkeletonOptions& opt) {
  int64_t k = 1;
  bool auto_scale = false;
  if (opt.scale == "auto") {
    auto_scale = true;
  } else {
    char* end = nullptr;
    const long long v = std::strtoll(opt.scale.c_str(), &end, 10);
    if (opt.scale.empty() || *end != '\0' || v < 1) {
      fmt::print(stderr, "pskel skeleton: --scale must be a whole number >= 1 or \"auto\", not \"{}\"\n",
                 opt.scale);
      return 2;
    }
    k = v;
  }

  const auto start = std::chrono::steady_clock::now();
  progress::Progress progress_line("pskel skeleton", progress::wanted(opt.json));
  // The trace is read three times, a window of ranks at a time, so that a job's trace is never
  // held whole: by the merge, by the loop tree, and by the skeleton's analysis.
  const auto show_rank = [&](const trace::RankTrace& rank) {  // a window of ranks at a time
    const int32_t n = rank.header.rank + 1;
    if (n % 1024 == 0 || n == rank.header.world_size)
      progress_line.detail(fmt::format("{} of {} ranks", n, rank.header.world_size));
  };
  TraceLoopsHooks hooks;
  hooks.check_read = [&](const Result<trace::TraceSet>& read) -> std::optional<Error> {
    if (read && !marked_incomplete(read.value())) return std::nullopt;
    return incomplete_trace(opt.dir, read);
  };
  hooks.phase = [&](TraceLoopsPhase phase, const TraceLoops& so_far) {
    if (phase == TraceLoopsPhase::kLoopCompression)
      progress_line.detail(fmt::format("{} ranks, {} events", so_far.trace.ranks.size(),
                                       so_far.merged.events.size()));
    progress_line.phase(std::string(phase_name(phase)));
  };
  hooks.rank_read = show_rank;
  auto stages = trace_loops(opt.dir, hooks);
  if (!stages) return fail(stages.error().line());
  const TraceLoops& loops = stages.value();
  const trace::TraceSet& trace = loops.trace;
  progress_line.phase("analyse");
  skeleton::Generator generator(trace, loops.merged, loops.tree);
  {  // what the reread returns repeats each rank's header and samples: not kept
    auto reread = trace::reread_trace_dir(opt.dir, loops.records_of, [&](trace::RankTrace& rank) {
      generator.add(rank);
      rank.drop_records();
      show_rank(rank);
    });
    if (!reread) return fail(reread.error().line());
  }
  progress_line.phase("generate");

  skeleton::Options options;
  options.scale = k;
  options.auto_scale = auto_scale;
  options.min_seconds = opt.min_seconds;
  options.typical_gaps = opt.gaps == "typical";
  std::string name;
  if (trace.meta.is_object() && trace.meta.contains("args") && trace.meta["args"].is_array()) {
    for (const auto& a : trace.meta["args"]) {
      if (!a.is_string()) continue;
      std::string word = a.get<std::string>();
      if (name.empty()) word = fs::path(word).filename().string();
      name += (name.empty() ? "" : " ") + word;
      if (name.size() > 200) break;
    }
  }
  options.name = name.empty() ? opt.dir : name;
  auto generated = generator.finish(options);
  if (!generated) return fail(generated.error().line());
  skeleton::Skeleton& sk = generated.value();

  std::error_code ec;
  fs::create_directories(opt.out, ec);
  if (ec || !fs::is_directory(opt.out)) return fail(fmt::format("{}: cannot create the directory", opt.out));
  const fs::path out = fs::absolute(opt.out, ec);
  if (!write_file(out / "skeleton.c", sk.source))
    return fail(fmt::format("{}: cannot write", (out / "skeleton.c").string()));
  for (const skeleton::RuntimeFile& f : skeleton::runtime_files())
    if (!write_file(out / std::string(f.name), f.text))
      return fail(fmt::format("{}: cannot write", (out / std::string(f.name)).string()));

  const std::string mpi = trace.meta.is_object() && trace.meta.contains("mpi") && trace.meta["mpi"].is_string()
                              ? trace.meta["mpi"].get<std::string>()
                              : "unknown";
  std::string cc = opt.cc;
  if (cc.empty()) cc = mpi == "mpich" ? "mpicc.mpich" : mpi == "openmpi" ? "mpicc.openmpi" : "mpicc";
  std::vector<std::string> command = {cc, "-O2", "-o", (out / "skeleton").string()};
  for (const std::string& unit : skeleton::compile_units()) command.push_back((out / unit).string());
  command.push_back("-lm");
  std::string shown;
  for (const std::string& w : command) shown += (shown.empty() ? "" : " ") + w;

  nlohmann::json desc = sk.description;
  desc["source"] = (out / "skeleton.c").string();
  desc["binary"] = (out / "skeleton").string();
  desc["compiler"] = cc;
  desc["compile_command"] = shown;
  desc["name"] = options.name;

  if (opt.compile) {
    progress_line.phase("compile");
    const char* path_env = std::getenv("PATH");
    if (flavour::resolve_program(cc, path_env ? path_env : "/usr/bin:/bin").empty())
      return fail(fmt::format("MPI compiler {} not found (the trace was made with MPI \"{}\"; install "
                              "its development package or give --cc)",
                              cc, mpi));
    // A binary left by an earlier build in OUT must not pass for this one's.
    fs::remove(out / "skeleton", ec);
    child::Options compile;
    compile.search_path = true;
    compile.stop_on_interrupt = true;
    compile.timeout_seconds = 600;
    const child::Result compiled = child::run(command, compile);
    if (!compiled.started || compiled.interrupted) return fail(compiled.failure());
    if (compiled.timed_out) return fail(cc + ": " + compiled.failure());
    write_file(out / "compile.log", compiled.out + compiled.err);
    if (compiled.exit_code != 0)
      return fail(fmt::format("{}: {} failed ({}); see {}", (out / "skeleton.c").string(), cc,
                              first_line(compiled.err + compiled.out), (out / "compile.log").string()));
    if (!fs::is_regular_file(out / "skeleton", ec))
      return fail(fmt::format("{}: {} exited 0 but wrote no {}; see {}", (out / "skeleton.c").string(),
                              cc, (out / "skeleton").string(), (out / "compile.log").string()));
  } else {
    desc["binary"] = nullptr;
  }
  desc["generate_seconds"] =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!write_file(out / "skeleton.json", json_text(desc, 2) + "\n"))
    return fail(fmt::format("{}: cannot write", (out / "skeleton.json").string()));
  progress_line.done();

  if (opt.json) {
    fmt::print("{}\n", json_text(desc, 2));
    return 0;
  }
  fmt::print("skeleton   {}\n", (out / "skeleton.c").string());
  if (opt.compile) fmt::print("binary     {}\n", (out / "skeleton").string());
  fmt::print("scale      {}{}\n", sk.scale, auto_scale ? " (auto)" : "");
  fmt::print("traced     {:.3f} s, skeleton about {:.3f} s\n", desc["traced_seconds"].get<double>(),
             desc["estimated_skeleton_seconds"].get<double>());
  fmt::print("scaled     {} loop(s); {} group(s) rewritten for deadlock freedom\n",
             desc["scaled_loops"].size(), desc["rewritten_groups"].size());
  for (const auto& w : desc["warnings"]) fmt::print("warning    {}\n", w.get<std::string>());
  return 0;
}

}  // namespace

Subcommand add_skeleton_command(CLI::App& app) {
  auto opt = std::make_shared<SkeletonOptions>();
  CLI::App* cmd = app.add_subcommand("skeleton", "Build the performance skeleton of a trace");
  cmd->footer(
      "Writes OUT/skeleton.c, the runtime it is built with, OUT/skeleton (compiled with the\n"
      "trace's MPI: mpicc.mpich or mpicc.openmpi) and OUT/skeleton.json.\n"
      "--scale K: the dominant loops run 1/K of their iterations; auto: about a tenth of the\n"
      "traced time, at least --min-seconds (3 s). --json keys: scale, source, binary, scaled_loops,\n"
      "rewritten_groups, reordered_groups, substitutions, warnings, traced_seconds,\n"
      "estimated_skeleton_seconds, trace_noise, ranks, mpi.");
  cmd->add_option("DIR", opt->dir, "Trace directory (written by `pskel run`)")->required();
  cmd->add_option("-o,--output", opt->out, "Output directory")->required()->type_name("OUT");
  cmd->add_option("--scale", opt->scale, "K (a whole number >= 1) or auto")->type_name("K|auto");
  cmd->add_option("--min-seconds", opt->min_seconds,
                  "With --scale auto: the shortest skeleton run wanted, in seconds (default 3)")
      ->check(CLI::PositiveNumber)
      ->type_name("S");
  cmd->add_option("--gaps", opt->gaps,
                  "Compute between calls: typical (default: bursts of interference in the traced "
                  "run left out) or mean (every instance, as traced)")
      ->check(CLI::IsMember({"typical", "mean"}))
      ->type_name("typical|mean");
  cmd->add_option("--cc", opt->cc, "MPI C compiler (default: from the trace's MPI)")->type_name("CC");
  cmd->add_flag("--no-compile", [opt](int64_t) { opt->compile = false; }, "Write the sources only");
  cmd->add_flag("--json", opt->json, "Print skeleton.json");
  return {cmd, [opt]() { return run_skeleton(*opt); }};
}

}  // namespace pskel::cli
