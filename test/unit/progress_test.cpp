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

// A file standing in for stderr off a terminal (a pipe or a log file).
class TempStream {
 public:
  TempStream() : f_(std::tmpfile()) { REQUIRE(f_ != nullptr); }
  ~TempStream() { std::fclose(f_); }
  TempStream(const TempStream&) = delete;
  TempStream& operator=(const TempStream&) = delete;
  std::FILE* get() const { return f_; }
  std::string contents() const {
    std::fflush(f_);
    std::rewind(f_);
    std::string text;
    char buf[256];
    while (size_t n = std::fread(buf, 1, sizeof buf, f_)) text.append(buf, n);
    return text;
  }

 private:
  std::FILE* f_;
};

}  // namespace

TEST_CASE("off a terminal a successful command prints one line per phase, at its end") {
  TempStream out;
  {
    Progress p("pskel test", true, out.get());
    CHECK_FALSE(Progress::is_terminal(out.get()));
    p.phase("read");
    p.detail("2 ranks");
    p.phase("merge");
    for (int i = 0; i < 1000; ++i) p.detail("step " + std::to_string(i));  // one line, not 1000
    p.phase("compile");
    CHECK(out.contents().empty());  // nothing before the command is done
    p.done();
  }
  CHECK(without_times(out.contents()) == std::vector<std::string>{
                                             "pskel test: read T s (2 ranks)",
                                             "pskel test: merge T s (step 999)",
                                             "pskel test: compile T s"});
}

TEST_CASE("off a terminal a command that fails prints no progress") {
  TempStream out;
  {
    Progress p("pskel test", true, out.get());
    p.phase("read");
    p.phase("merge");  // fails here: no done()
  }
  CHECK(out.contents().empty());
}

TEST_CASE("progress that is not wanted prints nothing") {
  TempStream out;
  {
    Progress p("pskel test", false, out.get());
    p.phase("read");
    p.done();
  }
  CHECK(out.contents().empty());
}
