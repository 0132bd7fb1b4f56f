// pskel-instrument OUTDIR FILE... [-- COMPILER_FLAGS]: the LibTooling half of `pskel
// instrument` (core/cli/cmd_instrument.cpp parses the command line and runs this), a program
// of its own so that pskel itself does not load clang's libraries. Each source (.c, .cc, .cpp,
// .cxx) is parsed and written to OUTDIR/<its name>, with the headers among FILE that it
// includes; prints one line per file written.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "rewrite.h"

namespace {

bool is_header(const std::string& path) {
  for (const char* suffix : {".h", ".hh", ".hpp", ".hxx", ".inc"})
    if (path.ends_with(suffix)) return true;
  return false;
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
  std::vector<std::string> files, flags;
  bool after_dashes = false;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (!after_dashes && arg == "--") {
      after_dashes = true;
      continue;
    }
    (after_dashes ? flags : files).push_back(arg);
  }
  if (argc < 3 || files.empty()) return fail("usage: pskel-instrument OUTDIR FILE... [-- FLAGS]");
  const std::string outdir = argv[1];
  // Every file by its real path, named in counter keys by its file name (which must be unique:
  // the copies go side by side into OUTDIR).
  std::map<std::string, std::string> key_names;
  std::vector<std::string> sources;
  std::set<std::string> names, headers;
  for (const std::string& file : files) {
    char* real = ::realpath(file.c_str(), nullptr);
    if (real == nullptr) return fail(file + ": " + std::strerror(errno));
    const std::string path = real;
    std::free(real);
    const std::string name = std::filesystem::path(path).filename().string();
    if (!names.insert(name).second)
      return fail(file + ": a second file named " + name + " (OUTDIR holds one)");
    key_names[path] = name;
    if (is_header(path))
      headers.insert(path);
    else
      sources.push_back(path);
  }
  if (sources.empty()) return fail("no source among the files (only headers)");
  std::set<std::string> written;
  for (const std::string& source : sources) {
    auto rewritten =
        without_stderr([&] { return pskel::instrument::rewrite_source(source, key_names, flags); });
    if (!rewritten.ok()) return fail(rewritten.error().line());
    for (const auto& file : rewritten.value()) {
      if (!written.insert(file.path).second) continue;  // a header of an earlier source
      const std::string out_path = outdir + "/" + key_names.at(file.path);
      std::ofstream out(out_path, std::ios::trunc);
      out << file.text;
      out.close();
      if (!out) return fail(out_path + ": cannot write: " + std::strerror(errno));
      std::printf("%s -> %s: %zu counters\n", file.path.c_str(), out_path.c_str(),
                  file.keys.size());
    }
  }
  for (const std::string& header : headers)
    if (!written.count(header)) return fail(header + ": included by none of the sources");
  return 0;
}
