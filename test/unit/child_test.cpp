// Child processes (core/child): capture, exit codes, time limits, interrupts, exec failures, and
// that nothing a child started in its process group outlives it.
#include <doctest/doctest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "child/child.h"

using namespace pskel;

namespace {

// Whether process `pid` is gone (or a zombie nobody reaped yet), waiting up to two seconds.
bool ends(pid_t pid) {
  for (int i = 0; i < 200; ++i) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string pid_field, name, state;
    if (!(stat >> pid_field >> name >> state) || state == "Z") return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

}  // namespace

TEST_CASE("ChildOutputAndExitCodeAreCaptured") {
  child::Options o;
  o.as = child::Identity{::geteuid(), ::getegid(), ""};
  o.env = {"PATH=/usr/bin:/bin", "X=1"};
  child::Result r = child::run({"/bin/sh", "-c", "echo out; echo err >&2; echo $X; exit 3"}, o);
  CHECK(r.started);
  CHECK(r.exit_code == 3);
  CHECK(r.out == "out\n1\n");
  CHECK(r.err == "err\n");
  CHECK(r.failure() == "exit 3: err");
  CHECK(r.seconds > 0);
  o.max_output = 10;
  r = child::run({"/bin/sh", "-c", "yes | head -c 100000"}, o);
  CHECK(r.exit_code == 0);
  CHECK(r.out.size() == 10);
}

TEST_CASE("ChildIsKilledWithItsGroupAfterTheTimeout") {
  child::Options o;
  o.timeout_seconds = 1;
  const auto t0 = std::chrono::steady_clock::now();
  const child::Result r = child::run({"/bin/sh", "-c", "sleep 30 & echo $!; sleep 30"}, o);
  CHECK(r.timed_out);
  CHECK(r.failure() == "did not finish within 1 s (killed)");
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10));
  const pid_t background = std::stoi(r.out);
  CHECK(ends(background));
}

TEST_CASE("ChildLeftoversInItsGroupAreKilledWhenItExits") {
  const child::Result r = child::run({"/bin/sh", "-c", "sleep 30 & echo $!"}, {});
  CHECK(r.exit_code == 0);
  CHECK(ends(std::stoi(r.out)));
}

TEST_CASE("ProgramsThatCannotRunAreNotStarted") {
  child::Options o;
  child::Result r = child::run({"/nonexistent/prog"}, o);
  CHECK_FALSE(r.started);
  CHECK(r.failure() == "cannot run: /nonexistent/prog: No such file or directory");
  r = child::run({"relative"}, o);
  CHECK_FALSE(r.started);
  CHECK(r.failure() == "cannot run: not an absolute path: relative");
  o.search_path = true;
  r = child::run({"pskel-no-such-program"}, o);
  CHECK_FALSE(r.started);
  CHECK(r.failure() == "cannot run: pskel-no-such-program: No such file or directory");
  ::setenv("PSKEL_CHILD_TEST", "inherited", 1);  // without Options::env, the caller's environment
  r = child::run({"sh", "-c", "echo $PSKEL_CHILD_TEST"}, o);
  CHECK(r.out == "inherited\n");
  o.cwd = "/nonexistent";
  r = child::run({"sh", "-c", "true"}, o);
  CHECK_FALSE(r.started);
  CHECK(r.failure().find("cannot run: cannot chdir") == 0);
}

TEST_CASE("AnInterruptOfTheCallerKillsTheChild") {
  struct sigaction before{}, after{};
  ::sigaction(SIGINT, nullptr, &before);
  child::Options o;
  o.stop_on_interrupt = true;
  const auto t0 = std::chrono::steady_clock::now();
  child::Result r = child::run({"/bin/sh", "-c", "kill -INT $PPID; sleep 30"}, o);
  CHECK(r.interrupted);
  CHECK_FALSE(r.timed_out);
  CHECK(r.failure() == "interrupted");
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10));
  ::sigaction(SIGINT, nullptr, &after);  // the caller's handler is back
  CHECK((after.sa_handler == before.sa_handler));
}

// Issue 22: the failure line was cut at 300 bytes inside a UTF-8 character, and every JSON
// writer it reached (the store, pskel db list --json) then threw.
TEST_CASE("AFailureLineCutInsideAUtf8CharacterStaysValidText") {
  child::Result r;
  r.started = true;
  r.exit_code = 1;
  r.err = std::string(293, 'e') + "\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9 and more\nsecond line";
  const std::string line = r.failure();
  CHECK(line.starts_with("exit 1: eee"));
  CHECK(line.find("second line") == std::string::npos);
  CHECK(nlohmann::json(line).dump().size() > 300);  // dump throws on invalid UTF-8
}

// Issue 17: a skeleton that printed its result and hangs in MPI_Finalize is given up in seconds.
TEST_CASE("AChildThatPrintedItsDoneLineHasAGraceToExit") {
  child::Options o;
  o.timeout_seconds = 60;
  o.done_line = "result:";
  o.exit_grace_seconds = 0.5;
  const child::Result hung =
      child::run({"/bin/sh", "-c", "echo starting; printf 'result: 42'; sleep 0.2; echo; sleep 60"}, o);
  CHECK(hung.killed_after_done);
  CHECK_FALSE(hung.timed_out);
  CHECK(hung.out == "starting\nresult: 42\n");
  CHECK(hung.done_seconds >= 0.2);   // the line counts once it is complete
  CHECK(hung.seconds < 5);
  const child::Result quick = child::run({"/bin/sh", "-c", "echo result: 1; sleep 0.1"}, o);
  CHECK_FALSE(quick.killed_after_done);
  CHECK(quick.exit_code == 0);
  CHECK(quick.done_seconds >= 0);
  // Not at the start of a line: not the done line.
  o.timeout_seconds = 1;
  const child::Result other = child::run({"/bin/sh", "-c", "echo no result: 1; sleep 30"}, o);
  CHECK(other.timed_out);
  CHECK(other.done_seconds < 0);
}
