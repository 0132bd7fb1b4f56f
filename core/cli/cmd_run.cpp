// pskel run [-o DIR] -- LAUNCHER...: runs a command with the tracer built for its MPI
// preloaded, so every MPI rank it starts writes its trace into DIR.
#include <fmt/format.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "util/json_text.h"
#include "flavour/flavour.h"
#include "trace/format.h"

extern char** environ;

namespace pskel::cli {

namespace fs = std::filesystem;

std::string build_tree_dir(const std::string& subdir) {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? "" : (self.parent_path().parent_path() / subdir).string();
}

std::string first_holding(const std::string& name, const std::vector<std::string>& dirs) {
  std::error_code ec;
  for (const std::string& dir : dirs)
    if (!dir.empty() && fs::exists(fs::path(dir) / name, ec))
      return fs::absolute(fs::path(dir) / name, ec).string();
  return "";
}

namespace {

std::string default_trace_dir() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char name[64];
  std::strftime(name, sizeof name, "pskel-trace-%Y%m%d-%H%M%S", &tm);
  return name;
}

// Where the tracer for `flavour` is: $PSKEL_TRACER_DIR, next to this pskel in a build tree,
// or the installed library directory. "" if none has it.
std::string find_tracer(const std::string& flavour) {
  const char* env = std::getenv("PSKEL_TRACER_DIR");
  return first_holding("libpskel-trace-" + flavour + ".so",
                       {env ? env : "", build_tree_dir("tracer"), PSKEL_LIB_INSTALL_DIR});
}

int run_child(const std::vector<std::string>& command) {
  std::vector<char*> argv;
  for (const std::string& a : command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid;
  const int err = posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), environ);
  if (err != 0) return -err;
  // Ctrl-C reaches the whole process group; let the launcher decide what it means.
  struct sigaction ignore{}, old_int{}, old_term{};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGINT, &ignore, &old_int);
  sigaction(SIGTERM, &ignore, &old_term);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

Subcommand add_run_command(CLI::App& app) {
  struct Options {
    std::string dir;
    std::string mpi;
    std::string tracer;
    bool json = false;
    std::vector<std::string> command;
  };
  auto opt = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "run", "Run a command with the MPI tracer preloaded (pskel run -o DIR -- mpiexec -n 4 ./app)");
  cmd->add_option("-o,--output", opt->dir, "Trace directory to create (default: pskel-trace-<date>-<time>)");
  cmd->add_option("--mpi", opt->mpi, "MPI of the program, if detection picks the wrong one")
      ->check(CLI::IsMember({"mpich", "openmpi"}));
  cmd->add_option("--tracer", opt->tracer, "Tracer library to preload (overrides --mpi)")
      ->check(CLI::ExistingFile);
  cmd->add_flag("--json", opt->json, "After the run, print JSON (keys: trace_dir, exit_code, mpi, tracer)");
  cmd->add_option("COMMAND", opt->command, "The launcher and program, after --")->required();
  return {cmd, [opt]() {
    std::string flavour = opt->mpi;
    std::string tracer = opt->tracer;
    if (tracer.empty()) {
      if (flavour.empty()) {
        const char* path = std::getenv("PATH");
        flavour = flavour::detect_flavour(opt->command, path ? path : "/usr/bin:/bin");
      }
      if (flavour.empty())
        return fail(fmt::format("{}: no program linked against MPICH or Open MPI on this command "
                                "line (give --mpi mpich|openmpi)", opt->command[0]));
      tracer = find_tracer(flavour);
      if (tracer.empty())
        return fail(fmt::format("libpskel-trace-{}.so: not found (set PSKEL_TRACER_DIR, or give "
                                "--tracer)", flavour));
    }
    const std::string dir = opt->dir.empty() ? default_trace_dir() : opt->dir;
    std::error_code ec;
    if (fs::exists(dir, ec) && !fs::is_empty(dir, ec))
      return fail(fmt::format("{}: already exists and is not empty (choose another -o)", dir));
    fs::create_directories(dir, ec);
    if (ec) return fail(fmt::format("{}: cannot create: {}", dir, ec.message()));
    const std::string abs_dir = fs::absolute(dir).string();

    std::string preload = tracer;
    if (const char* old = std::getenv("LD_PRELOAD"); old && *old) preload += std::string(":") + old;
    setenv("LD_PRELOAD", preload.c_str(), 1);
    setenv("PSKEL_TRACE_DIR", abs_dir.c_str(), 1);
    const int code = run_child(opt->command);
    if (code < 0) return fail(fmt::format("{}: cannot run: {}", opt->command[0], std::strerror(-code)));

    const bool traced = fs::exists(fs::path(abs_dir) / trace::kMetaFileName, ec);
    if (!traced)
      fmt::print(stderr, "pskel: {}: no trace was written (did the program call MPI_Init?)\n", dir);
    if (opt->json) {
      const nlohmann::json out = {{"trace_dir", abs_dir}, {"exit_code", code},
                                  {"mpi", flavour},       {"tracer", tracer},
                                  {"traced", traced}};
      fmt::print("{}\n", json_text(out, 2));
    } else if (traced) {
      fmt::print(stderr, "pskel: trace written to {}\n", dir);
    }
    return code;
  }};
}

}  // namespace pskel::cli
