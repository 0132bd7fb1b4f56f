// The prediction export (format, parse, atomic write), job_submit's policy and its in-memory
// cache: what slurmctld relies on.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <string>
#include <vector>

#include "export/export.h"
#include "jobsubmit/cache.h"
#include "jobsubmit/policy.h"
#include "scratch_dir.h"

using namespace pskel;
using exportfile::Data;

namespace {

Data sample() {
  Data d;
  d.partitions = {{"batch", 1440, true}, {"debug", 30, false}, {"long", exportfile::kUnlimited, false}};
  d.entries = {{1000, 4, "batch", "lu", 125.25, 7}, {1000, 4, "debug", "lu", 60, 8},
               {1001, 4, "batch", "lu", 999.5, 9}, {1000, 16, "batch", "script:00ff00ff00ff00ff", 3600, 10}};
  return d;
}

std::string scratch_dir() { return pskel::testing::scratch_dir("export-test"); }

void write_text(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".t";
  std::ofstream(tmp, std::ios::binary) << text;
  REQUIRE(::rename(tmp.c_str(), path.c_str()) == 0);
}

}  // namespace

TEST_CASE("ExportRoundTrips") {
  const Data d = sample();
  const std::string text = exportfile::format(d);
  CHECK(text.starts_with("pskel-export 1\nP batch 1440 default\n"));
  auto back = exportfile::parse(text, "x");
  REQUIRE_MESSAGE(back.ok(), back.error().line());
  REQUIRE(back.value().entries.size() == d.entries.size());
  CHECK(back.value().entries[0].predicted_seconds == 125.25);
  CHECK(back.value().entries[3].app == "script:00ff00ff00ff00ff");
  CHECK(back.value().partitions[2].max_minutes == exportfile::kUnlimited);
  CHECK(back.value().partitions[0].is_default);
  CHECK(exportfile::format(back.value()) == text);
}

TEST_CASE("EmptyExportIsValid") {
  auto back = exportfile::parse(exportfile::format(Data{}), "x");
  REQUIRE(back.ok());
  CHECK(back.value().entries.empty());
}

TEST_CASE("EveryTruncationOfAnExportIsRejected") {
  const std::string text = exportfile::format(sample());
  for (size_t n = 0; n < text.size(); ++n) {
    CAPTURE(n);
    CHECK_FALSE(exportfile::parse(text.substr(0, n), "x").ok());
  }
}

TEST_CASE("EveryFlippedBitOfAnExportIsRejected") {
  const std::string text = exportfile::format(sample());
  for (size_t i = 0; i < text.size(); ++i)
    for (int bit = 0; bit < 8; ++bit) {
      std::string bad = text;
      bad[i] = static_cast<char>(bad[i] ^ (1 << bit));
      CAPTURE(i);
      CHECK_FALSE(exportfile::parse(bad, "x").ok());
    }
}

TEST_CASE("ExportErrorsNameTheLine") {
  auto r = exportfile::parse("pskel-export 1\nX nonsense\n", "/var/lib/pskel/predictions.export");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().line() == "/var/lib/pskel/predictions.export: line 2: unknown record");
  CHECK(exportfile::parse("garbage\n", "f").error().what.find("not a pskel export") != std::string::npos);
  CHECK(exportfile::parse("pskel-export 1\n", "f").error().what.find("truncated") != std::string::npos);
}

TEST_CASE("WriteAtomicReplacesTheFile") {
  const std::string path = scratch_dir() + "/predictions.export";
  REQUIRE(exportfile::write_atomic(path, sample()).ok());
  auto text = exportfile::read_file(path);
  REQUIRE(text.ok());
  CHECK(exportfile::parse(text.value(), path).value().entries.size() == 4);
  REQUIRE(exportfile::write_atomic(path, Data{}).ok());
  CHECK(exportfile::parse(exportfile::read_file(path).value(), path).value().entries.empty());
  CHECK_FALSE(exportfile::write_atomic("/nonexistent/dir/x", Data{}).ok());
}

TEST_CASE("LimitIsPredictionWithMarginAndPadRoundedUpWithinThePartition") {
  using jobsubmit::limit_minutes;
  const jobsubmit::Limits l{0.2, 60, 2.0};
  CHECK(limit_minutes(100, l, jobsubmit::kInfinite) == 3);  // 100*1.2+60 = 180 s
  CHECK(limit_minutes(101, l, jobsubmit::kInfinite) == 4);  // 181.2 s
  CHECK(limit_minutes(0, jobsubmit::Limits{0, 0, 2}, jobsubmit::kInfinite) == 1);
  CHECK(limit_minutes(36000, l, 60) == 60);
  CHECK(limit_minutes(36000, l, jobsubmit::kNoVal) == 721);
  CHECK(limit_minutes(1e300, l, jobsubmit::kInfinite) < jobsubmit::kNoVal);
}

TEST_CASE("PolicyUnsetOnlyKeepsAUsersLimit") {
  const jobsubmit::Limits l{0.2, 60, 2.0};
  auto d = jobsubmit::decide(config::Policy::UnsetOnly, 100, l, jobsubmit::kNoVal, 30);
  CHECK(d.change);
  CHECK(d.limit == 3);
  CHECK_FALSE(jobsubmit::decide(config::Policy::UnsetOnly, 100, l, 600, 30).change);
  CHECK_FALSE(jobsubmit::decide(config::Policy::UnsetOnly, 100, l, jobsubmit::kInfinite, 30).change);
}

