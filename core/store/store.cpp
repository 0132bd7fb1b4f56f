#include "store/store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <ctime>
#include <iterator>
#include <utility>

#include "util/text.h"

namespace pskel::store {
namespace {

// The schema a new store gets. A change of it is a new version: kSchemaVersion + 1, and a step
// in kMigrations that brings a store of the previous version to the same tables.
constexpr int kSchemaVersion = 3;

const char* const kSchema = R"sql(
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
  updated INTEGER NOT NULL,
  nodes INTEGER NOT NULL DEFAULT 1);
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
  nodes INTEGER NOT NULL DEFAULT 1,
  partition TEXT NOT NULL,
  skeleton_id INTEGER REFERENCES skeletons(id) ON DELETE SET NULL,
  skeleton_seconds REAL NOT NULL,
  scale REAL NOT NULL,
  predicted_seconds REAL NOT NULL,
  created INTEGER NOT NULL,
  input_key TEXT NOT NULL DEFAULT '-',
  UNIQUE(app_id, ntasks, nodes, partition));
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
CREATE TABLE IF NOT EXISTS extensions(
  id INTEGER PRIMARY KEY,
  job_id INTEGER NOT NULL,
  prediction_id INTEGER NOT NULL,
  app_id INTEGER REFERENCES applications(id) ON DELETE CASCADE,
  from_minutes INTEGER NOT NULL,
  to_minutes INTEGER NOT NULL,
  ceiling_minutes INTEGER NOT NULL,
  elapsed_seconds INTEGER NOT NULL,
  at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS model_runs(
  job_id INTEGER PRIMARY KEY,
  app_id INTEGER NOT NULL REFERENCES applications(id) ON DELETE CASCADE,
  uid INTEGER NOT NULL,
  ntasks INTEGER NOT NULL,
  args TEXT NOT NULL,
  seconds REAL NOT NULL,
  features TEXT NOT NULL,
  recorded INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS models(
  app_id INTEGER PRIMARY KEY REFERENCES applications(id) ON DELETE CASCADE,
  uid INTEGER NOT NULL,
  model TEXT NOT NULL,
  export_line TEXT NOT NULL,
  runs INTEGER NOT NULL,
  fitted INTEGER NOT NULL);
)sql";

// kMigrations[i] brings a store of schema version i + 1 to version i + 2, in the transaction
// that opens it. A step is written once and never changed: it names the tables as they were
// in its two versions, not as kSchema has them now.
const char* const kMigrations[] = {
    // 1 -> 2: predictions keyed by node count as well (multi-node jobs). traces.nodes goes
    // last, where kSchema has it too. SQLite cannot change a UNIQUE constraint: predictions is
    // rebuilt (nothing refers to it). Every existing row was a one-node job. The guard's
    // extensions are new.
    R"sql(
ALTER TABLE traces ADD COLUMN nodes INTEGER NOT NULL DEFAULT 1;
CREATE TABLE predictions_v2(
  id INTEGER PRIMARY KEY,
  app_id INTEGER NOT NULL REFERENCES applications(id) ON DELETE CASCADE,
  uid INTEGER NOT NULL,
  ntasks INTEGER NOT NULL,
  nodes INTEGER NOT NULL DEFAULT 1,
  partition TEXT NOT NULL,
  skeleton_id INTEGER REFERENCES skeletons(id) ON DELETE SET NULL,
  skeleton_seconds REAL NOT NULL,
  scale REAL NOT NULL,
  predicted_seconds REAL NOT NULL,
  created INTEGER NOT NULL,
  UNIQUE(app_id, ntasks, nodes, partition));
INSERT INTO predictions_v2(id, app_id, uid, ntasks, nodes, partition, skeleton_id,
                           skeleton_seconds, scale, predicted_seconds, created)
  SELECT id, app_id, uid, ntasks, 1, partition, skeleton_id, skeleton_seconds, scale,
         predicted_seconds, created FROM predictions;
DROP TABLE predictions;
ALTER TABLE predictions_v2 RENAME TO predictions;
CREATE TABLE extensions(
  id INTEGER PRIMARY KEY,
  job_id INTEGER NOT NULL,
  prediction_id INTEGER NOT NULL,
  app_id INTEGER REFERENCES applications(id) ON DELETE CASCADE,
  from_minutes INTEGER NOT NULL,
  to_minutes INTEGER NOT NULL,
  ceiling_minutes INTEGER NOT NULL,
  elapsed_seconds INTEGER NOT NULL,
  at INTEGER NOT NULL);
)sql",
    // 2 -> 3: the runs of each traced application (job arguments, trace features, run time)
    // and the run-time model fitted to them (docs/model.md); a prediction holds for its traced
    // job's inputs (every older one: any).
    R"sql(
ALTER TABLE predictions ADD COLUMN input_key TEXT NOT NULL DEFAULT '-';
CREATE TABLE model_runs(
  job_id INTEGER PRIMARY KEY,
  app_id INTEGER NOT NULL REFERENCES applications(id) ON DELETE CASCADE,
  uid INTEGER NOT NULL,
  ntasks INTEGER NOT NULL,
  args TEXT NOT NULL,
  seconds REAL NOT NULL,
  features TEXT NOT NULL,
  recorded INTEGER NOT NULL);
CREATE TABLE models(
  app_id INTEGER PRIMARY KEY REFERENCES applications(id) ON DELETE CASCADE,
  uid INTEGER NOT NULL,
  model TEXT NOT NULL,
  export_line TEXT NOT NULL,
  runs INTEGER NOT NULL,
  fitted INTEGER NOT NULL);
)sql",
};
static_assert(std::size(kMigrations) == kSchemaVersion - 1, "one migration per older version");

