// The SQLite store: applications per user, traces, atomic skeleton + predictions, outcomes,
// report, forget, and the export derived from it.
#include <doctest/doctest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "export/export.h"
#include "jobsubmit/cache.h"
#include "scratch_dir.h"
#include "store/store.h"
#include "util/json_text.h"

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

// A store as the worker leaves it: two applications, traces, predictions, an outcome,
// partitions; closed, so that the file alone holds it.
std::string filled_store(const char* name) {
  const std::string path = fresh_db(name);
  store::Store s = store::Store::open(path).value();
  const int64_t app = traced_app(s, 1000, "lu", 11);
  traced_app(s, 1001, "cg", 12);
  REQUIRE(s.set_trace_state(12, "failed", "skeleton", "skeleton: not available").ok());
  const int64_t pid = s.add_predictions(11, {0, 11, "/d", "/d/s", 10},
                                        {prediction(app, 1000, "batch", 100)}).value()[0];
  REQUIRE(s.record_outcome({60, 1000, pid, 0, 100, 3, 110, "COMPLETED", 0}).ok());
  REQUIRE(s.set_partitions({{"batch", 60, true}}).ok());
  return path;
}

// Runs SQL on the file directly, as an administrator with sqlite3 (or a damaged disk) would.
void sql(const std::string& path, const std::string& statements) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) == SQLITE_OK);
  char* msg = nullptr;
  const int rc = sqlite3_exec(db, statements.c_str(), nullptr, nullptr, &msg);
  CHECK_MESSAGE(rc == SQLITE_OK, (msg ? msg : ""));
  sqlite3_free(msg);
  sqlite3_close(db);
}

std::string bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

struct FileState {
  bool exists = false;
  mode_t mode = 0;
  std::string bytes;
  bool operator==(const FileState&) const = default;
};

FileState file_state(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return {};
  return {true, st.st_mode, S_ISREG(st.st_mode) ? bytes_of(path) : ""};
}

// Opens `path` read-only, expecting an Error that names the file and contains `what`, and the
// file exactly as it was.
void refused_read_only(const std::string& path, const std::string& what) {
  const FileState before = file_state(path);
  auto s = store::Store::open(path, store::Access::ReadOnly);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().file == path);
  CHECK_MESSAGE(s.error().what.find(what) != std::string::npos, s.error().line());
  CHECK(s.error().line().find('\n') == std::string::npos);
  CHECK(file_state(path) == before);
}

// Every row of a query on the file, columns joined by '|', rows by '\n'.
std::string rows(const std::string& path, const std::string& query) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
  std::string out;
  char* msg = nullptr;
  const int rc = sqlite3_exec(
      db, query.c_str(),
      [](void* text, int n, char** values, char**) {
        auto& o = *static_cast<std::string*>(text);
        if (!o.empty()) o += '\n';
        for (int i = 0; i < n; ++i) o += (i ? "|" : "") + std::string(values[i] ? values[i] : "NULL");
        return 0;
      },
      &out, &msg);
  CHECK_MESSAGE(rc == SQLITE_OK, (msg ? msg : ""));
  sqlite3_free(msg);
  sqlite3_close(db);
  return out;
}

// A table's columns (name, type, not null, default, primary key) and the columns of its
// UNIQUE constraints: what a query or an insert sees of it.
std::string table_shape(const std::string& path, const std::string& table) {
  return rows(path, "SELECT name, type, \"notnull\", dflt_value, pk FROM pragma_table_info('" + table +
                        "')") +
         "\nunique: " +
         rows(path, "SELECT group_concat(ii.name) FROM pragma_index_list('" + table +
                        "') AS il, pragma_index_info(il.name) AS ii WHERE il.\"unique\" GROUP BY il.name");
}

// The schema of version 1, as pskel wrote it before node counts (core/store/store.cpp then):
// a store of that version must still open.
const char* const kSchemaV1 = R"sql(
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS applications(
  id INTEGER PRIMARY KEY,
  uid INTEGER NOT NULL,
  user TEXT NOT NULL,
  key TEXT NOT NULL,
  created INTEGER NOT NULL,
  script_key TEXT NOT NULL DEFAULT '',
  UNIQUE(uid, key));
