// The guard's decisions (core/guard/extend.h) and heartbeat (core/guard/heartbeat.h), and how
// job_submit's cache follows the heartbeat.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ctime>
#include <fstream>
#include <string>
#include <vector>

#include "guard/extend.h"
#include "guard/heartbeat.h"
#include "jobsubmit/cache.h"
#include "scratch_dir.h"

using namespace pskel;
using namespace pskel::guard;

namespace {

RunningJob job_at(uint32_t limit, int64_t elapsed, const std::string& comment) {
  RunningJob j;
  j.job_id = 7;
  j.time_limit_minutes = limit;
  j.elapsed_seconds = elapsed;
  j.admin_comment = comment;
  j.partition_default_minutes = 120;
  j.partition_max_minutes = 480;
  return j;
}

}  // namespace

TEST_CASE("TheLimitCommentRoundTrips") {
  const std::string unset = limit_comment(2, 7, std::nullopt);
  CHECK(unset == "pskel: time limit 2 min from prediction #7, without pskel: partition default");
  auto l = parse_limit_comment(unset + " (45s for app, ...)");
  REQUIRE(l);
  CHECK(l->limit_minutes == 2);
  CHECK(l->prediction_id == 7);
  CHECK_FALSE(l->requested_minutes);
  l = parse_limit_comment("set by admin; " + limit_comment(30, 9, 240) + " (...)");
  REQUIRE(l);  // after an administrator's own comment
  CHECK(l->requested_minutes == 240u);
  CHECK_FALSE(parse_limit_comment(""));
  CHECK_FALSE(parse_limit_comment("pskel: time limit x min from prediction #7"));
  CHECK_FALSE(parse_limit_comment("pskel: time limit 2 min from prediction #7, without pskel: soon"));
}

TEST_CASE("AJobIsExtendedOnlyNearItsLimitAndNeverPastItsCeiling") {
  const GuardSettings s{30, 0.5};
  CHECK(lead_seconds(s) == 90);
  CHECK(lead_seconds({5, 0.5}) == 30);
  const std::string c = limit_comment(10, 7, std::nullopt);
  CHECK_FALSE(decide(job_at(10, 400, c), s));  // 200 s left, more than the lead
  auto e = decide(job_at(10, 520, c), s);      // 80 s left
  REQUIRE(e);
  CHECK(e->from_minutes == 10);
  CHECK(e->to_minutes == 15);  // + half the limit
  CHECK(e->ceiling_minutes == 120);
  CHECK_FALSE(e->reached_ceiling);
  CHECK(extension_comment(*e) == "pskel guard: extended 10 -> 15 min after 520 s");
  // Near the ceiling: up to it, and not beyond.
  e = decide(job_at(100, 5950, c), s);
  REQUIRE(e);
  CHECK(e->to_minutes == 120);
  CHECK(e->reached_ceiling);
  CHECK_FALSE(decide(job_at(120, 7150, c), s));
  // The user's own --time (Policy=cap) is the ceiling, bounded by MaxTime.
  e = decide(job_at(10, 560, limit_comment(10, 7, 12)), s);
  REQUIRE(e);
  CHECK(e->to_minutes == 12);
  CHECK(decide(job_at(10, 560, limit_comment(10, 7, 9999)), s)->ceiling_minutes == 480);
  // No DefaultTime: MaxTime; neither: no ceiling.
  RunningJob j = job_at(10, 560, c);
  j.partition_default_minutes = kNoLimit;
  CHECK(decide(j, s)->ceiling_minutes == 480);
  j.partition_max_minutes = kNoLimit;
  CHECK(decide(j, s)->ceiling_minutes == kNoLimit);
  // Past the limit already (a late look): far enough ahead for two more looks.
  e = decide(job_at(1, 200, c), s);
  REQUIRE(e);
  CHECK(e->to_minutes * 60 >= 200 + 2 * 90);
  // Not pskel's.
  CHECK_FALSE(decide(job_at(10, 590, "an admin's comment"), s));
}

TEST_CASE("AJobRunningTenTimesItsLimitNeedsFewExtensions") {
  const GuardSettings s{30, 0.5};
  const std::string c = limit_comment(2, 7, std::nullopt);
  RunningJob j = job_at(2, 0, c);
  j.partition_default_minutes = kNoLimit;
  j.partition_max_minutes = kNoLimit;
  int extensions = 0;
  for (int64_t t = 0; t <= 20 * 60; t += 30) {  // looks every 30 s; the job needs 20 minutes
    j.elapsed_seconds = t;
    REQUIRE(int64_t{j.time_limit_minutes} * 60 > t);  // never past its limit
    if (auto e = decide(j, s)) {
      j.time_limit_minutes = e->to_minutes;
      ++extensions;
    }
  }
  CHECK(extensions <= 7);
}

TEST_CASE("HeartbeatSaysWhetherTheGuardRuns") {
  const std::string dir = pskel::testing::scratch_dir("guard-test");
  const std::string path = dir + "/guard.heartbeat";
  ::unlink(path.c_str());
  CHECK_FALSE(read_heartbeat(path, std::time(nullptr)).alive);
  CHECK(describe(read_heartbeat(path, std::time(nullptr)), path).starts_with("NOT running (no heartbeat"));
  REQUIRE(write_heartbeat(path, 5).ok());
  Heartbeat h = read_heartbeat(path, std::time(nullptr));
  CHECK(h.alive);
  CHECK(h.interval_seconds == 5);
  CHECK(describe(h, path).starts_with("running"));
  // Ages from the file's own time: the clock may pass a second between the write and a look.
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  h = read_heartbeat(path, st.st_mtime + 24);  // under 3 x 5 + 10 s: still
  CHECK(h.alive);
  h = read_heartbeat(path, st.st_mtime + 60);
  CHECK_FALSE(h.alive);
  CHECK(describe(h, path) == "NOT running (last look 60 s ago)");
  std::ofstream(path) << "garbage interval=5\n";
  CHECK_FALSE(read_heartbeat(path, std::time(nullptr)).present);
}

TEST_CASE("JobSubmitFollowsTheGuardsHeartbeat") {
  const std::string dir = pskel::testing::scratch_dir("guard-cache-test");
  const std::string heartbeat = dir + "/guard.heartbeat";
  ::unlink(heartbeat.c_str());
  std::vector<std::string> lines;
  jobsubmit::PredictionCache cache(dir + "/none.export", [&](const std::string& l) { lines.push_back(l); },
                                   heartbeat);
  cache.check_guard();
  CHECK_FALSE(cache.guard_alive());
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].find("no time limits are set while it is down") != std::string::npos);
  cache.check_guard();
  CHECK(lines.size() == 1);  // said once
  REQUIRE(write_heartbeat(heartbeat, 5).ok());
  cache.check_guard();
  CHECK(cache.guard_alive());
  REQUIRE(lines.size() == 2);
  CHECK(lines[1].find("time limits are set again") != std::string::npos);
  // Without a heartbeat to watch (GuardRequired=no), the guard counts as there.
  jobsubmit::PredictionCache unwatched(dir + "/none.export", nullptr);
  unwatched.check_guard();
  CHECK(unwatched.guard_alive());
}