int64_t now() { return static_cast<int64_t>(std::time(nullptr)); }

// A prepared statement: bind with bind(...), step with next()/run(). The column readers check
// the type of what they read: the first mismatch ends the iteration like an SQLite error and is
// what error() reports.
class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) : db_(db) {
    rc_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr);
  }
  ~Stmt() { sqlite3_finalize(stmt_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  template <class... Args>
  Stmt& bind(const Args&... args) {
    int i = 0;
    (bind_one(++i, args), ...);
    return *this;
  }
  // True while a row is available; errors end the iteration and are reported by ok().
  bool next() {
    if (rc_ != SQLITE_OK && rc_ != SQLITE_ROW) return false;
    rc_ = sqlite3_step(stmt_);
    return rc_ == SQLITE_ROW;
  }
  Result<bool> run() {
    next();
    if (rc_ == SQLITE_DONE || rc_ == SQLITE_ROW) return true;
    return error();
  }
  bool ok() const { return rc_ == SQLITE_OK || rc_ == SQLITE_ROW || rc_ == SQLITE_DONE; }
  Error error() const {
    const char* file = sqlite3_db_filename(db_, "main");
    return Error{file ? file : "", bad_.empty() ? sqlite3_errmsg(db_) : bad_};
  }
  // Forgets a type mismatch in the current row, so that the next row can be read.
  void skip_bad_row() {
    if (!bad_.empty()) rc_ = SQLITE_ROW;
    bad_.clear();
  }

  int64_t i64(int col) const {
    if (!is(col, SQLITE_INTEGER, "an integer")) return 0;
    return sqlite3_column_int64(stmt_, col);
  }
  uint32_t u32(int col) const {
    const int64_t v = i64(col);
    if (v < 0 || v > int64_t{0xffffffff}) {
      mismatch(col, "an integer from 0 to 4294967295", "out of range");
      return 0;
    }
    return static_cast<uint32_t>(v);
  }
  // REAL columns hold integers too (a value written as 3600 stays an integer in SQLite).
  double f64(int col) const {
    const int type = sqlite3_column_type(stmt_, col);
    if (type != SQLITE_FLOAT && type != SQLITE_INTEGER) {
      mismatch(col, "a number", type_name(type));
      return 0;
    }
    const double v = sqlite3_column_double(stmt_, col);
    if (!std::isfinite(v)) mismatch(col, "a finite number", "infinite");
    return v;
  }
  // NULL reads as "" (a subquery that found no row); the bytes as stored, NULs included.
  std::string text(int col) const {
    const int type = sqlite3_column_type(stmt_, col);
    if (type == SQLITE_NULL) return "";
    if (!is(col, SQLITE_TEXT, "text")) return "";
    const auto* p = sqlite3_column_text(stmt_, col);
    const int n = sqlite3_column_bytes(stmt_, col);
    return p && n > 0 ? std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(n)) : "";
  }

 private:
  void bind_one(int i, int64_t v) { keep(sqlite3_bind_int64(stmt_, i, v)); }
  void bind_one(int i, uint32_t v) { keep(sqlite3_bind_int64(stmt_, i, v)); }
  void bind_one(int i, int v) { keep(sqlite3_bind_int64(stmt_, i, v)); }
  void bind_one(int i, double v) { keep(sqlite3_bind_double(stmt_, i, v)); }
  void bind_one(int i, const std::string& v) {
    keep(sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT));
  }
  void bind_one(int i, std::nullptr_t) { keep(sqlite3_bind_null(stmt_, i)); }
  void bind_one(int i, std::optional<uint32_t> v) {
    if (v) bind_one(i, *v);
    else bind_one(i, nullptr);
  }
  void keep(int rc) {
    if (rc != SQLITE_OK && rc_ == SQLITE_OK) rc_ = rc;
  }

  static const char* type_name(int type) {
    switch (type) {
      case SQLITE_INTEGER: return "an integer";
      case SQLITE_FLOAT: return "a real";
      case SQLITE_TEXT: return "text";
      case SQLITE_BLOB: return "a blob";
      default: return "null";
    }
  }
  bool is(int col, int type, const char* expected) const {
    const int found = sqlite3_column_type(stmt_, col);
    if (found == type) return true;
    mismatch(col, expected, type_name(found));
    return false;
  }
  // Only the first mismatch of a row is kept: it names the table and column to look at.
  void mismatch(int col, const char* expected, const char* found) const {
    if (!bad_.empty()) return;
    const char* table = sqlite3_column_table_name(stmt_, col);  // null for computed columns
    const char* name = sqlite3_column_name(stmt_, col);
    bad_ = std::string("damaged row") + (table ? std::string(" in ") + table : "") + ": column " +
           (name ? name : "?") + " is " + found + ", expected " + expected;
    rc_ = SQLITE_MISMATCH;
  }

  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  // Set by the const column readers too: a type mismatch ends the query like an SQLite error.
  mutable int rc_;
  mutable std::string bad_;
};

