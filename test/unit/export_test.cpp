// The prediction export (format, parse, atomic write), job_submit's policy and its in-memory
// cache: what slurmctld relies on.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "export/export.h"
#include "export/job_args.h"
#include "jobsubmit/cache.h"
#include "jobsubmit/policy.h"
#include "scratch_dir.h"
#include "util/crc32c.h"

using namespace pskel;
using exportfile::Data;

namespace {

Data sample() {
  Data d;
  d.partitions = {{"batch", 1440, true}, {"debug", 30, false}, {"long", exportfile::kUnlimited, false}};
  d.entries = {{1000, 4, 1, "batch", "lu", 125.25, 7}, {1000, 4, 1, "debug", "lu", 60, 8},
               {1001, 4, 1, "batch", "lu", 999.5, 9},
               {1000, 16, 2, "batch", "script:00ff00ff00ff00ff", 3600, 10, "0123456789abcdef"}};
  // seconds = 0.5 + 2e-6 x max(0, 4 + 0.5 x n^2 x i / ntasks): n, i the script's numbers.
  exportfile::Model m;
  m.uid = 1000;
  m.app = "sweep";
  m.shape_key = 0x0123456789abcdefULL;
  m.model_id = 5;
  m.parameters = 3;
  m.low_ratio = 0.95;
  m.high_ratio = 1.1;
  m.intercept = 0.5;
  m.groups = {{2e-6, true, 4, {{0.5, {{1, 2, 0}, {2, 1, 0}, {0, -1, 0}}}}}};
  d.models = {m};
  return d;
}

std::string scratch_dir() { return pskel::testing::scratch_dir("export-test"); }

// An export of format `version` with these E lines written as given (the writer would refuse
// them), with a correct end line: what a hand-edited or foreign file could hold, or what an
// older worker wrote.
std::string export_with(const std::vector<std::string>& entry_lines, int version = 2) {
  std::string text = "pskel-export " + std::to_string(version) + "\nP batch unlimited default\n";
  for (const std::string& l : entry_lines) text += l + "\n";
  char crc[16];
  std::snprintf(crc, sizeof crc, "%08x", crc32c(text.data(), text.size()));
  return text + "end " + std::to_string(entry_lines.size()) + " 1 " + crc + "\n";
}

void write_text(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".t";
  std::ofstream(tmp, std::ios::binary) << text;
  REQUIRE(::rename(tmp.c_str(), path.c_str()) == 0);
}

}  // namespace

TEST_CASE("ExportRoundTrips") {
  const Data d = sample();
  const std::string text = exportfile::format(d);
  CHECK(text.starts_with("pskel-export 3\nP batch 1440 default\n"));
  CHECK(text.find("\nM 1000 sweep 0123456789abcdef 5 3 0.95 1.1 0.5 1 2e-06 1 4 1 0.5 3 1 2 0 2 1 0 0 -1 0\n") !=
        std::string::npos);
  CHECK(text.find("\nE 1000 4 1 batch 125.25 7 lu -\n") != std::string::npos);
  CHECK(text.find("\nE 1000 16 2 batch 3600 10 script:00ff00ff00ff00ff 0123456789abcdef\n") !=
        std::string::npos);
  auto back = exportfile::parse(text, "x");
  REQUIRE_MESSAGE(back.ok(), back.error().line());
  REQUIRE(back.value().entries.size() == d.entries.size());
  CHECK(back.value().entries[0].predicted_seconds == 125.25);
  CHECK(back.value().entries[3].app == "script:00ff00ff00ff00ff");
  CHECK(back.value().entries[3].nodes == 2);
  CHECK(back.value().entries[0].nodes == 1);
  CHECK(back.value().partitions[2].max_minutes == exportfile::kUnlimited);
  CHECK(back.value().partitions[0].is_default);
  REQUIRE(back.value().models.size() == 1);
  const std::vector<double> job = {2, 1000, 100};  // 2 tasks, n = 1000, i = 100
  CHECK(exportfile::model_seconds(back.value().models[0], job) ==
        doctest::Approx(0.5 + 2e-6 * (4 + 0.5 * 1000 * 1000 * 100 / 2)));
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
  auto r = exportfile::parse("pskel-export 2\nX nonsense\n", "/var/lib/pskel/predictions.export");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().line() == "/var/lib/pskel/predictions.export: line 2: unknown record");
  CHECK(exportfile::parse("garbage\n", "f").error().what.find("not a pskel export") != std::string::npos);
  CHECK(exportfile::parse("pskel-export 2\n", "f").error().what.find("truncated") != std::string::npos);
  CHECK(exportfile::parse("pskel-export 4\nend 0 0 00000000\n", "f").error().what.find("not a pskel export") !=
        std::string::npos);
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
  REQUIRE(s.find(1000, "lu", 4, 1, "batch"));
  CHECK(s.find(1000, "lu", 4, 1, "batch")->predicted_seconds == 125.25);
  CHECK(s.find(1000, "lu", 4, 1, "batch")->prediction_id == 7);
  CHECK(s.find(1001, "lu", 4, 1, "batch")->prediction_id == 9);  // another user's own prediction
  CHECK(s.find(1002, "lu", 4, 1, "batch") == nullptr);           // nobody else's
  CHECK(s.find(1000, "lu", 8, 1, "batch") == nullptr);
  CHECK(s.find(1000, "lu", 4, 1, "long") == nullptr);
  CHECK(s.find(1000, "l", 4, 1, "ubatch") == nullptr);  // keys are not ambiguous
  CHECK(s.find(1000, "lu", 41, 1, "batch") == nullptr);
  CHECK(s.find(1000, "lu", 4, 11, "batch") == nullptr);
  CHECK(s.size() == 4);  // the entries for jobs without a node count are not predictions
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
  two.entries = {{5, 1, 1, "p", "a", 1, 1}, {6, 1, 1, "p", "a", 2, 2}};
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

