// pskel-instrument OUTDIR SRC... [-- COMPILER_FLAGS]: the LibTooling half of `pskel
// instrument` (core/cli/cmd_instrument.cpp parses the command line and runs this), a program
// of its own so that pskel itself does not load clang's libraries. Writes OUTDIR/<name of SRC>
// for each source and prints one line per file: its counters.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "rewrite.h"

namespace {

std::string basename_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// clang prints its own summary ("2 errors generated.", "Error while processing ...") on
// stderr; the error is one line of ours instead.
template <class F>
auto without_stderr(F&& run) {
  std::fflush(stderr);
  const int saved = ::dup(2);
  const int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (saved >= 0 && null >= 0) ::dup2(null, 2);
  auto result = run();
  if (saved >= 0) {
    ::dup2(saved, 2);
    ::close(saved);
  }
  if (null >= 0) ::close(null);
  return result;
}

int fail(const std::string& line) {
  std::fprintf(stderr, "pskel: instrument: %s\n", line.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> sources, flags;
  bool after_dashes = false;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (!after_dashes && arg == "--") {
      after_dashes = true;
      continue;
    }
    (after_dashes ? flags : sources).push_back(arg);
  }
  if (argc < 3 || sources.empty()) return fail("usage: pskel-instrument OUTDIR SRC... [-- FLAGS]");
  const std::string outdir = argv[1];
  for (const std::string& source : sources) {
    auto rewritten = without_stderr(
        [&] { return pskel::instrument::rewrite_file(source, basename_of(source), flags); });
    if (!rewritten.ok()) return fail(rewritten.error().line());
    const std::string out_path = outdir + "/" + basename_of(source);
    std::ofstream out(out_path, std::ios::trunc);
    out << rewritten.value().text;
    out.close();
    if (!out) return fail(out_path + ": cannot write: " + std::strerror(errno));
    std::printf("%s -> %s: %zu counters\n", source.c_str(), out_path.c_str(),
                rewritten.value().keys.size());
  }
  return 0;
}