Result<bool> exec(sqlite3* db, const char* sql) {
  char* msg = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &msg) == SQLITE_OK) return true;
  const char* file = sqlite3_db_filename(db, "main");
  Error e{file ? file : "", msg ? msg : sqlite3_errmsg(db)};
  sqlite3_free(msg);
  return e;
}

// BEGIN IMMEDIATE ... COMMIT, rolled back unless commit() succeeded.
class Transaction {
 public:
  explicit Transaction(sqlite3* db) : db_(db), begun_(exec(db, "BEGIN IMMEDIATE")) {}
  ~Transaction() {
    if (begun_ && !done_) (void)exec(db_, "ROLLBACK");
  }
  Result<bool> begun() const { return begun_; }
  Result<bool> commit() {
    auto r = exec(db_, "COMMIT");
    done_ = r.ok();
    return r;
  }

 private:
  sqlite3* db_;
  Result<bool> begun_;
  bool done_ = false;
};

// Columns id, uid, user, key, created, script_key from column c on.
Application read_application(const Stmt& s, int c) {
  return Application{s.i64(c), s.u32(c + 1), s.text(c + 2), s.text(c + 3), s.i64(c + 4), s.text(c + 5)};
}

// Every row of a query, read by `read`.
template <class F>
auto collect(Stmt& s, F read) -> Result<std::vector<decltype(read(s))>> {
  std::vector<decltype(read(s))> out;
  while (s.next()) out.push_back(read(s));
  if (!s.ok()) return s.error();
  return out;
}

#define PSKEL_TRY(expr)                        \
  do {                                         \
    auto pskel_try_r = (expr);                 \
    if (!pskel_try_r) return pskel_try_r.error(); \
  } while (0)

}  // namespace

namespace {

// pskel's tables, and the schema version each first appeared in.
struct Table {
  const char* name;
  int since;
};
const Table kTables[] = {{"meta", 1},     {"applications", 1}, {"traces", 1},     {"skeletons", 1},
                         {"predictions", 1}, {"outcomes", 1},  {"partitions", 1}, {"extensions", 2},
                         {"model_runs", 3},  {"models", 3}};

// The schema version the store records, if it is one this pskel knows (1 to kSchemaVersion).
Result<int> stored_version(sqlite3* db, const std::string& path) {
  Stmt version(db, "SELECT value FROM meta WHERE key='schema_version'");
  if (!version.next()) {
    if (!version.ok()) return Error{path, version.error().what};
    return Error{path, "not a pskel store (no schema version)"};
  }
  const std::string v = version.text(0);
  if (!version.ok()) return Error{path, version.error().what};
  int n = 0;
  const auto r = std::from_chars(v.data(), v.data() + v.size(), n);
  if (r.ec != std::errc() || r.ptr != v.data() + v.size() || n < 1 || n > kSchemaVersion)
    return Error{path, "schema version " + one_line(v, 40) + ", this pskel knows " +
                           std::to_string(kSchemaVersion)};
  return n;
}

// The schema version of the opened database, if it is pskel's and of a version this pskel
// knows. `for_writing`: a database without any table is version 0 (a new file, about to get
// the schema), and a store of this version needs only meta of pskel's tables (CREATE TABLE IF
// NOT EXISTS adds the others). Otherwise every table must be there, an older store's too (the
// upgrade changes them). Reading sqlite_master is the first read of the file: a file that is
// not SQLite fails here.
Result<int> check_schema(sqlite3* db, const std::string& path, bool for_writing) {
  Stmt tables(db, "SELECT name FROM sqlite_master WHERE type='table'");
  std::vector<std::string> found;
  while (tables.next()) found.push_back(tables.text(0));
  if (!tables.ok()) return Error{path, tables.error().what};
  if (found.empty()) {
    if (for_writing) return 0;
    return Error{path, "not a pskel store (no tables)"};
  }
  auto missing = [&](const char* t) {
    return std::find(found.begin(), found.end(), t) == found.end();
  };
  if (missing("meta")) return Error{path, "not a pskel store (no table meta)"};
  const Result<int> version = stored_version(db, path);
  if (!version) return version.error();
  for (const Table& t : kTables)
    if (t.since <= version.value() && missing(t.name) && !(for_writing && version.value() == kSchemaVersion))
      return Error{path, std::string("not a pskel store (no table ") + t.name + ")"};
  return version.value();
}

// Brings a store of an older schema version to this one, inside the transaction that opens it
// and with foreign keys off (SQLite's way of rebuilding a table). The version is read again
// here: another process may have upgraded the store since check_schema read it, and no step
// may run twice.
Result<bool> upgrade(sqlite3* db, const std::string& path) {
  const Result<int> from = stored_version(db, path);
  if (!from) return from.error();
  if (from.value() == kSchemaVersion) return true;
  for (int v = from.value(); v < kSchemaVersion; ++v)
    if (auto r = exec(db, kMigrations[v - 1]); !r)
      return Error{path, "cannot upgrade the store from schema version " + std::to_string(v) +
                             ": " + r.error().what};
  return Stmt(db, "UPDATE meta SET value=? WHERE key='schema_version'")
      .bind(std::to_string(kSchemaVersion))
      .run();
}

uint32_t be32(const unsigned char* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3];
}