// poll() runs on every submission inside slurmctld: it stats the export at most once per
// interval, and a change it saw wakes the loader at once (the loader's own look is 2 s away).
TEST_CASE("PollStatsTheExportAtMostOncePerInterval") {
  const std::string path = scratch_dir() + "/poll-every.export";
  auto loaded_soon = [](jobsubmit::PredictionCache& cache) {
    for (int i = 0; i < 50 && cache.snapshot()->size() == 0; ++i) ::usleep(10000);
    return cache.snapshot()->size();
  };
  for (const auto every : {std::chrono::milliseconds(0), std::chrono::milliseconds(3600 * 1000)}) {
    CAPTURE(every.count());
    ::unlink(path.c_str());
    jobsubmit::PredictionCache cache(path, nullptr, "", every);
    const auto started = std::chrono::steady_clock::now();
    cache.start();
    cache.poll();  // the first look: no file yet
    REQUIRE(exportfile::write_atomic(path, sample()).ok());
    cache.poll();  // within the interval of the first, when it is an hour
    const size_t loaded = loaded_soon(cache);
    // The loader's own look, 2 s after start, loads it whatever poll() did: on a machine slow
    // enough to get there first, an hour's interval shows nothing.
    const auto took = std::chrono::steady_clock::now() - started;
    if (every.count() == 0 || took < std::chrono::milliseconds(1500))
      CHECK(loaded == (every.count() == 0 ? 4u : 0u));
    cache.stop();
  }
}

// Issue 22, finding 1: a calibration that printed 1e30 s became an export line job_submit
// formatted into a 32-byte buffer too small for it, copying slurmctld's stack into the job.
TEST_CASE("PredictionOf1e30SecondsNeverReachesAJobAsGarbage") {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double bound = exportfile::kMaxPredictedSeconds;
  for (const double v : {1e30, 1e308, std::numeric_limits<double>::max(), inf, -inf, nan, -nan, -1.0,
                         -0.0, 0.0, 5e-324, std::numeric_limits<double>::min(), 0.05, 0.04, 125.25,
                         bound, std::nextafter(bound, 0.0), std::nextafter(bound, inf), 4294967296.0 * 60}) {
    CAPTURE(v);
    const std::string text = jobsubmit::seconds_text(v);
    REQUIRE_FALSE(text.empty());
    CHECK(text.size() <= 10);  // "31536000.0"
    for (const char c : text) CHECK(((c >= '0' && c <= '9') || c == '.'));
    double back = -1;
    const auto r = std::from_chars(text.data(), text.data() + text.size(), back);
    CHECK(r.ec == std::errc());
    CHECK(r.ptr == text.data() + text.size());
    CHECK(back >= 0);
    CHECK(back <= bound);
    if (exportfile::valid_predicted_seconds(v)) CHECK(std::fabs(back - v) <= 0.05 + 1e-9);
  }
  CHECK(jobsubmit::seconds_text(1e30) == "31536000.0");
  CHECK(jobsubmit::seconds_text(nan) == "0.0");
  CHECK(jobsubmit::seconds_text(125.25) == "125.2");  // round half to even, as to_chars does
}

