// Progress lines off a terminal: one line per phase, with its detail, written only when the
// command succeeds; a failing command's stderr holds its one line of error alone.
#include <doctest/doctest.h>

#include <cstdio>
#include <sstream>
#include <vector>
#include <string>

#include "progress/progress.h"

using pskel::progress::Progress;

namespace {

// The lines of `text` with each time ("0.00 s") replaced by "T s". Not std::regex: GCC 12's
// -Wmaybe-uninitialized misfires inside it under the sanitizers.
std::vector<std::string> without_times(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const size_t s = line.find(" s");
    const size_t start = line.rfind(' ', s - 1);
    if (s != std::string::npos && start != std::string::npos)
      line.replace(start + 1, s - start - 1, "T");
    lines.push_back(line);
  }
  return lines;
}

std::string contents(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string text;
  char buf[256];
  while (size_t n = std::fread(buf, 1, sizeof buf, f)) text.append(buf, n);
  return text;
}

}  // namespace

TEST_CASE("off a terminal a successful command prints one line per phase, at its end") {
  std::FILE* f = std::tmpfile();
  REQUIRE(f != nullptr);
  {
    Progress p("pskel test", true, f);
    CHECK_FALSE(Progress::is_terminal(f));
    p.phase("read");
    p.detail("2 ranks");
    p.phase("merge");
    for (int i = 0; i < 1000; ++i) p.detail("step " + std::to_string(i));  // one line, not 1000
    p.phase("compile");
    CHECK(contents(f).empty());  // nothing before the command is done
    p.done();
  }
  CHECK(without_times(contents(f)) == std::vector<std::string>{
                                          "pskel test: read T s (2 ranks)",
                                          "pskel test: merge T s (step 999)",
                                          "pskel test: compile T s"});
  std::fclose(f);
}

TEST_CASE("off a terminal a command that fails prints no progress") {
  std::FILE* f = std::tmpfile();
  REQUIRE(f != nullptr);
  {
    Progress p("pskel test", true, f);
    p.phase("read");
    p.phase("merge");  // fails here: no done()
  }
  CHECK(contents(f).empty());
  std::fclose(f);
}

TEST_CASE("progress that is not wanted prints nothing") {
  std::FILE* f = std::tmpfile();
  REQUIRE(f != nullptr);
  {
    Progress p("pskel test", false, f);
    p.phase("read");
    p.done();
  }
  CHECK(contents(f).empty());
  std::fclose(f);
}