// SQLite notices a truncated file only when a query reaches a missing page ("database disk
// image is malformed", or nothing at all when no query does). Its 100-byte header says how long
// the file is; when no WAL holds newer pages, a shorter file has lost its end.
Result<bool> check_length(const std::string& path, off_t size) {
  static constexpr char kMagic[] = "SQLite format 3";  // and its NUL: 16 bytes
  unsigned char h[100];
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return Error{path, std::string("cannot open the store: ") + std::strerror(errno)};
  const ssize_t n = ::pread(fd, h, sizeof h, 0);
  ::close(fd);
  if (n < 0) return Error{path, std::string("cannot read the store: ") + std::strerror(errno)};
  if (n < static_cast<ssize_t>(sizeof h))
    return Error{path, "not a pskel store: " + std::to_string(n) +
                           " bytes, less than an SQLite header (truncated?)"};
  if (std::memcmp(h, kMagic, sizeof kMagic) != 0) return Error{path, "not an SQLite database"};
  const uint32_t page_size = h[16] << 8 | h[17];
  const uint64_t bytes = uint64_t{page_size == 1 ? 65536u : page_size} * be32(h + 28);
  const bool count_valid = be32(h + 24) == be32(h + 92);
  struct stat wal;
  const bool wal_has_pages = ::stat((path + "-wal").c_str(), &wal) == 0 && wal.st_size > 0;
  if (count_valid && !wal_has_pages && static_cast<uint64_t>(size) < bytes)
    return Error{path, "truncated store: " + std::to_string(size) + " bytes, its header says " +
                           std::to_string(bytes)};
  return true;
}

Result<sqlite3*> open_db(const std::string& path, int flags) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, flags | SQLITE_OPEN_FULLMUTEX | SQLITE_OPEN_NOFOLLOW,
                      nullptr) != SQLITE_OK) {
    Error e{path, std::string(db ? sqlite3_errmsg(db) : "cannot open") +
                      (sqlite3_errcode(db) == SQLITE_CANTOPEN ? " (does its directory exist?)" : "")};
    sqlite3_close(db);
    return e;
  }
  sqlite3_busy_timeout(db, 30000);
  return db;
}

}  // namespace

Result<Store> Store::open(const std::string& path, Access access) {
  if (access == Access::ReadOnly) {
    // SQLite would open a missing or empty file as an empty database and report "no such
    // table" later; the file itself is what is wrong, said so up front.
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0)
      return Error{path, std::string("cannot open the store: ") + std::strerror(errno)};
    if (S_ISLNK(st.st_mode)) return Error{path, "the store is a symbolic link"};
    if (!S_ISREG(st.st_mode)) return Error{path, "the store is not a regular file"};
    if (st.st_size == 0) return Error{path, "empty file, not a pskel store"};
    PSKEL_TRY(check_length(path, st.st_size));
    auto db = open_db(path, SQLITE_OPEN_READONLY);
    if (!db) return db.error();
    Store store(db.value(), path);
    const Result<int> version = check_schema(db.value(), path, false);
    if (!version) return version.error();
    if (version.value() < kSchemaVersion)
      return Error{path, "store of an older schema (version " + std::to_string(version.value()) +
                             ", this pskel's is " + std::to_string(kSchemaVersion) +
                             "): any command that writes to it, such as pskel db export, "
                             "upgrades it"};
    return store;
  }
  auto db = open_db(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  if (!db) return db.error();
  Store store(db.value(), path);
  // Before anything is written: a file that is not SQLite, or a database of other tables,
  // stays as it is.
  const Result<int> version = check_schema(db.value(), path, true);
  if (!version) return version.error();
  PSKEL_TRY(exec(db.value(), "PRAGMA journal_mode=WAL"));
  PSKEL_TRY(exec(db.value(), "PRAGMA synchronous=NORMAL"));
  {
    // Foreign keys only after the upgrade: the pragma cannot change inside a transaction, and
    // a table is rebuilt with them off.
    PSKEL_TRY(exec(db.value(), "PRAGMA foreign_keys=OFF"));
    Transaction tx(db.value());
    PSKEL_TRY(tx.begun());
    if (version.value() != 0) PSKEL_TRY(upgrade(db.value(), path));
    PSKEL_TRY(exec(db.value(), kSchema));
    PSKEL_TRY(Stmt(db.value(), "INSERT OR IGNORE INTO meta(key, value) VALUES('schema_version', ?)")
                  .bind(std::to_string(kSchemaVersion))
                  .run());
    PSKEL_TRY(tx.commit());
  }
  PSKEL_TRY(exec(db.value(), "PRAGMA foreign_keys=ON"));
  ::chmod(path.c_str(), 0644);
  return store;
}