TEST_CASE("PredictionOutsideTheExportRangeNeverSetsALimit") {
  const jobsubmit::Limits l{0.2, 60, 2.0};
  const double inf = std::numeric_limits<double>::infinity();
  for (const double v : {1e30, 1e308, inf, -inf, std::numeric_limits<double>::quiet_NaN(), -1.0,
                         std::nextafter(exportfile::kMaxPredictedSeconds, inf)}) {
    CAPTURE(v);
    for (const config::Policy policy : {config::Policy::UnsetOnly, config::Policy::Cap}) {
      for (const uint32_t user : {jobsubmit::kNoVal, jobsubmit::kInfinite, 600u}) {
        const auto d = jobsubmit::decide(policy, v, l, user, jobsubmit::kInfinite);
        CHECK_FALSE(d.change);
        CHECK(d.why == "prediction out of range");
      }
    }
  }
  const auto d = jobsubmit::decide(config::Policy::UnsetOnly, exportfile::kMaxPredictedSeconds, l,
                                   jobsubmit::kNoVal, jobsubmit::kInfinite);
  CHECK(d.change);
  CHECK(d.limit == 630721);  // ceil((31536000 x 1.2 + 60) / 60)
}

TEST_CASE("LimitOfTheLargestPredictionMarginAndPadStaysFarFromNoVal") {
  using jobsubmit::limit_minutes;
  // pskel.conf's largest Margin (100) and Pad (7 days) on a prediction at the bound.
  const jobsubmit::Limits most{100, 7 * 86400, 1000};
  CHECK(limit_minutes(exportfile::kMaxPredictedSeconds, most, jobsubmit::kInfinite) == 53095680);
  // Whatever a direct caller passes, the uint32 conversion sees a number in range.
  const double inf = std::numeric_limits<double>::infinity();
  for (const double v : {1e308, inf, -inf, std::numeric_limits<double>::quiet_NaN(), -1e308}) {
    CAPTURE(v);
    const uint32_t m = limit_minutes(v, most, jobsubmit::kInfinite);
    CHECK(m >= 1);
    CHECK(m <= 53095680);
  }
  CHECK(limit_minutes(1, jobsubmit::Limits{inf, 0, 1}, jobsubmit::kInfinite) == jobsubmit::kMaxLimitMinutes);
  CHECK(limit_minutes(1, jobsubmit::Limits{std::numeric_limits<double>::quiet_NaN(), 0, 1},
                      jobsubmit::kInfinite) == 1);
}

TEST_CASE("ExportParserRejectsPredictionsOutsideZeroToOneYear") {
  for (const char* bad : {"1e30", "1e+30", "1e308", "1.7976931348623157e+308", "31536000.000000004",
                          "31536001", "3.1537e7", "inf", "nan", "-0", "-1", "+5", "1e400", "0x10",
                          "", "5 ", "1,5"}) {
    CAPTURE(bad);
    auto r = exportfile::parse(export_with({"E 1000 4 1 batch 100 1 ok",
                                            std::string("E 1000 4 1 batch ") + bad + " 2 x"}),
                               "f");
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().what.starts_with("line 4: "));
  }
  auto odd = exportfile::parse(export_with({"E 1000 4 1 batch 1e\x1b[31m 2 x"}), "f");
  REQUIRE_FALSE(odd.ok());
  CHECK(odd.error().what.find('\x1b') == std::string::npos);  // the log gets no escape sequence
  // What the writer writes for values in range, exponents included, is read back exactly.
  for (const char* good : {"0", "5e-324", "2.2250738585072014e-308", "1e-05", "0.05", "125.25",
                           "31535999.999999996", "31536000", "3.1536e+07"}) {
    CAPTURE(good);
    auto r = exportfile::parse(export_with({std::string("E 1000 4 1 batch ") + good + " 2 x"}), "f");
    REQUIRE_MESSAGE(r.ok(), r.error().line());
    double v = 0;
    std::from_chars(good, good + std::string_view(good).size(), v);
    CHECK(r.value().entries[0].predicted_seconds == v);
  }
}

