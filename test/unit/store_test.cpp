// The SQLite store: applications per user, traces, atomic skeleton + predictions, outcomes,
// report, forget, and the export derived from it.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "export/export.h"
#include "jobsubmit/cache.h"
#include "scratch_dir.h"
#include "store/store.h"

using namespace pskel;

namespace {

std::string fresh_db(const char* name) {
  const std::string path = pskel::testing::scratch_dir("store-test") + "/" + name + ".db";
  for (const char* suffix : {"", "-wal", "-shm"}) ::unlink((path + suffix).c_str());
  return path;
}

store::Trace trace_row(int64_t job, int64_t app, uint32_t uid) {
  store::Trace t;
  t.job_id = job;
  t.app_id = app;
  t.uid = uid;
  t.ntasks = 4;
  t.partition = "batch";
  t.state = "running";
  t.step = "trace";
  return t;
}

store::Prediction prediction(int64_t app, uint32_t uid, const std::string& partition, double s) {
  store::Prediction p;
  p.app_id = app;
  p.uid = uid;
  p.ntasks = 4;
  p.partition = partition;
  p.skeleton_seconds = s / 10;
  p.scale = 10;
  p.predicted_seconds = s;
  return p;
}

store::Store open_fresh(const char* name) {
  auto s = store::Store::open(fresh_db(name));
  REQUIRE_MESSAGE(s.ok(), s.error().line());
  return std::move(s).value();
}

// An application of `uid` with a running trace of `job`.
int64_t traced_app(store::Store& s, uint32_t uid, const std::string& key, int64_t job,
                   const std::string& script_key = "") {
  const int64_t app = s.ensure_application(uid, "user" + std::to_string(uid), key, script_key).value();
  REQUIRE(s.put_trace(trace_row(job, app, uid)).ok());
  return app;
}

}  // namespace

TEST_CASE("ApplicationsAreKeyedByUserAndKey") {
  auto s = store::Store::open(fresh_db("apps"));
  REQUIRE_MESSAGE(s.ok(), s.error().line());
  auto a = s.value().ensure_application(1000, "alice", "lu");
  auto again = s.value().ensure_application(1000, "alice", "lu");
  auto b = s.value().ensure_application(1001, "bob", "lu");
  REQUIRE((a.ok() && again.ok() && b.ok()));
  CHECK(a.value() == again.value());
  CHECK(a.value() != b.value());
  CHECK(s.value().find_applications("lu", std::nullopt).value().size() == 2);
  CHECK(s.value().find_applications("lu", 1001u).value().size() == 1);
  CHECK(s.value().find_applications(std::to_string(a.value()), std::nullopt).value().size() == 1);
  CHECK(s.value().find_applications("cg", std::nullopt).value().empty());
}

TEST_CASE("PredictionsAreStoredTogetherAndReplaceOlderOnes") {
  store::Store s = open_fresh("pred");
  const int64_t app = traced_app(s, 1000, "lu", 11);
  store::Skeleton sk{0, 11, "/spool/job.11/skeleton", "/spool/job.11/skeleton/skeleton", 10};
  auto ids = s.add_predictions(11, sk, {prediction(app, 1000, "batch", 100), prediction(app, 1000, "debug", 50)});
  REQUIRE_MESSAGE(ids.ok(), ids.error().line());
  CHECK(ids.value().size() == 2);
  CHECK(s.trace(11).value()->state == "done");

  REQUIRE(s.put_trace(trace_row(12, app, 1000)).ok());
  REQUIRE(s.add_predictions(12, sk, {prediction(app, 1000, "batch", 120)}).ok());
  const auto preds = s.predictions(app).value();
  REQUIRE(preds.size() == 2);
  CHECK(preds[0].partition == "batch");
  CHECK(preds[0].predicted_seconds == 120);  // the newer one
  CHECK(preds[1].predicted_seconds == 50);
}

TEST_CASE("AFailedTransactionLeavesNoPrediction") {
  store::Store s = open_fresh("atomic");
  const int64_t app = traced_app(s, 1000, "lu", 21);
  // The second prediction names an application that does not exist: the foreign key fails
  // after the skeleton and the first prediction were inserted.
  auto r = s.add_predictions(21, {0, 21, "/d", "/d/s", 4},
                             {prediction(app, 1000, "batch", 100), prediction(app + 99, 1000, "x", 1)});
  CHECK_FALSE(r.ok());
  CHECK(s.predictions(app).value().empty());
  CHECK(s.export_data().value().entries.empty());
  CHECK(s.trace(21).value()->state == "running");
}

TEST_CASE("ANamedApplicationIsAlsoExportedUnderItsScript") {
  store::Store s = open_fresh("alias");
  const int64_t app = traced_app(s, 1000, "lu", 81, "script:00000000000000aa");
  CHECK(s.ensure_application(1000, "user1000", "lu").value() == app);  // the alias stays
  REQUIRE(s.add_predictions(81, {0, 81, "/d", "/d/s", 4}, {prediction(app, 1000, "batch", 100)}).ok());
  const jobsubmit::Snapshot snap(s.export_data().value());
  CHECK(snap.size() == 2);
  REQUIRE(snap.find(1000, "lu", 4, "batch"));
  REQUIRE(snap.find(1000, "script:00000000000000aa", 4, "batch"));
  CHECK(snap.find(1000, "script:00000000000000aa", 4, "batch")->prediction_id ==
        snap.find(1000, "lu", 4, "batch")->prediction_id);
  CHECK(s.find_applications("lu", std::nullopt).value()[0].script_key == "script:00000000000000aa");
}