Store::Store(Store&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)), path_(std::move(other.path_)) {}

Store& Store::operator=(Store&& other) noexcept {
  if (this != &other) {
    sqlite3_close(db_);
    db_ = std::exchange(other.db_, nullptr);
    path_ = std::move(other.path_);
  }
  return *this;
}

Store::~Store() { sqlite3_close(db_); }

Result<int64_t> Store::ensure_application(uint32_t uid, const std::string& user,
                                          const std::string& key, const std::string& script_key) {
  PSKEL_TRY(Stmt(db_, "INSERT OR IGNORE INTO applications(uid, user, key, created) VALUES(?,?,?,?)")
                .bind(uid, user, key, now())
                .run());
  if (!script_key.empty() && script_key != key)
    PSKEL_TRY(Stmt(db_, "UPDATE applications SET script_key=? WHERE uid=? AND key=?")
                  .bind(script_key, uid, key)
                  .run());
  Stmt s(db_, "SELECT id FROM applications WHERE uid=? AND key=?");
  s.bind(uid, key);
  if (!s.next()) return s.ok() ? Error{path_, "application vanished"} : s.error();
  const int64_t id = s.i64(0);
  if (!s.ok()) return s.error();
  return id;
}

Result<bool> Store::put_trace(const Trace& t) {
  return Stmt(db_,
              "INSERT OR REPLACE INTO traces(job_id, app_id, uid, ntasks, nodes, partition, state, "
              "step, message, trace_dir, runtime_seconds, updated) VALUES(?,?,?,?,?,?,?,?,?,?,?,?)")
      .bind(t.job_id, t.app_id, t.uid, t.ntasks, t.nodes, t.partition, t.state, t.step, t.message,
            t.trace_dir, t.runtime_seconds, now())
      .run();
}

Result<bool> Store::set_trace_state(int64_t job_id, const std::string& state,
                                    const std::string& step, const std::string& message) {
  return Stmt(db_, "UPDATE traces SET state=?, step=?, message=?, updated=? WHERE job_id=?")
      .bind(state, step, message, now(), job_id)
      .run();
}

Result<bool> Store::set_trace_runtime(int64_t job_id, double seconds) {
  return Stmt(db_, "UPDATE traces SET runtime_seconds=?, updated=? WHERE job_id=?")
      .bind(seconds, now(), job_id)
      .run();
}

Result<std::vector<int64_t>> Store::add_predictions(int64_t job_id, const Skeleton& skeleton,
                                                    const std::vector<Prediction>& predictions) {
  // The numbers come from the user's own calibration run; what is stored here is what reaches
  // slurmctld through the export.
  for (const Prediction& p : predictions) {
    if (!exportfile::valid_predicted_seconds(p.predicted_seconds))
      return Error{path_, "prediction for " + p.partition + " out of range (not 0 to " +
                              std::to_string(static_cast<int64_t>(exportfile::kMaxPredictedSeconds)) +
                              " s): nothing stored"};
    if (!(std::isfinite(p.skeleton_seconds) && p.skeleton_seconds >= 0 &&
          std::isfinite(p.scale) && p.scale >= 0))
      return Error{path_, "skeleton time or scale for " + p.partition +
                              " not a finite number >= 0: nothing stored"};
  }
  if (!(std::isfinite(skeleton.scale) && skeleton.scale >= 0))
    return Error{path_, "skeleton scale not a finite number >= 0: nothing stored"};
  Transaction tx(db_);
  PSKEL_TRY(tx.begun());
  PSKEL_TRY(Stmt(db_, "INSERT INTO skeletons(job_id, dir, binary, scale, created) VALUES(?,?,?,?,?)")
                .bind(job_id, skeleton.dir, skeleton.binary, skeleton.scale, now())
                .run());
  const int64_t skeleton_id = sqlite3_last_insert_rowid(db_);
  std::vector<int64_t> ids;
  for (const Prediction& p : predictions) {
    PSKEL_TRY(Stmt(db_, "DELETE FROM predictions WHERE app_id=? AND ntasks=? AND nodes=? AND "
                        "partition=?")
                  .bind(p.app_id, p.ntasks, p.nodes, p.partition)
                  .run());
    PSKEL_TRY(Stmt(db_,
                   "INSERT INTO predictions(app_id, uid, ntasks, nodes, partition, skeleton_id, "
                   "skeleton_seconds, scale, predicted_seconds, created, input_key) "
                   "VALUES(?,?,?,?,?,?,?,?,?,?,?)")
                  .bind(p.app_id, p.uid, p.ntasks, p.nodes, p.partition, skeleton_id,
                        p.skeleton_seconds, p.scale, p.predicted_seconds, now(), p.input)
                  .run());
    ids.push_back(sqlite3_last_insert_rowid(db_));
  }
  PSKEL_TRY(Stmt(db_, "UPDATE traces SET state='done', step='', message='', updated=? WHERE job_id=?")
                .bind(now(), job_id)
                .run());
  PSKEL_TRY(tx.commit());
  return ids;
}