CREATE TABLE IF NOT EXISTS traces(
  job_id INTEGER PRIMARY KEY,
  app_id INTEGER NOT NULL REFERENCES applications(id) ON DELETE CASCADE,
  uid INTEGER NOT NULL,
  ntasks INTEGER NOT NULL,
  partition TEXT NOT NULL,
  state TEXT NOT NULL,
  step TEXT NOT NULL DEFAULT '',
  message TEXT NOT NULL DEFAULT '',
  trace_dir TEXT NOT NULL DEFAULT '',
  runtime_seconds REAL NOT NULL DEFAULT -1,
  updated INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS skeletons(
  id INTEGER PRIMARY KEY,
  job_id INTEGER NOT NULL REFERENCES traces(job_id) ON DELETE CASCADE,
  dir TEXT NOT NULL,
  binary TEXT NOT NULL,
  scale REAL NOT NULL,
  created INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS predictions(
  id INTEGER PRIMARY KEY,
  app_id INTEGER NOT NULL REFERENCES applications(id) ON DELETE CASCADE,
  uid INTEGER NOT NULL,
  ntasks INTEGER NOT NULL,
  partition TEXT NOT NULL,
  skeleton_id INTEGER REFERENCES skeletons(id) ON DELETE SET NULL,
  skeleton_seconds REAL NOT NULL,
  scale REAL NOT NULL,
  predicted_seconds REAL NOT NULL,
  created INTEGER NOT NULL,
  UNIQUE(app_id, ntasks, partition));
CREATE TABLE IF NOT EXISTS outcomes(
  job_id INTEGER PRIMARY KEY,
  uid INTEGER NOT NULL,
  prediction_id INTEGER NOT NULL,
  app_id INTEGER REFERENCES applications(id) ON DELETE CASCADE,
  predicted_seconds REAL NOT NULL,
  limit_minutes INTEGER NOT NULL,
  actual_seconds REAL NOT NULL,
  state TEXT NOT NULL,
  recorded INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS partitions(
  name TEXT PRIMARY KEY,
  max_minutes INTEGER NOT NULL,
  is_default INTEGER NOT NULL);
)sql";

// A version-1 store as a worker of that version left it: an application with a script alias, a
// done trace, its skeleton, predictions on two partitions, an outcome, a partition.
std::string v1_store(const char* name) {
  const std::string path = fresh_db(name);
  sql(path, std::string(kSchemaV1) +
                "INSERT INTO meta VALUES('schema_version', '1');"
                "INSERT INTO applications VALUES(5, 1000, 'alice', 'lu', 100, 'script:00000000000000aa');"
                "INSERT INTO traces VALUES(11, 5, 1000, 4, 'batch', 'done', '', '', '/spool/job.11', 12.5, 200);"
                "INSERT INTO skeletons VALUES(3, 11, '/d', '/d/s', 10, 300);"
                "INSERT INTO predictions VALUES(7, 5, 1000, 4, 'batch', 3, 1.25, 10, 12.5, 400);"
                "INSERT INTO predictions VALUES(8, 5, 1000, 4, 'debug', 3, 2.5, 10, 25, 401);"
                "INSERT INTO outcomes VALUES(60, 1000, 7, 5, 12.5, 2, 13, 'COMPLETED', 500);"
                "INSERT INTO partitions VALUES('batch', 60, 1);");
  return path;
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

// Issue 17: the guard's extensions reach the report (limited, extended, killed at a pskel
// limit) and the next limits (the worst actual/predicted ratio of the extended jobs).
TEST_CASE("ExtensionsFeedTheReportAndTheExport") {
  store::Store s = open_fresh("extensions");
  const int64_t app = traced_app(s, 1000, "lu", 52, "script:00000000000000bb");
  const int64_t other = traced_app(s, 1000, "cg", 53);
  const int64_t pid = s.add_predictions(52, {0, 52, "/d", "/d/s", 4},
                                        {prediction(app, 1000, "batch", 100)}).value()[0];
  const int64_t other_pid = s.add_predictions(53, {0, 53, "/d", "/d/s", 4},
                                              {prediction(other, 1000, "batch", 100)}).value()[0];
  // lu: job 70 extended and finished at 2.5 x; job 71 extended to its ceiling and timed out
  // there (its own limit); job 72 timed out unextended (at pskel's limit); job 73 ran 3 x
  // without an extension (not counted in the factor).
  REQUIRE(s.record_outcome({70, 1000, pid, 0, 100, 3, 250, "COMPLETED", 0}).ok());
  REQUIRE(s.record_extension({70, pid, 3, 5, 120, 150}).ok());
  REQUIRE(s.record_outcome({71, 1000, pid, 0, 100, 3, 200, "TIMEOUT", 0}).ok());
  REQUIRE(s.record_extension({71, pid, 3, 120, 120, 150}).ok());
  REQUIRE(s.record_outcome({72, 1000, pid, 0, 100, 3, 180, "TIMEOUT", 0}).ok());
  REQUIRE(s.record_outcome({73, 1000, pid, 0, 100, 3, 300, "COMPLETED", 0}).ok());
  // cg: never extended.
  REQUIRE(s.record_outcome({74, 1000, other_pid, 0, 100, 3, 400, "COMPLETED", 0}).ok());
  const auto report = s.report(std::nullopt).value();
  REQUIRE(report.size() == 2);
  const store::Accuracy& lu = report[0].app.key == "lu" ? report[0] : report[1];
  CHECK(lu.limited == 4);
  CHECK(lu.extended == 2);
  CHECK(lu.timeouts == 2);
  CHECK(lu.killed_at_pskel_limit == 1);
  const jobsubmit::Snapshot snap(s.export_data().value());
  CHECK(snap.find(1000, "lu", 4, 1, "batch")->predicted_seconds == doctest::Approx(250));
  CHECK(snap.find(1000, "script:00000000000000bb", 4, 1, "batch")->predicted_seconds == doctest::Approx(250));
  CHECK(snap.find(1000, "cg", 4, 1, "batch")->predicted_seconds == doctest::Approx(100));
}

TEST_CASE("ANamedApplicationIsAlsoExportedUnderItsScript") {
  store::Store s = open_fresh("alias");
  const int64_t app = traced_app(s, 1000, "lu", 81, "script:00000000000000aa");
  CHECK(s.ensure_application(1000, "user1000", "lu").value() == app);  // the alias stays
  REQUIRE(s.add_predictions(81, {0, 81, "/d", "/d/s", 4}, {prediction(app, 1000, "batch", 100)}).ok());
  const jobsubmit::Snapshot snap(s.export_data().value());
  CHECK(snap.size() == 2);
  REQUIRE(snap.find(1000, "lu", 4, 1, "batch"));
  REQUIRE(snap.find(1000, "script:00000000000000aa", 4, 1, "batch"));
  CHECK(snap.find(1000, "script:00000000000000aa", 4, 1, "batch")->prediction_id ==
        snap.find(1000, "lu", 4, 1, "batch")->prediction_id);
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
  CHECK(snap.find(1000, "lu", 4, 1, "batch") != nullptr);
  CHECK(snap.find(1001, "lu", 4, 1, "batch") == nullptr);
  CHECK(snap.find(1001, "lu", 4, 1, "debug") == nullptr);
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

// Issue 22, finding 1: a prediction of 1e30 s (from the user's own calibration output) was
// stored and exported, and reached slurmctld.
TEST_CASE("StoreRefusesAPredictionOutsideTheExportRange") {
  store::Store s = open_fresh("range");
  const int64_t app = traced_app(s, 1000, "lu", 91);
  for (const double v : {1e30, 1e308, std::numeric_limits<double>::infinity(), -1.0,
                         std::numeric_limits<double>::quiet_NaN(),
                         std::nextafter(exportfile::kMaxPredictedSeconds, 1e300)}) {
    CAPTURE(v);
    auto r = s.add_predictions(91, {0, 91, "/d", "/d/s", 10},
                               {prediction(app, 1000, "batch", 100), prediction(app, 1000, "debug", v)});
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().what.find("out of range") != std::string::npos);
  }
  CHECK(s.predictions(app).value().empty());  // not even the good one of the same call
  CHECK(s.trace(91).value()->state == "running");
  auto at_bound = s.add_predictions(91, {0, 91, "/d", "/d/s", 10},
                                    {prediction(app, 1000, "batch", exportfile::kMaxPredictedSeconds)});
  REQUIRE(at_bound.ok());
  CHECK(s.export_data().value().entries.at(0).predicted_seconds == exportfile::kMaxPredictedSeconds);
}

// The outcome's prediction arrives through the job's environment, which a user's own client
// can fill: it is held to the range job_submit writes.
TEST_CASE("StoreRefusesAnOutcomeWithAPredictionOutsideTheExportRange") {
  store::Store s = open_fresh("outcome-range");
  const int64_t app = traced_app(s, 1000, "lu", 95);
  const int64_t pid = s.add_predictions(95, {0, 95, "/d", "/d/s", 10},
                                        {prediction(app, 1000, "batch", 100)}).value()[0];
  CHECK_FALSE(s.record_outcome({96, 1000, pid, 0, 1e308, 3, 110, "COMPLETED", 0}).ok());
  CHECK_FALSE(s.record_outcome({97, 1000, pid, 0, 100, 3, std::numeric_limits<double>::infinity(),
                                "COMPLETED", 0}).ok());
  CHECK(s.outcomes(app).value().empty());
  CHECK(s.record_outcome({98, 1000, pid, 0, 100, 3, -1, "UNKNOWN", 0}).ok());
}

// Issue 22, finding 2: `pskel db list` on a damaged store created tables, turned a truncated
// store into an empty one and changed the file's mode.
TEST_CASE("ReadOnlyOpenOfATruncatedStoreIsAnErrorAndChangesNothing") {
  const std::string good = bytes_of(filled_store("truncated"));
  REQUIRE(good.size() >= 8192);
  const std::string path = fresh_db("truncated-copy");
  for (const size_t n : {size_t{1}, size_t{99}, size_t{100}, size_t{4096}, good.size() / 2, good.size() - 1}) {
    CAPTURE(n);
    write_bytes(path, good.substr(0, n));
    ::chmod(path.c_str(), 0600);
    refused_read_only(path, n < 100 ? "less than an SQLite header" : "truncated store");
  }
}

TEST_CASE("ReadOnlyOpenOfAnEmptyFileIsAnErrorAndChangesNothing") {
  const std::string path = fresh_db("empty");
  write_bytes(path, "");
  ::chmod(path.c_str(), 0600);
  refused_read_only(path, "empty file");
}

TEST_CASE("ReadOnlyOpenOfAGarbageFileIsAnErrorAndChangesNothing") {
  const std::string path = fresh_db("garbage");
  std::string garbage(8192, '\0');
  for (size_t i = 0; i < garbage.size(); ++i) garbage[i] = static_cast<char>(i * 7919 % 251);
  write_bytes(path, garbage);
  refused_read_only(path, "not an SQLite database");
  write_bytes(path, "SQLite format 3");  // the magic cut short
  refused_read_only(path, "less than an SQLite header");
  // A valid header over garbage pages: SQLite's own reading has to say so.
  std::string header_only = bytes_of(filled_store("garbage-src")).substr(0, 100);
  header_only.resize(4096 * 12, '\x5a');
  write_bytes(path, header_only);
  const FileState before = file_state(path);
  auto s = store::Store::open(path, store::Access::ReadOnly);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().file == path);
  CHECK(file_state(path) == before);
}

TEST_CASE("ReadOnlyOpenOfAMissingStoreIsAnErrorAndCreatesNothing") {
  const std::string path = fresh_db("missing");
  refused_read_only(path, "No such file or directory");
  CHECK_FALSE(file_state(path).exists);
  const std::string dir = fresh_db("directory");
  REQUIRE(::mkdir(dir.c_str(), 0700) == 0);
  refused_read_only(dir, "not a regular file");
  const std::string link = fresh_db("link");
  REQUIRE(::symlink(filled_store("link-target").c_str(), link.c_str()) == 0);
  refused_read_only(link, "symbolic link");
}

TEST_CASE("ReadOnlyOpenOfAStoreOfAnotherSchemaIsAnErrorAndChangesNothing") {
  const std::string other = fresh_db("other");
  sql(other, "CREATE TABLE t(x); INSERT INTO t VALUES(1);");
  refused_read_only(other, "not a pskel store (no table meta)");
  const std::string no_tables = fresh_db("no-tables");
  sql(no_tables, "PRAGMA user_version=7;");  // a valid SQLite file without tables
  refused_read_only(no_tables, "not a pskel store (no tables)");
  const std::string newer = filled_store("newer");
  sql(newer, "UPDATE meta SET value='4' WHERE key='schema_version';");
  refused_read_only(newer, "schema version 4, this pskel knows 3");
  for (const char* odd : {"0", "-1", "2x", " 2", ""}) {
    CAPTURE(odd);
    const std::string path = filled_store("odd-version");
    sql(path, std::string("UPDATE meta SET value='") + odd + "' WHERE key='schema_version';");
    refused_read_only(path, "this pskel knows 3");
  }
  const std::string forged = filled_store("forged-version");
  sql(forged, "UPDATE meta SET value=CAST(x'320a1b5b33316dff' AS TEXT);");
  refused_read_only(forged, "schema version 2\\n\\x1b[31m");
  const std::string partial = filled_store("partial");
  sql(partial, "DROP TABLE outcomes;");
  refused_read_only(partial, "no table outcomes");
  const std::string unversioned = filled_store("unversioned");
  sql(unversioned, "DELETE FROM meta;");
  refused_read_only(unversioned, "no schema version");
}

TEST_CASE("ReadOnlyOpenReadsAGoodStoreWithoutChangingItsBytesOrMode") {
  const std::string path = filled_store("read-only");
  ::chmod(path.c_str(), 0600);
  const FileState before = file_state(path);
  {
    auto s = store::Store::open(path, store::Access::ReadOnly);
    REQUIRE_MESSAGE(s.ok(), s.error().line());
    CHECK(s.value().list(std::nullopt).value().size() == 2);
    CHECK(s.value().report(std::nullopt).value().size() == 1);
    CHECK(s.value().export_data().value().entries.size() == 1);
    CHECK_FALSE(s.value().ensure_application(5, "x", "y").ok());  // and it cannot write
  }
  CHECK(file_state(path) == before);
  CHECK((before.mode & 0777) == 0600);
}

TEST_CASE("ReadWriteOpenNeverGivesAForeignDatabasePskelsTables") {
  const std::string other = fresh_db("foreign");
  sql(other, "CREATE TABLE t(x); INSERT INTO t VALUES(1);");
  ::chmod(other.c_str(), 0600);
  const FileState before = file_state(other);
  auto s = store::Store::open(other);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().what == "not a pskel store (no table meta)");
  CHECK(file_state(other) == before);
  const std::string garbage = fresh_db("foreign-garbage");
  write_bytes(garbage, std::string(4096, 'x'));
  CHECK_FALSE(store::Store::open(garbage).ok());
  CHECK(bytes_of(garbage) == std::string(4096, 'x'));
}

// Issue 22, finding 3: what a damaged store's rows did to the commands that read them.

// A blob or text in a number column was read as 0: report divided by an actual run time of 0
// and the export carried a 0 s prediction (a one-minute limit) for text in predicted_seconds.
TEST_CASE("StoreReaderRejectsABlobOrTextWhereANumberBelongs") {
  for (const char* value : {"x'ff'", "'abc'", "''", "9e999"}) {
    CAPTURE(value);
    const std::string path = filled_store("number-column");
    sql(path, std::string("UPDATE outcomes SET actual_seconds=") + value + ";");
    sql(path, std::string("UPDATE traces SET runtime_seconds=") + value + " WHERE job_id=11;");
    sql(path, std::string("UPDATE predictions SET skeleton_seconds=") + value + ";");
    auto s = store::Store::open(path, store::Access::ReadOnly);
    REQUIRE_MESSAGE(s.ok(), s.error().line());
    const int64_t app = s.value().find_applications("lu", std::nullopt).value().at(0).id;
    for (const Error& e : {s.value().report(std::nullopt).error(), s.value().outcomes(app).error(),
                           s.value().traces(app).error(), s.value().predictions(app).error()}) {
      CHECK(e.file == path);
      CHECK_MESSAGE(e.what.starts_with("damaged row in "), e.what);
    }
    CHECK_FALSE(s.value().trace(11).ok());
  }
}

// ntasks -1 was read as 4294967295 tasks, 1.5 as 1: a prediction for jobs nobody submitted.
TEST_CASE("StoreReaderRejectsIntegersOutOfRangeOrFractional") {
  for (const std::string column : {"ntasks", "nodes"}) {
    for (const char* value : {"-1", "4294967296", "1.5", "1e308"}) {
      CAPTURE(column);
      CAPTURE(value);
      const std::string path = filled_store("int-column");
      sql(path, "UPDATE predictions SET " + column + "=" + value + ";");
      sql(path, "UPDATE traces SET " + column + "=" + value + ";");
      auto s = store::Store::open(path, store::Access::ReadOnly);
      REQUIRE(s.ok());
      const int64_t app = s.value().find_applications("lu", std::nullopt).value().at(0).id;
      REQUIRE_FALSE(s.value().predictions(app).ok());
      CHECK(s.value().predictions(app).error().what.find("column " + column) != std::string::npos);
      REQUIRE_FALSE(s.value().traces(app).ok());
      CHECK(s.value().traces(app).error().what.find("column " + column) != std::string::npos);
      CHECK(s.value().export_data().value().entries.empty());
    }
  }
}

// A blob in a text column became a std::string of arbitrary bytes, which nlohmann's dump()
// threw on (the aborts of pskel db list --json and report --json).
TEST_CASE("StoreReaderRejectsABlobWhereTextBelongs") {
  const std::string path = filled_store("blob-text");
  sql(path, "UPDATE applications SET user=x'ff' WHERE key='lu';");
  auto s = store::Store::open(path, store::Access::ReadOnly);
  REQUIRE(s.ok());
  auto list = s.value().list(std::nullopt);
  REQUIRE_FALSE(list.ok());
  CHECK(list.error().what == "damaged row in applications: column user is a blob, expected text");
}

// Text that is not UTF-8 is stored text all the same (a path, a message): returned as stored,
// and JSON of it is written with U+FFFD, where dump() threw and pskel aborted.
TEST_CASE("StoredTextWithInvalidUtf8IsReadAsStoredAndWrittenAsJson") {
  const std::string path = filled_store("utf8");
  sql(path, "UPDATE traces SET message=CAST(x'c328ff0a1b5b33316d' AS TEXT) WHERE job_id=12;"
            "UPDATE applications SET user=CAST(x'ff' AS TEXT) WHERE key='cg';");
  auto s = store::Store::open(path, store::Access::ReadOnly);
  REQUIRE(s.ok());
  const auto list = s.value().list(std::nullopt);
  REQUIRE(list.ok());
  const store::AppSummary& cg = list.value().at(0).app.key == "cg" ? list.value()[0] : list.value()[1];
  CHECK(cg.app.user == "\xff");
  CHECK(cg.last_message == "\xc3\x28\xff\n\x1b[31m");
  const nlohmann::json j = {{"user", cg.app.user}, {"last_message", cg.last_message}};
  CHECK_THROWS(j.dump());
  const std::string text = json_text(j);
  CHECK(nlohmann::json::parse(text)["user"] == "\xef\xbf\xbd");
}

// The export carried whatever a damaged row read as; now the row is left out and the others
// still reach slurmctld.
TEST_CASE("ExportLeavesOutDamagedRowsAndKeepsTheRest") {
  const std::string path = filled_store("export-damaged");
  {
    store::Store s = store::Store::open(path).value();
    const int64_t cg = s.find_applications("cg", std::nullopt).value().at(0).id;
    REQUIRE(s.add_predictions(12, {0, 12, "/d", "/d/s", 10},
                              {prediction(cg, 1001, "batch", 50), prediction(cg, 1001, "debug", 60)}).ok());
    REQUIRE(s.export_data().value().entries.size() == 3);
  }
  sql(path, "UPDATE predictions SET predicted_seconds='abc' WHERE partition='debug';"
            "UPDATE predictions SET ntasks=1.5 WHERE uid=1000;"
            "INSERT INTO partitions VALUES(x'ff', 5, 0);"
            "INSERT INTO partitions VALUES('short', 'x', 0);");
  auto s = store::Store::open(path, store::Access::ReadOnly);
  REQUIRE(s.ok());
  const auto data = s.value().export_data();
  REQUIRE_MESSAGE(data.ok(), data.error().line());
  REQUIRE(data.value().entries.size() == 1);
  CHECK(data.value().entries[0].uid == 1001);
  CHECK(data.value().entries[0].predicted_seconds == 50);
  REQUIRE(data.value().partitions.size() == 1);
  CHECK(data.value().partitions[0].name == "batch");
}

TEST_CASE("PredictionsDifferingOnlyInTheirNodeCountAreKeptApart") {
  store::Store s = open_fresh("nodes");
  const int64_t app = traced_app(s, 1000, "lu", 11);
  const store::Skeleton sk{0, 11, "/d", "/d/s", 10};
  store::Prediction two = prediction(app, 1000, "batch", 300);
  two.nodes = 2;
  REQUIRE(s.add_predictions(11, sk, {prediction(app, 1000, "batch", 100), two}).ok());
  auto preds = s.predictions(app).value();
  REQUIRE(preds.size() == 2);
  CHECK(preds[0].nodes == 1);
  CHECK(preds[0].predicted_seconds == 100);
  CHECK(preds[1].nodes == 2);
  CHECK(preds[1].predicted_seconds == 300);
  const auto data = s.export_data().value();
  REQUIRE(data.entries.size() == 2);
  const jobsubmit::Snapshot snap(data);
  CHECK(snap.find(1000, "lu", 4, 1, "batch")->predicted_seconds == 100);
  CHECK(snap.find(1000, "lu", 4, 2, "batch")->predicted_seconds == 300);
  CHECK(snap.find(1000, "lu", 4, 3, "batch") == nullptr);
  CHECK(snap.find(1000, "lu", 4, jobsubmit::kAnyNodes, "batch")->predicted_seconds == 300);

  // A newer prediction replaces the one of its own key only: 2 nodes, not 1.
  REQUIRE(s.put_trace(trace_row(12, app, 1000)).ok());
  two.predicted_seconds = 250;
  const int64_t newer = s.add_predictions(12, sk, {two}).value().at(0);
  preds = s.predictions(app).value();
  REQUIRE(preds.size() == 2);
  CHECK(preds[0].nodes == 1);
  CHECK(preds[0].predicted_seconds == 100);
  CHECK(preds[1].nodes == 2);
  CHECK(preds[1].predicted_seconds == 250);
  CHECK(preds[1].id == newer);
}

TEST_CASE("TracesKeepTheirNodeCount") {
  store::Store s = open_fresh("trace-nodes");
  const int64_t app = s.ensure_application(1000, "alice", "lu").value();
  store::Trace t = trace_row(21, app, 1000);
  t.nodes = 2;
  REQUIRE(s.put_trace(t).ok());
  REQUIRE(s.put_trace(trace_row(22, app, 1000)).ok());
  CHECK(s.trace(21).value()->nodes == 2);
  const auto traces = s.traces(app).value();
  REQUIRE(traces.size() == 2);
  CHECK(traces[0].nodes == 2);
  CHECK(traces[1].nodes == 1);
}

TEST_CASE("ExportLeavesOutAPredictionForZeroNodes") {
  const std::string path = filled_store("zero-nodes");
  sql(path, "UPDATE predictions SET nodes=0;");
  auto s = store::Store::open(path, store::Access::ReadOnly);
  REQUIRE(s.ok());
  const int64_t app = s.value().find_applications("lu", std::nullopt).value().at(0).id;
  CHECK(s.value().predictions(app).value().at(0).nodes == 0);  // shown as stored
  CHECK(s.value().export_data().value().entries.empty());
}

TEST_CASE("AVersion1StoreIsUpgradedByAWritingOpenAndKeepsItsRows") {
  const std::string path = v1_store("v1");
  // Looking must not write: read-only, it says what upgrades it.
  refused_read_only(path, "store of an older schema (version 1, this pskel's is 3)");
  CHECK(store::Store::open(path, store::Access::ReadOnly).error().what.find("pskel db export") !=
        std::string::npos);
  {
    auto s = store::Store::open(path);
    REQUIRE_MESSAGE(s.ok(), s.error().line());
  }
  CHECK(rows(path, "SELECT value FROM meta WHERE key='schema_version'") == "3");
  auto opened = store::Store::open(path, store::Access::ReadOnly);
  REQUIRE_MESSAGE(opened.ok(), opened.error().line());
  const store::Store& s = opened.value();

  const auto traces = s.traces(5).value();
  REQUIRE(traces.size() == 1);
  CHECK(traces[0].job_id == 11);
  CHECK(traces[0].ntasks == 4);
  CHECK(traces[0].nodes == 1);
  CHECK(traces[0].partition == "batch");
  CHECK(traces[0].state == "done");
  CHECK(traces[0].trace_dir == "/spool/job.11");
  CHECK(traces[0].runtime_seconds == 12.5);
  CHECK(traces[0].updated == 200);

  const auto preds = s.predictions(5).value();
  REQUIRE(preds.size() == 2);
  CHECK(preds[0].id == 7);
  CHECK(preds[0].uid == 1000);
  CHECK(preds[0].ntasks == 4);
  CHECK(preds[0].nodes == 1);
  CHECK(preds[0].partition == "batch");
  CHECK(preds[0].skeleton_id == 3);
  CHECK(preds[0].skeleton_seconds == 1.25);
  CHECK(preds[0].scale == 10);
  CHECK(preds[0].predicted_seconds == 12.5);
  CHECK(preds[0].created == 400);
  CHECK(preds[1].id == 8);
  CHECK(preds[1].nodes == 1);
  CHECK(preds[1].partition == "debug");

  const auto outcomes = s.outcomes(5).value();
  REQUIRE(outcomes.size() == 1);
  CHECK(outcomes[0].prediction_id == 7);
  CHECK(s.report(std::nullopt).value().size() == 1);
  const auto data = s.export_data().value();
  CHECK(data.entries.size() == 4);  // two partitions, under the name and the script
  for (const exportfile::Entry& e : data.entries) CHECK(e.nodes == 1);
  CHECK(data.partitions.size() == 1);

  // The same tables as a new store's: the upgrade and kSchema agree.
  const std::string fresh = filled_store("v2-shape");
  for (const char* table : {"meta", "applications", "traces", "skeletons", "predictions", "outcomes",
                            "partitions"}) {
    CAPTURE(table);
    CHECK(table_shape(path, table) == table_shape(fresh, table));
  }
  CHECK(table_shape(path, "predictions").ends_with("\nunique: app_id,ntasks,nodes,partition"));
  // Foreign keys still hold after the rebuild: forgetting the application takes its rows along.
  {
    store::Store w = store::Store::open(path).value();
    REQUIRE(w.forget(5).value() == 1);
  }
  CHECK(rows(path, "SELECT count(*) FROM predictions") == "0");
  CHECK(rows(path, "SELECT count(*) FROM traces") == "0");
}

TEST_CASE("AnUpgradedStoreTakesPredictionsOfOtherNodeCounts") {
  const std::string path = v1_store("v1-then-2-nodes");
  store::Store s = store::Store::open(path).value();
  REQUIRE(s.put_trace(trace_row(12, 5, 1000)).ok());
  store::Prediction two = prediction(5, 1000, "batch", 40);
  two.nodes = 2;
  REQUIRE(s.add_predictions(12, {0, 12, "/d", "/d/s", 10}, {two}).ok());
  const auto preds = s.predictions(5).value();
  REQUIRE(preds.size() == 3);  // by task count, node count, partition
  CHECK(preds[0].id == 7);      // the old 1-node prediction for batch stays
  CHECK(preds[1].id == 8);
  CHECK(preds[2].partition == "batch");
  CHECK(preds[2].nodes == 2);
  CHECK(preds[2].predicted_seconds == 40);
}

TEST_CASE("AFailedUpgradeLeavesTheVersion1StoreAsItWas") {
  const std::string path = v1_store("v1-failed");
  // In the way of the rebuild of predictions, after traces got its new column.
  sql(path, "CREATE TABLE predictions_v2(x);");
  auto s = store::Store::open(path);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().file == path);
  CHECK_MESSAGE(s.error().what.starts_with("cannot upgrade the store from schema version 1: "),
                s.error().what);
  CHECK(rows(path, "SELECT value FROM meta WHERE key='schema_version'") == "1");
  CHECK(rows(path, "SELECT count(*) FROM pragma_table_info('traces') WHERE name='nodes'") == "0");
  CHECK(rows(path, "SELECT id FROM predictions ORDER BY id") == "7\n8");
  sql(path, "DROP TABLE predictions_v2;");
  auto again = store::Store::open(path);
  REQUIRE_MESSAGE(again.ok(), again.error().line());
  CHECK(again.value().predictions(5).value().size() == 2);
}

