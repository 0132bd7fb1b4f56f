// pskel instrument SRC... -o OUTDIR [-- COMPILER_FLAGS], --cflags, --libs: seed 001's counters
// put into a program's C/C++ sources (docs/model.md). The rewriting is pskel-instrument's
// (core/instrument, clang's LibTooling), run from here so that pskel itself never loads clang.
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>

#include "commands.h"

namespace pskel::cli {
namespace {

namespace fs = std::filesystem;

struct InstrumentOptions {
  std::vector<std::string> sources;
  std::vector<std::string> flags;  // after --: split off by main(), never parsed as pskel's
  std::string output;
  bool cflags = false;
  bool libs = false;
};

std::string counters_dir(const char* installed, const std::string& name) {
  return first_holding(name, {build_tree_dir("counters"), installed});
}

int run_instrument(const InstrumentOptions& opt) {
  if (opt.cflags || opt.libs) {
    const std::string header = counters_dir(PSKEL_INCLUDE_INSTALL_DIR, "pskel_counters.h");
    const std::string library = counters_dir(PSKEL_LIB_INSTALL_DIR, "libpskel-counters.a");
    if (header.empty() || library.empty())
      return fail("instrument: the counter runtime is not installed (pskel_counters.h, "
                  "libpskel-counters.a)");
    if (opt.cflags) fmt::print("-I{}\n", fs::path(header).parent_path().string());
    if (opt.libs) fmt::print("{}\n", library);
    return 0;
  }
  const std::vector<std::string>& sources = opt.sources;
  const std::vector<std::string>& flags = opt.flags;
  if (sources.empty() || opt.output.empty()) {
    fail("instrument: give the sources and -o OUTDIR (or --cflags, --libs)");
    return 2;
  }
  const std::string helper =
      first_holding("pskel-instrument", {build_tree_dir("instrument"), PSKEL_LIB_INSTALL_DIR});
  if (helper.empty())
    return fail("instrument: this pskel was built without it (it needs clang 14's LibTooling: "
                "libclang-14-dev, libclang-cpp14-dev and llvm-14-dev, then a rebuild)");
  if (::mkdir(opt.output.c_str(), 0755) != 0 && errno != EEXIST)
    return fail(fmt::format("{}: cannot create: {}", opt.output, std::strerror(errno)));
  std::error_code ec;
  const fs::path out = fs::canonical(opt.output, ec);
  if (ec || !fs::is_directory(out)) return fail(opt.output + ": not a directory");
  for (const std::string& source : sources) {
    const fs::path path = fs::canonical(source, ec);
    if (ec) return fail(fmt::format("{}: {}", source, ec.message()));
    if (path.parent_path() == out)
      return fail(fmt::format("{}: OUTDIR is this source's own directory; the original would be "
                              "overwritten",
                              source));
  }
  std::vector<std::string> args = {helper, opt.output};
  args.insert(args.end(), sources.begin(), sources.end());
  args.push_back("--");
  args.insert(args.end(), flags.begin(), flags.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  ::execv(helper.c_str(), argv.data());
  return fail(fmt::format("instrument: cannot run {}: {}", helper, std::strerror(errno)));
}

}  // namespace

Subcommand add_instrument_command(CLI::App& app, std::vector<std::string> compiler_flags) {
  auto opt = std::make_shared<InstrumentOptions>();
  opt->flags = std::move(compiler_flags);
  CLI::App* cmd = app.add_subcommand(
      "instrument",
      "Put run-time counters into C/C++ sources (loops, branches, MPI calls and bytes) for "
      "`pskel model`: SRC... -o OUTDIR [-- COMPILER_FLAGS]");
  cmd->add_option("SRC", opt->sources, "C or C++ sources (then -- and the program's flags)");
  cmd->add_option("-o,--output", opt->output,
                  "Write the instrumented copies here, with the same file names");
  cmd->add_flag("--cflags", opt->cflags,
                "Print what to add to the program's compile line (the counters' header)");
  cmd->add_flag("--libs", opt->libs,
                "Print what to add to the program's link line (the counter runtime)");
  return {cmd, [opt]() { return run_instrument(*opt); }};
}

}  // namespace pskel::cli