Result<bool> Store::record_outcome(const Outcome& o) {
  // The numbers come through the job's environment (PSKEL_LIMITED), which job_submit_pskel.so
  // writes within the export's range but a user's own client could send.
  if (!exportfile::valid_predicted_seconds(o.predicted_seconds) || !std::isfinite(o.actual_seconds))
    return Error{path_, "outcome of job " + std::to_string(o.job_id) +
                            ": predicted or actual run time out of range: nothing stored"};
  return Stmt(db_,
              "INSERT OR REPLACE INTO outcomes(job_id, uid, prediction_id, app_id, "
              "predicted_seconds, limit_minutes, actual_seconds, state, recorded) "
              // A limit from a run-time model has minus its application's id (export M lines).
              "VALUES(?1, ?2, ?3, CASE WHEN ?3 < 0 THEN (SELECT app_id FROM models "
              "WHERE app_id=-?3 AND uid=?2) ELSE (SELECT app_id FROM predictions WHERE id=?3 "
              "AND uid=?2) END, ?4, ?5, ?6, ?7, ?8)")
      .bind(o.job_id, o.uid, o.prediction_id, o.predicted_seconds, o.limit_minutes,
            o.actual_seconds, o.state, now())
      .run();
}

Result<bool> Store::record_extension(const Extension& e) {
  return Stmt(db_,
              "INSERT INTO extensions(job_id, prediction_id, app_id, from_minutes, to_minutes, "
              "ceiling_minutes, elapsed_seconds, at) "
              "VALUES(?1, ?2, CASE WHEN ?2 < 0 THEN (SELECT app_id FROM models WHERE app_id=-?2) "
              "ELSE (SELECT app_id FROM predictions WHERE id=?2) END, ?3, ?4, ?5, ?6, ?7)")
      .bind(e.job_id, e.prediction_id, int64_t{e.from_minutes}, int64_t{e.to_minutes},
            int64_t{e.ceiling_minutes}, e.elapsed_seconds, now())
      .run();
}

Result<bool> Store::put_model_run(const ModelRun& run) {
  if (!(run.seconds > 0) || !std::isfinite(run.seconds))
    return Error{path_, "a model run's time must be a number above zero"};
  return Stmt(db_,
              "INSERT OR REPLACE INTO model_runs(job_id, app_id, uid, ntasks, args, seconds, "
              "features, recorded) VALUES(?,?,?,?,?,?,?,?)")
      .bind(run.job_id, run.app_id, int64_t{run.uid}, int64_t{run.ntasks}, run.args, run.seconds,
            run.features, now())
      .run();
}

Result<std::vector<ModelRun>> Store::model_runs(int64_t app_id) const {
  Stmt s(db_,
         "SELECT job_id, app_id, uid, ntasks, args, seconds, features, recorded FROM model_runs "
         "WHERE app_id=? ORDER BY job_id");
  s.bind(app_id);
  return collect(s, [](const Stmt& r) {
    return ModelRun{r.i64(0), r.i64(1), r.u32(2), r.u32(3), r.text(4), r.f64(5), r.text(6),
                    r.i64(7)};
  });
}

Result<bool> Store::put_model(const StoredModel& model) {
  return Stmt(db_,
              "INSERT OR REPLACE INTO models(app_id, uid, model, export_line, runs, fitted) "
              "VALUES(?,?,?,?,?,?)")
      .bind(model.app_id, int64_t{model.uid}, model.model, model.export_line,
            int64_t{model.runs}, now())
      .run();
}

Result<std::optional<StoredModel>> Store::model(int64_t app_id) const {
  Stmt s(db_,
         "SELECT app_id, uid, model, export_line, runs, fitted FROM models WHERE app_id=?");
  s.bind(app_id);
  if (!s.next()) {
    if (!s.ok()) return s.error();
    return std::optional<StoredModel>();
  }
  StoredModel m{s.i64(0), s.u32(1), s.text(2), s.text(3), s.u32(4), s.i64(5)};
  if (!s.ok()) return s.error();
  return std::optional<StoredModel>(std::move(m));
}

Result<bool> Store::set_partitions(const std::vector<exportfile::Partition>& partitions) {
  Transaction tx(db_);
  PSKEL_TRY(tx.begun());
  PSKEL_TRY(exec(db_, "DELETE FROM partitions"));
  for (const auto& p : partitions)
    PSKEL_TRY(Stmt(db_, "INSERT INTO partitions(name, max_minutes, is_default) VALUES(?,?,?)")
                  .bind(p.name, static_cast<int64_t>(p.max_minutes), p.is_default ? 1 : 0)
                  .run());
  return tx.commit();
}

Result<std::vector<AppSummary>> Store::list(std::optional<uint32_t> uid) const {
  Stmt s(db_,
         "SELECT a.id, a.uid, a.user, a.key, a.created, a.script_key, "
         "(SELECT COUNT(*) FROM traces t WHERE t.app_id=a.id), "
         "(SELECT COUNT(*) FROM predictions p WHERE p.app_id=a.id), "
         "(SELECT state FROM traces t WHERE t.app_id=a.id ORDER BY updated DESC, job_id DESC LIMIT 1), "
         "(SELECT message FROM traces t WHERE t.app_id=a.id ORDER BY updated DESC, job_id DESC LIMIT 1) "
         "FROM applications a WHERE ?1 IS NULL OR a.uid=?1 ORDER BY a.uid, a.key");
  s.bind(uid);
  return collect(s, [](const Stmt& r) {
    return AppSummary{read_application(r, 0), static_cast<int>(r.i64(6)),
                      static_cast<int>(r.i64(7)), r.text(8), r.text(9)};
  });
}

