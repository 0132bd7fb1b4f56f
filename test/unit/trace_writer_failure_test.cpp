// TraceWriter's failure paths: refusing to create files it must not create, and a write that
// fails part-way (the file size limit standing in for a full disk).
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "test_support.h"
#include "trace/reader.h"
#include "trace_writer.h"

using namespace pskel::test;
using pskel::tracer::TraceWriter;
namespace tr = pskel::trace;

namespace {

std::string file_text(const std::string& path) {
  const auto bytes = read_bytes(path);
  return std::string(bytes.begin(), bytes.end());
}

// Runs `body` in a forked child and returns its exit status (or 128 + signal).
template <class Body>
int in_child(Body body) {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) ::_exit(body());
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
  }
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 255;
}

// Child exit codes of the file-size-limit test, so that a failure says which check failed.
const char* const kLimitChecks[] = {
    "ok",
    "setrlimit failed",
    "open failed although the header fits",
    "close() returned true after a failed write",
    "failed() is false",
    "error() does not name the path",
    "error() does not say 'cannot write'",
    "dropped() is 0",
    "records() + dropped() != records appended",
    "records() is not below the records appended",
};

}  // namespace

TEST_CASE("opening a path in a nonexistent directory fails with an error naming the path") {
  TempDir dir;
  const std::string path = dir.file("no/such/dir/rank.0.pskt");
  TraceWriter w;
  CHECK_FALSE(w.open(path, make_header(), 0));
  CHECK_FALSE(w.is_open());
  CHECK(w.failed());
  CHECK(contains(w.error(), path));
  CHECK(contains(w.error(), "cannot create"));
  CHECK(contains(w.error(), "No such file or directory"));
  append(w, make_entry(tr::FunctionId::MPI_Send, 1, 0));
  CHECK(w.dropped() == 1);
  CHECK_FALSE(w.close(0, 0, 0));
}

TEST_CASE("opening an existing file fails and leaves the file as it was") {
  TempDir dir;
  const std::string path = dir.file("rank.0.pskt");
  write_text(path, "precious contents");
  TraceWriter w;
  CHECK_FALSE(w.open(path, make_header(), 0));
  CHECK(contains(w.error(), path));
  CHECK(contains(w.error(), "File exists"));
  CHECK(file_text(path) == "precious contents");
}

TEST_CASE("a symlink at the path is not followed: open fails and the target is untouched") {
  TempDir dir;
  const std::string target = dir.file("target");
  const std::string path = dir.file("rank.0.pskt");

  SUBCASE("symlink to an existing file") {
    write_text(target, "do not overwrite");
    REQUIRE(::symlink(target.c_str(), path.c_str()) == 0);
    TraceWriter w;
    CHECK_FALSE(w.open(path, make_header(), 0));
    CHECK(contains(w.error(), path));
    CHECK(file_text(target) == "do not overwrite");
  }
  SUBCASE("dangling symlink") {
    REQUIRE(::symlink(target.c_str(), path.c_str()) == 0);
    TraceWriter w;
    CHECK_FALSE(w.open(path, make_header(), 0));
    CHECK(contains(w.error(), path));
    struct stat st;
    CHECK(::lstat(target.c_str(), &st) != 0);  // the target was not created
  }
}

TEST_CASE("a write failing part-way (file size limit) makes close() fail and drops records") {
  TempDir dir;
  const std::string path = dir.file("rank.0.pskt");
  constexpr rlim_t kLimit = 4096;  // the header and a few blocks fit, then writes fail
  constexpr uint64_t kRecords = 1000;

  const int code = in_child([&]() -> int {
    ::signal(SIGXFSZ, SIG_IGN);  // get EFBIG from write() instead of being killed
    const struct rlimit lim{kLimit, kLimit};
    if (::setrlimit(RLIMIT_FSIZE, &lim) != 0) return 1;
    TraceWriter w;
    if (!w.open(path, make_header(), 0)) return 2;
    for (uint64_t i = 0; i < kRecords; ++i)
      append(w, make_entry(tr::FunctionId::MPI_Send, static_cast<int64_t>(i), 3));
    if (w.close(5, 0, 0)) return 3;
    if (!w.failed()) return 4;
    if (!contains(w.error(), path)) return 5;
    if (!contains(w.error(), "cannot write")) return 6;
    if (w.dropped() == 0) return 7;
    if (w.records() + w.dropped() != kRecords) return 8;
    if (w.records() >= kRecords) return 9;
    return 0;
  });
  INFO("child: " << (code >= 0 && code <= 9 ? kLimitChecks[code] : "died (exit code " +
                                                                     std::to_string(code) + ")"));
  REQUIRE(code == 0);

  // What reached the disk stops at the limit, without an end block: the reader says so.
  const auto bytes = read_bytes(path);
  CHECK(bytes.size() <= kLimit);
  CHECK(bytes.size() > sizeof(tr::FileHeader));
  auto trace = tr::read_rank_file(path);
  REQUIRE_FALSE(trace.ok());
  CHECK(contains(trace.error().line(), path));
  CHECK(contains(trace.error().what, "truncated"));
}

TEST_CASE("open() fails when even the file header cannot be written") {
  TempDir dir;
  const std::string path = dir.file("rank.0.pskt");
  const int code = in_child([&]() -> int {
    ::signal(SIGXFSZ, SIG_IGN);
    const struct rlimit lim{100, 100};  // less than the 256-byte header
    if (::setrlimit(RLIMIT_FSIZE, &lim) != 0) return 1;
    TraceWriter w;
    if (w.open(path, make_header(), 0)) return 2;
    if (!contains(w.error(), "cannot write")) return 3;
    if (!contains(w.error(), path)) return 4;
    append(w, make_entry(tr::FunctionId::MPI_Send, 1, 0));
    if (w.dropped() != 1) return 5;
    if (w.close(0, 0, 0)) return 6;
    return 0;
  });
  CHECK(code == 0);
}