TEST_CASE("AVersion1StoreWithoutAllItsTablesIsNotUpgraded") {
  const std::string path = v1_store("v1-partial");
  sql(path, "DROP TABLE outcomes;");
  auto s = store::Store::open(path);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().what == "not a pskel store (no table outcomes)");
  CHECK(rows(path, "SELECT value FROM meta WHERE key='schema_version'") == "1");
}

TEST_CASE("ModelRunsAndModelsAreKeptPerApplicationAndGoWithIt") {
  const std::string path = fresh_db("model-runs");
  auto s = store::Store::open(path);
  REQUIRE_MESSAGE(s.ok(), s.error().line());
  const int64_t app = s.value().ensure_application(1000, "alice", "sweep").value();
  for (int64_t job = 1; job <= 3; ++job) {
    store::ModelRun run;
    run.job_id = job;
    run.app_id = app;
    run.uid = 1000;
    run.ntasks = 2;
    run.args = "-n " + std::to_string(100 * job);
    run.seconds = 1.5 * static_cast<double>(job);
    run.features = "{\"MPI_Allreduce\":10}";
    REQUIRE(s.value().put_model_run(run).ok());
  }
  store::ModelRun bad;
  bad.job_id = 9;
  bad.app_id = app;
  bad.seconds = 0;
  CHECK_FALSE(s.value().put_model_run(bad).ok());
  const auto runs = s.value().model_runs(app).value();
  REQUIRE(runs.size() == 3);
  CHECK(runs[1].args == "-n 200");
  CHECK(runs[2].seconds == 4.5);
  CHECK(runs[0].features == "{\"MPI_Allreduce\":10}");
  CHECK_FALSE(s.value().model(app).value().has_value());
  REQUIRE(s.value().put_model(store::StoredModel{
      app, 1000, "{}", "M 0 x 0123456789abcdef 0 2 0.9 1.1 0.5 1 1 0 0 1 0.25 1 1 1 0", 3, 0})
              .ok());
  const auto exported = s.value().export_data().value().models;
  REQUIRE(exported.size() == 1);
  CHECK(exported[0].app == "sweep");
  CHECK(exported[0].uid == 1000);
  CHECK(exported[0].model_id == app);
  const std::vector<double> job = {2, 100};
  CHECK(pskel::exportfile::model_seconds(exported[0], job) == doctest::Approx(0.5 + 0.25 * 100));
  const auto model = s.value().model(app).value();
  REQUIRE(model.has_value());
  CHECK(model->runs == 3);
  CHECK(model->fitted > 0);
  // A limit from the model: minus the application's id, and the outcome is the application's.
  store::Outcome o;
  o.job_id = 77;
  o.uid = 1000;
  o.prediction_id = -app;
  o.predicted_seconds = 30;
  o.limit_minutes = 2;
  o.actual_seconds = 28;
  o.state = "COMPLETED";
  REQUIRE(s.value().record_outcome(o).ok());
  const auto outcomes = s.value().outcomes(app).value();
  REQUIRE(outcomes.size() == 1);
  CHECK(outcomes[0].prediction_id == -app);
  REQUIRE(s.value().forget(app).value() == 1);
  CHECK(s.value().model_runs(app).value().empty());
  CHECK_FALSE(s.value().model(app).value().has_value());
}