TEST_CASE("TraceFailuresAreRecorded") {
  store::Store s = open_fresh("fail");
  traced_app(s, 0, "ring", 31);
  REQUIRE(s.set_trace_state(31, "failed", "skeleton", "skeleton: not available").ok());
  REQUIRE(s.set_trace_runtime(31, 12.5).ok());
  const auto t = s.trace(31).value();
  REQUIRE(t);
  CHECK(t->state == "failed");
  CHECK(t->message == "skeleton: not available");
  CHECK(t->runtime_seconds == 12.5);
  const auto list = s.list(std::nullopt).value();
  REQUIRE(list.size() == 1);
  CHECK(list[0].last_state == "failed");
  CHECK(list[0].last_message == "skeleton: not available");
  CHECK_FALSE(s.trace(999).value().has_value());
}

TEST_CASE("OneUsersTracesNeverPredictForAnother") {
  store::Store s = open_fresh("users");
  const int64_t alice = traced_app(s, 1000, "lu", 41);
  REQUIRE(s.add_predictions(41, {0, 41, "/d", "/d/s", 4}, {prediction(alice, 1000, "batch", 100)}).ok());
  // A prediction row claiming bob's uid for alice's application is not exported.
  traced_app(s, 1001, "cg", 42);
  REQUIRE(s.add_predictions(42, {0, 42, "/d", "/d/s", 4}, {prediction(alice, 1001, "debug", 5)}).ok());
  const auto data = s.export_data().value();
  REQUIRE(data.entries.size() == 1);
  CHECK(data.entries[0].uid == 1000);
  const jobsubmit::Snapshot snap(data);
  CHECK(snap.find(1000, "lu", 4, "batch") != nullptr);
  CHECK(snap.find(1001, "lu", 4, "batch") == nullptr);
  CHECK(snap.find(1001, "lu", 4, "debug") == nullptr);
}

TEST_CASE("OutcomesFeedTheReport") {
  store::Store s = open_fresh("report");
  const int64_t app = traced_app(s, 1000, "lu", 51);
  const int64_t pid = s.add_predictions(51, {0, 51, "/d", "/d/s", 4},
                                        {prediction(app, 1000, "batch", 100)}).value()[0];
  REQUIRE(s.record_outcome({60, 1000, pid, 0, 100, 3, 110, "COMPLETED", 0}).ok());
  REQUIRE(s.record_outcome({61, 1000, pid, 0, 100, 3, 90, "COMPLETED", 0}).ok());
  REQUIRE(s.record_outcome({62, 1000, pid, 0, 100, 3, -1, "UNKNOWN", 0}).ok());  // not counted
  // A user cannot attach outcomes to someone else's prediction.
  REQUIRE(s.record_outcome({63, 1001, pid, 0, 100, 3, 1000, "COMPLETED", 0}).ok());
  const auto rows = s.report(std::nullopt).value();
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].jobs == 2);
  CHECK(rows[0].mean_abs_error_pct == doctest::Approx((10.0 / 110 + 10.0 / 90) / 2 * 100));
  CHECK(rows[0].mean_actual == doctest::Approx(100));
  CHECK(s.outcomes(app).value().size() == 3);
}

TEST_CASE("ForgetDeletesEverythingOfAnApplication") {
  const std::string path = fresh_db("forget");
  auto opened = store::Store::open(path);
  REQUIRE(opened.ok());
  store::Store& s = opened.value();
  const int64_t app = s.ensure_application(1000, "alice", "lu").value();
  REQUIRE(s.put_trace(trace_row(71, app, 1000)).ok());
  REQUIRE(s.add_predictions(71, {0, 71, "/d", "/d/s", 4}, {prediction(app, 1000, "batch", 100)}).ok());
  REQUIRE(s.set_partitions({{"batch", 60, true}}).ok());
  const std::string export_path = path + ".export";
  REQUIRE(store::write_export(s, export_path).ok());
  CHECK(exportfile::parse(exportfile::read_file(export_path).value(), "e").value().entries.size() == 1);
  CHECK(s.forget(app).value() == 1);
  CHECK(s.predictions(app).value().empty());
  CHECK(s.traces(app).value().empty());
  REQUIRE(store::write_export(s, export_path).ok());
  const auto data = exportfile::parse(exportfile::read_file(export_path).value(), "e").value();
  CHECK(data.entries.empty());
  CHECK(data.partitions.size() == 1);
}

TEST_CASE("StoreReopensAndRefusesSymlinks") {
  const std::string path = fresh_db("reopen");
  {
    auto s = store::Store::open(path);
    REQUIRE(s.ok());
    REQUIRE(s.value().ensure_application(1, "u", "k").ok());
  }
  auto s = store::Store::open(path);
  REQUIRE(s.ok());
  CHECK(s.value().list(std::nullopt).value().size() == 1);
  const std::string link = path + ".link";
  ::unlink(link.c_str());
  REQUIRE(::symlink(path.c_str(), link.c_str()) == 0);
  CHECK_FALSE(store::Store::open(link).ok());
}