Result<std::vector<Application>> Store::find_applications(const std::string& key,
                                                          std::optional<uint32_t> uid) const {
  Stmt s(db_,
         "SELECT id, uid, user, key, created, script_key FROM applications WHERE (key=?1 OR "
         "CAST(id AS TEXT)=?1) AND (?2 IS NULL OR uid=?2) ORDER BY uid");
  s.bind(key, uid);
  return collect(s, [](const Stmt& r) { return read_application(r, 0); });
}

namespace {

const char* const kTraceColumns =
    "job_id, app_id, uid, ntasks, partition, state, step, message, trace_dir, runtime_seconds, "
    "updated, nodes";

Trace read_trace(const Stmt& s) {
  return Trace{s.i64(0),  s.i64(1),  s.u32(2), s.u32(3), s.u32(11), s.text(4), s.text(5),
               s.text(6), s.text(7), s.text(8), s.f64(9), s.i64(10)};
}

}  // namespace

Result<std::vector<Trace>> Store::traces(int64_t app_id) const {
  Stmt s(db_, (std::string("SELECT ") + kTraceColumns +
               " FROM traces WHERE app_id=? ORDER BY job_id").c_str());
  s.bind(app_id);
  return collect(s, read_trace);
}

Result<std::optional<Trace>> Store::trace(int64_t job_id) const {
  Stmt s(db_, (std::string("SELECT ") + kTraceColumns + " FROM traces WHERE job_id=?").c_str());
  s.bind(job_id);
  if (!s.next()) {
    if (!s.ok()) return s.error();
    return std::optional<Trace>();
  }
  Trace t = read_trace(s);
  if (!s.ok()) return s.error();
  return std::optional<Trace>(std::move(t));
}

Result<std::vector<Prediction>> Store::predictions(int64_t app_id) const {
  Stmt s(db_,
         "SELECT id, app_id, uid, ntasks, nodes, partition, IFNULL(skeleton_id, 0), "
         "skeleton_seconds, scale, predicted_seconds, created, input_key FROM predictions "
         "WHERE app_id=? ORDER BY ntasks, nodes, partition");
  s.bind(app_id);
  return collect(s, [](const Stmt& r) {
    return Prediction{r.i64(0), r.i64(1), r.u32(2), r.u32(3), r.u32(4), r.text(5),
                      r.i64(6), r.f64(7), r.f64(8), r.f64(9), r.i64(10), r.text(11)};
  });
}

Result<std::vector<Outcome>> Store::outcomes(int64_t app_id) const {
  Stmt s(db_,
         "SELECT job_id, uid, prediction_id, app_id, predicted_seconds, limit_minutes, "
         "actual_seconds, state, recorded FROM outcomes WHERE app_id=? ORDER BY job_id");
  s.bind(app_id);
  return collect(s, [](const Stmt& r) {
    return Outcome{r.i64(0), r.u32(1), r.i64(2), r.i64(3), r.f64(4), r.u32(5), r.f64(6),
                   r.text(7), r.i64(8)};
  });
}

Result<int> Store::forget(int64_t app_id) {
  Stmt s(db_, "DELETE FROM applications WHERE id=?");
  s.bind(app_id);
  PSKEL_TRY(s.run());
  return sqlite3_changes(db_);
}

Result<std::vector<Accuracy>> Store::report(std::optional<uint32_t> uid) const {
  // Per job: was it extended, and did an extension reach the limit it would have had anyway
  // (a TIMEOUT then is the job's own limit, not pskel's).
  Stmt s(db_,
         "SELECT a.id, a.uid, a.user, a.key, a.created, a.script_key, o.predicted_seconds, o.actual_seconds, "
         "o.state, "
         "(SELECT COUNT(*) FROM extensions e WHERE e.job_id=o.job_id), "
         "(SELECT COUNT(*) FROM extensions e WHERE e.job_id=o.job_id AND e.to_minutes >= e.ceiling_minutes) "
         "FROM outcomes o JOIN applications a ON a.id=o.app_id "
         "WHERE (?1 IS NULL OR a.uid=?1) ORDER BY a.uid, a.key");
  s.bind(uid);
  std::vector<Accuracy> out;
  while (s.next()) {
    const Application app = read_application(s, 0);
    const double predicted = s.f64(6), actual = s.f64(7);
    const bool timeout = s.text(8) == "TIMEOUT";
    const bool extended = s.i64(9) > 0, at_ceiling = s.i64(10) > 0;
    if (!s.ok()) break;
    if (out.empty() || out.back().app.id != app.id) out.push_back(Accuracy{app});
    Accuracy& a = out.back();
    a.limited += 1;
    a.extended += extended ? 1 : 0;
    a.timeouts += timeout ? 1 : 0;
    a.killed_at_pskel_limit += timeout && !at_ceiling ? 1 : 0;
    if (!(actual > 0)) continue;
    const double err = std::fabs(predicted - actual) / actual * 100.0;
    a.jobs += 1;
    a.mean_abs_error_pct += err;
    a.max_abs_error_pct = std::max(a.max_abs_error_pct, err);
    a.mean_predicted += predicted;
    a.mean_actual += actual;
  }
  if (!s.ok()) return s.error();
  for (Accuracy& a : out) {
    if (a.jobs == 0) continue;
    a.mean_abs_error_pct /= a.jobs;
    a.mean_predicted /= a.jobs;
    a.mean_actual /= a.jobs;
  }
  return out;
}