TEST_CASE("ExportWriterLeavesOutWhatTheParserWouldReject") {
  const double inf = std::numeric_limits<double>::infinity();
  Data d;
  d.partitions = {{"batch", 60, true}, {"bad name", 5, false}, {"", 5, false}};
  d.entries = {{1000, 4, 1, "batch", "ok", 100, 1},
               {1000, 4, 1, "batch", "huge", 1e30, 2},
               {1000, 4, 1, "batch", "max", std::numeric_limits<double>::max(), 3},
               {1000, 4, 1, "batch", "inf", inf, 4},
               {1000, 4, 1, "batch", "nan", std::numeric_limits<double>::quiet_NaN(), 5},
               {1000, 4, 1, "batch", "negative", -1, 6},
               {1000, 4, 1, "batch", "above", std::nextafter(exportfile::kMaxPredictedSeconds, inf), 7},
               {1000, 0, 1, "batch", "no-tasks", 10, 8},
               {1000, 4, 1, "batch", "bad key", 10, 9},
               {1000, 4, 1, "batch\n", "newline", 10, 10},
               {1000, 4, 1, "batch", "bound", exportfile::kMaxPredictedSeconds, 11},
               {1000, 4, 1, "batch", "tiny", 5e-324, 12},
               {1000, 4, 1, "batch", "minus-zero", -0.0, 13},
               {1000, 4, 0, "batch", "no-nodes", 10, 14}};
  const std::string text = exportfile::format(d);
  auto back = exportfile::parse(text, "x");
  REQUIRE_MESSAGE(back.ok(), back.error().line());
  REQUIRE(back.value().entries.size() == 4);
  CHECK(back.value().entries[0].app == "ok");
  CHECK(back.value().entries[1].app == "bound");
  CHECK(back.value().entries[2].predicted_seconds == 5e-324);
  CHECK(text.find(" 0 13 minus-zero -\n") != std::string::npos);
  CHECK(back.value().partitions.size() == 1);
  // One bad row among good ones: the good ones still reach slurmctld.
  const std::string path = scratch_dir() + "/skip.export";
  REQUIRE(exportfile::write_atomic(path, d).ok());
  CHECK(exportfile::parse(exportfile::read_file(path).value(), path).value().entries.size() == 4);
}

TEST_CASE("ExportVersion1IsReadAsPredictionsForOneNode") {
  // As a worker of the previous version wrote it: slurmctld may be upgraded first.
  auto v1 = exportfile::parse(export_with({"E 1000 4 batch 125.25 7 lu", "E 1001 16 batch 60 8 cg"}, 1), "f");
  REQUIRE_MESSAGE(v1.ok(), v1.error().line());
  REQUIRE(v1.value().entries.size() == 2);
  const exportfile::Entry& e = v1.value().entries[0];
  CHECK(e.uid == 1000);
  CHECK(e.ntasks == 4);
  CHECK(e.nodes == 1);
  CHECK(e.partition == "batch");
  CHECK(e.predicted_seconds == 125.25);
  CHECK(e.prediction_id == 7);
  CHECK(e.app == "lu");
  CHECK(v1.value().entries[1].nodes == 1);
  const jobsubmit::Snapshot snap(v1.value());
  CHECK(snap.find(1000, "lu", 4, 1, "batch")->prediction_id == 7);
  CHECK(snap.find(1000, "lu", 4, jobsubmit::kAnyNodes, "batch")->prediction_id == 7);
  CHECK(snap.find(1000, "lu", 4, 2, "batch") == nullptr);
  // Written again, it is version 2.
  CHECK(exportfile::format(v1.value()).find("\nE 1000 4 1 batch 125.25 7 lu -\n") != std::string::npos);

  // Each version's lines have their own number of fields.
  auto v2_line_in_v1 = exportfile::parse(export_with({"E 1000 4 1 batch 125.25 7 lu"}, 1), "f");
  REQUIRE_FALSE(v2_line_in_v1.ok());
  CHECK(v2_line_in_v1.error().what == "line 3: prediction line needs 6 fields");
  auto v1_line_in_v2 = exportfile::parse(export_with({"E 1000 4 batch 125.25 7 lu"}), "f");
  REQUIRE_FALSE(v1_line_in_v2.ok());
  CHECK(v1_line_in_v2.error().what == "line 3: prediction line needs 7 fields");
}