TEST_CASE("PolicyCapLowersOnlyLimitsAbovePredictionTimesFactor") {
  const jobsubmit::Limits l{0.2, 60, 2.0};
  auto d = jobsubmit::decide(config::Policy::Cap, 100, l, 600, jobsubmit::kInfinite);
  CHECK(d.change);
  CHECK(d.limit == 3);
  CHECK_FALSE(jobsubmit::decide(config::Policy::Cap, 100, l, 3, jobsubmit::kInfinite).change);
  // 200 s = prediction x 2: not above, kept.
  CHECK_FALSE(jobsubmit::decide(config::Policy::Cap, 120, l, 4, jobsubmit::kInfinite).change);
  CHECK(jobsubmit::decide(config::Policy::Cap, 100, l, jobsubmit::kInfinite, 30).change);
  CHECK(jobsubmit::decide(config::Policy::Cap, 100, l, jobsubmit::kNoVal, 30).change);
}

TEST_CASE("PolicyOffNeverChanges") {
  CHECK_FALSE(jobsubmit::decide(config::Policy::Off, 100, {}, jobsubmit::kNoVal, 30).change);
}

TEST_CASE("SnapshotFindsByUserApplicationTasksAndPartition") {
  const jobsubmit::Snapshot s(sample());
  REQUIRE(s.find(1000, "lu", 4, "batch"));
  CHECK(s.find(1000, "lu", 4, "batch")->predicted_seconds == 125.25);
  CHECK(s.find(1000, "lu", 4, "batch")->prediction_id == 7);
  CHECK(s.find(1001, "lu", 4, "batch")->prediction_id == 9);  // another user's own prediction
  CHECK(s.find(1002, "lu", 4, "batch") == nullptr);           // nobody else's
  CHECK(s.find(1000, "lu", 8, "batch") == nullptr);
  CHECK(s.find(1000, "lu", 4, "long") == nullptr);
  CHECK(s.find(1000, "l", 4, "ubatch") == nullptr);  // keys are not ambiguous
  CHECK(s.default_partition() == "batch");
  CHECK(s.partition_max("debug") == 30);
  CHECK(s.partition_max("nope") == exportfile::kUnlimited);
}

TEST_CASE("CacheLoadsTheExportAndFollowsItsChanges") {
  const std::string path = scratch_dir() + "/cache.export";
  ::unlink(path.c_str());
  std::vector<std::string> log;
  jobsubmit::PredictionCache cache(path, [&](const std::string& l) { log.push_back(l); });
  cache.reload_if_changed();
  CHECK(cache.snapshot()->size() == 0);
  CHECK(log.size() == 1);  // "not there yet", once
  cache.reload_if_changed();
  CHECK(log.size() == 1);

  REQUIRE(exportfile::write_atomic(path, sample()).ok());
  cache.reload_if_changed();
  CHECK(cache.snapshot()->size() == 4);

  Data two;
  two.entries = {{5, 1, "p", "a", 1, 1}, {6, 1, "p", "a", 2, 2}};
  REQUIRE(exportfile::write_atomic(path, two).ok());
  cache.reload_if_changed();
  CHECK(cache.snapshot()->size() == 2);
}

TEST_CASE("CorruptOrTruncatedExportIsIgnoredWithOneLogLine") {
  const std::string path = scratch_dir() + "/corrupt.export";
  REQUIRE(exportfile::write_atomic(path, sample()).ok());
  std::vector<std::string> log;
  jobsubmit::PredictionCache cache(path, [&](const std::string& l) { log.push_back(l); });
  cache.reload_if_changed();
  REQUIRE(cache.snapshot()->size() == 4);
  log.clear();

  const std::string text = exportfile::format(sample());
  write_text(path, text.substr(0, text.size() / 2));
  cache.reload_if_changed();
  cache.reload_if_changed();
  cache.poll();
  cache.reload_if_changed();
  CHECK(cache.snapshot()->size() == 4);  // the last good version stays
  REQUIRE(log.size() == 1);
  CHECK(log[0].find("truncated") != std::string::npos);
  CHECK(log[0].find("ignored") != std::string::npos);

  write_text(path, "\x7f" "ELF garbage\n");
  cache.reload_if_changed();
  CHECK(log.size() == 2);
  CHECK(cache.snapshot()->size() == 4);
}

TEST_CASE("CacheThreadPicksUpChangesThroughPoll") {
  const std::string path = scratch_dir() + "/thread.export";
  ::unlink(path.c_str());
  std::atomic<int> lines{0};
  jobsubmit::PredictionCache cache(path, [&](const std::string&) { ++lines; });
  cache.start();
  REQUIRE(exportfile::write_atomic(path, sample()).ok());
  for (int i = 0; i < 200 && cache.snapshot()->size() == 0; ++i) {
    cache.poll();
    ::usleep(10000);
  }
  CHECK(cache.snapshot()->size() == 4);
  cache.stop();
  cache.stop();  // idempotent
}