Result<exportfile::Data> Store::export_data() const {
  exportfile::Data data;
  Stmt parts(db_, "SELECT name, max_minutes, is_default FROM partitions ORDER BY name");
  while (parts.next()) {
    exportfile::Partition p{parts.text(0), parts.u32(1), parts.i64(2) != 0};
    if (!parts.ok()) {
      parts.skip_bad_row();
      continue;
    }
    if (exportfile::valid_word(p.name)) data.partitions.push_back(std::move(p));
  }
  if (!parts.ok()) return parts.error();
  // An application whose job needed the guard has outgrown the margin: its predictions go out
  // multiplied by the worst actual/predicted ratio among its extended jobs (docs/guard.md).
  // Each prediction goes out under its application's key and, for a --predict name, under its
  // script's key as well (the alias).
  Stmt s(db_,
         "WITH worst(app_id, factor) AS ("
         "  SELECT o.app_id, MAX(o.actual_seconds / o.predicted_seconds) FROM outcomes o"
         "  WHERE o.predicted_seconds > 0 AND o.actual_seconds > 0 AND"
         "    EXISTS (SELECT 1 FROM extensions e WHERE e.job_id=o.job_id) GROUP BY o.app_id),"
         " keys(app_id, uid, key, alias) AS ("
         "  SELECT id, uid, key, 0 FROM applications"
         "  UNION ALL"
         "  SELECT id, uid, script_key, 1 FROM applications WHERE script_key <> '' AND script_key <> key)"
         " SELECT p.uid, p.ntasks, p.nodes, p.partition, p.predicted_seconds, p.id, k.key,"
         "   MAX(1.0, IFNULL(w.factor, 1.0)), p.input_key"
         " FROM predictions p JOIN keys k ON k.app_id=p.app_id AND k.uid=p.uid"
         " LEFT JOIN worst w ON w.app_id=p.app_id ORDER BY p.id, k.alias");
  while (s.next()) {
    // The factor is read apart, after the prediction's own type check: SQLite would turn a
    // damaged (text) prediction times a number into a number.
    exportfile::Entry e{s.u32(0), s.u32(1), s.u32(2), s.text(3), s.text(6), s.f64(4), s.i64(5),
                        s.text(8)};
    e.predicted_seconds *= s.f64(7);
    if (!s.ok()) {
      s.skip_bad_row();
      continue;
    }
    if (exportfile::valid_entry(e)) data.entries.push_back(std::move(e));
  }
  if (!s.ok()) return s.error();
  // Each application's run-time model, under its key and its script's (docs/model.md): the
  // stored M line with the key put in. A line that does not parse is left out.
  Stmt models(db_,
              "WITH keys(app_id, uid, key, alias) AS ("
              "  SELECT id, uid, key, 0 FROM applications"
              "  UNION ALL"
              "  SELECT id, uid, script_key, 1 FROM applications"
              "  WHERE script_key <> '' AND script_key <> key)"
              " SELECT m.export_line, k.key, m.uid, m.app_id FROM models m"
              " JOIN keys k ON k.app_id=m.app_id AND k.uid=m.uid ORDER BY m.app_id, k.alias");
  while (models.next()) {
    const std::string line = models.text(0), key = models.text(1);
    const uint32_t uid = models.u32(2);
    const int64_t app_id = models.i64(3);
    if (!models.ok()) {
      models.skip_bad_row();
      continue;
    }
    auto m = exportfile::parse_model_line(line);
    if (!m.ok()) continue;
    m.value().app = key;
    m.value().uid = uid;
    m.value().model_id = app_id;
    if (exportfile::valid_model(m.value())) data.models.push_back(std::move(m.value()));
  }
  if (!models.ok()) return models.error();
  return data;
}

Result<bool> write_export(const Store& store, const std::string& export_path) {
  const std::string lock_path = export_path + ".lock";
  const int lock = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (lock < 0) return Error{lock_path, std::string("cannot open: ") + std::strerror(errno)};
  while (::flock(lock, LOCK_EX) != 0 && errno == EINTR) {
  }
  // Read the store inside the lock: whoever writes last also read last.
  auto data = store.export_data();
  Result<bool> written = data ? exportfile::write_atomic(export_path, data.value())
                              : Result<bool>(data.error());
  ::close(lock);
  return written;
}

}  // namespace pskel::store