TEST_CASE("ExportParserRejectsABadNodeCount") {
  for (const char* bad : {"0", "-1", "+2", "4294967296", "x", "1.5"}) {
    CAPTURE(bad);
    auto r = exportfile::parse(export_with({std::string("E 1000 4 ") + bad + " batch 100 1 lu"}), "f");
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().what == "line 3: bad uid, task count or node count");
  }
  auto most = exportfile::parse(export_with({"E 1000 4 4294967295 batch 100 1 lu"}), "f");
  REQUIRE(most.ok());
  CHECK(most.value().entries[0].nodes == 4294967295u);
}

TEST_CASE("SnapshotMatchesTheNodeCountAJobAskedFor") {
  Data d;
  d.entries = {{1000, 4, 1, "batch", "lu", 100, 1},
               {1000, 4, 2, "batch", "lu", 300, 2},
               {1000, 4, 4, "batch", "lu", 50, 3},
               {1000, 4, 8, "debug", "lu", 7, 4}};
  const jobsubmit::Snapshot s(d);
  CHECK(s.size() == 4);
  CHECK(s.find(1000, "lu", 4, 1, "batch")->prediction_id == 1);
  CHECK(s.find(1000, "lu", 4, 2, "batch")->prediction_id == 2);
  CHECK(s.find(1000, "lu", 4, 4, "batch")->prediction_id == 3);
  CHECK(s.find(1000, "lu", 4, 3, "batch") == nullptr);  // never another node count's
  CHECK(s.find(1000, "lu", 4, 8, "batch") == nullptr);
  // A job without a node count may land on any layout: the longest prediction, and which one.
  const jobsubmit::Prediction* any = s.find(1000, "lu", 4, jobsubmit::kAnyNodes, "batch");
  REQUIRE(any);
  CHECK(any->prediction_id == 2);
  CHECK(any->predicted_seconds == 300);
  CHECK(any->nodes == 2);
  CHECK(s.find(1000, "lu", 4, jobsubmit::kAnyNodes, "debug")->nodes == 8);  // per partition
  CHECK(s.find(1000, "lu", 8, jobsubmit::kAnyNodes, "batch") == nullptr);
  CHECK(s.find(1001, "lu", 4, jobsubmit::kAnyNodes, "batch") == nullptr);
}

TEST_CASE("SnapshotForAJobWithoutNodeCountUsesThePredictionsThatStayed") {
  Data d;
  // A later line of the same key replaces an earlier one: the 900 s is gone, not the longest.
  d.entries = {{1000, 4, 2, "batch", "lu", 900, 1},
               {1000, 4, 1, "batch", "lu", 100, 2},
               {1000, 4, 2, "batch", "lu", 10, 3},
               // Of the same length, the newer prediction.
               {1000, 8, 1, "batch", "lu", 60, 9},
               {1000, 8, 2, "batch", "lu", 60, 8},
               // Not a valid entry: its key would be the one of jobs without a node count.
               {1000, 16, 0, "batch", "lu", 5, 10}};
  const jobsubmit::Snapshot s(d);
  CHECK(s.size() == 4);
  CHECK(s.find(1000, "lu", 4, 2, "batch")->prediction_id == 3);
  CHECK(s.find(1000, "lu", 4, jobsubmit::kAnyNodes, "batch")->prediction_id == 2);
  CHECK(s.find(1000, "lu", 8, jobsubmit::kAnyNodes, "batch")->prediction_id == 9);
  CHECK(s.find(1000, "lu", 16, jobsubmit::kAnyNodes, "batch") == nullptr);
}

TEST_CASE("RequestedNodesIsTheCountSbatchNGives") {
  using jobsubmit::kNoVal;
  using jobsubmit::requested_nodes;
  CHECK(requested_nodes(kNoVal, kNoVal) == 0);  // no -N
  CHECK(requested_nodes(0, kNoVal) == 0);       // -n 0
  CHECK(requested_nodes(2, 2) == 2);            // -N 2
  CHECK(requested_nodes(1, 1) == 1);
  CHECK(requested_nodes(2, kNoVal) == 2);       // a client that sets only the minimum
  CHECK(requested_nodes(2, 0) == 2);
  CHECK(requested_nodes(1, 4) == 0);            // -N 1-4: any of them
  CHECK(requested_nodes(4, 2) == 0);            // refused by Slurm later; no guess here
  CHECK(requested_nodes(kNoVal, 2) == 0);
}

TEST_CASE("JobArgsRoundTripAsOneWord") {
  const char* args[] = {"-n", "256", "input file.dat", "", "naïve\n", "a%b"};
  const std::string text = pskel::exportfile::encode_job_args(args);
  CHECK(text.find_first_of("\n\t\r") == std::string::npos);
  CHECK(text.starts_with("-n 256 input%20file.dat %00 "));
  std::vector<std::string> back;
  REQUIRE(pskel::exportfile::decode_job_args(text, &back));
  REQUIRE(back.size() == 6);
  CHECK(back[2] == "input file.dat");
  CHECK(back[3].empty());
  CHECK(back[4] == "naïve\n");
  CHECK(back[5] == "a%b");
  REQUIRE(pskel::exportfile::decode_job_args("", &back));
  CHECK(back.empty());
  std::vector<std::string> command;
  REQUIRE(pskel::exportfile::batch_command(text, &command));
  REQUIRE(command.size() == 7);
  CHECK(command[0] == "job");
  CHECK(command[3] == "input file.dat");
  CHECK_FALSE(pskel::exportfile::batch_command("a  b", &command));
}

TEST_CASE("JobArgsRefuseWhatEncodingCannotWrite") {
  std::vector<std::string> out;
  for (const char* bad : {"a  b", " a", "a ", "%", "%4", "%zz", "a\tb", "%4g"})
    CHECK_MESSAGE(!pskel::exportfile::decode_job_args(bad, &out), bad);
  std::vector<const char*> many(pskel::exportfile::kMaxJobArgs + 1, "1");
  CHECK(pskel::exportfile::encode_job_args(many).empty());
  const std::string long_arg(pskel::exportfile::kMaxJobArgsBytes + 1, 'x');
  const char* one[] = {long_arg.c_str()};
  CHECK(pskel::exportfile::encode_job_args(one).empty());
}

TEST_CASE("ModelsAreEvaluatedOnlyForTheirParametersAndRefusedOutOfRange") {
  exportfile::Model m = sample().models[0];
  const std::vector<double> two = {2, 1000};
  CHECK(std::isnan(exportfile::model_seconds(m, two)));  // another count of parameters
  const std::vector<double> zero = {2, 0, 100};
  CHECK(std::isnan(exportfile::model_seconds(m, zero)));  // not above zero
  // A count below zero is taken as 0: the group adds nothing.
  m.groups[0].constant = -1e12;
  const std::vector<double> job = {2, 10, 10};
  CHECK(exportfile::model_seconds(m, job) == doctest::Approx(0.5));
  for (auto spoil : std::vector<void (*)(exportfile::Model&)>{
           [](exportfile::Model& x) { x.low_ratio = 0; },
           [](exportfile::Model& x) { x.high_ratio = 0.5; },
           [](exportfile::Model& x) { x.groups[0].terms[0].factors[0].parameter = 3; },
           [](exportfile::Model& x) { x.groups[0].terms[0].factors[0].exponent = 9; },
           [](exportfile::Model& x) { x.groups[0].terms[0].factors[0].log_exponent = 3; },
           [](exportfile::Model& x) { x.app = "a b"; },
           [](exportfile::Model& x) { x.intercept = NAN; }}) {
    exportfile::Model bad = sample().models[0];
    spoil(bad);
    CHECK_FALSE(exportfile::valid_model(bad));
    Data d;
    d.models = {bad};
    CHECK(exportfile::parse(exportfile::format(d), "x").value().models.empty());  // left out
  }
}

TEST_CASE("AVersion2ExportWithoutModelsIsStillRead") {
  auto r = exportfile::parse(export_with({"E 1000 4 1 batch 125.25 7 lu"}, 2), "x");
  REQUIRE_MESSAGE(r.ok(), r.error().line());
  CHECK(r.value().entries.size() == 1);
  CHECK(r.value().models.empty());
}

TEST_CASE("SnapshotFindsAModelByUserApplicationAndCommandShape") {
  const jobsubmit::Snapshot s(sample());
  const exportfile::Model* m = s.find_model(1000, "sweep", 0x0123456789abcdefULL);
  REQUIRE(m != nullptr);
  CHECK(m->model_id == 5);
  CHECK(s.find_model(1001, "sweep", 0x0123456789abcdefULL) == nullptr);  // another user
  CHECK(s.find_model(1000, "lu", 0x0123456789abcdefULL) == nullptr);
  CHECK(s.find_model(1000, "sweep", 1) == nullptr);  // arguments of another shape
}
