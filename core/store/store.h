// pskel's store: an embedded SQLite database on the controller (StateDir/pskel.db) holding
// applications, traces (one per traced job, with what failed if something did), skeletons,
// predictions keyed by (user, application, task count, node count, partition), the outcome of
// every job whose limit pskel set (predicted vs actual), and for run-time models each traced
// run's inputs, features and time with the model fitted to them. The export file job_submit reads is
// derived from it (export_data + exportfile::write_atomic, serialised by write_export).
//
// The schema has a version (meta.schema_version). A read-write open upgrades an older store in
// one transaction, keeping its rows; a read-only open refuses it (looking must not write), and
// every open refuses a store newer than this pskel.
//
// Every change that belongs together is one transaction: a worker killed at any point leaves
// either all of a skeleton's predictions or none. Several processes may use the database at
// once (WAL, busy timeout). Thread safety: a Store is used by one thread at a time.
//
// The file may be damaged or edited by hand: every reader checks each column's type (an
// integer where an integer belongs, a finite number, text) and returns an Error naming the
// store for a row that does not fit, rather than reading it as 0. export_data() leaves such
// rows out instead. Text is returned as stored: it may hold invalid UTF-8 or control bytes.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "export/export.h"
#include "util/result.h"

namespace pskel::store {

struct Application {
  int64_t id = 0;
  uint32_t uid = 0;
  std::string user;
  std::string key;
  int64_t created = 0;
  std::string script_key;  // "script:<hash>" of its batch script when key is a --predict name
};

// A traced job and how far the worker got with it.
struct Trace {
  int64_t job_id = 0;
  int64_t app_id = 0;
  uint32_t uid = 0;
  uint32_t ntasks = 0;
  uint32_t nodes = 1;
  std::string partition;
  std::string state;        // queued | running | done | failed
  std::string step;         // the step running or failed ("compress", "skeleton", ...)
  std::string message;      // what failed, one line
  std::string trace_dir;
  double runtime_seconds = -1;  // the traced job's own run time (-1: unknown)
  int64_t updated = 0;
};

struct Skeleton {
  int64_t id = 0;
  int64_t job_id = 0;
  std::string dir;
  std::string binary;
  double scale = 0;
};

struct Prediction {
  int64_t id = 0;
  int64_t app_id = 0;
  uint32_t uid = 0;
  uint32_t ntasks = 0;
  uint32_t nodes = 1;       // the traced job's node count: a job on other nodes runs differently
  std::string partition;
  int64_t skeleton_id = 0;
  double skeleton_seconds = 0;
  double scale = 0;
  double predicted_seconds = 0;
  int64_t created = 0;
  std::string input = "-";  // the traced job's inputs (exportfile::input_key), "-": any
};

struct Outcome {
  int64_t job_id = 0;
  uint32_t uid = 0;
  int64_t prediction_id = 0;    // below 0: a run-time model's limit, minus its application's id
  int64_t app_id = 0;           // filled from the prediction when it still exists
  double predicted_seconds = 0;
  uint32_t limit_minutes = 0;
  double actual_seconds = -1;
  std::string state;            // the job's final state (COMPLETED, TIMEOUT, ...)
  int64_t recorded = 0;
};

struct AppSummary {
  Application app;
  int traces = 0;
  int predictions = 0;
  std::string last_state;       // of the newest trace
  std::string last_message;
};

struct Accuracy {
  Application app;
  int jobs = 0;                 // outcomes with a known actual run time
  double mean_abs_error_pct = 0;
  double max_abs_error_pct = 0;
  double mean_predicted = 0;
  double mean_actual = 0;
  int limited = 0;              // outcomes recorded: jobs whose limit pskel set
  int extended = 0;             // of them, jobs the guard extended
  int timeouts = 0;             // of them, jobs that ended TIMEOUT
  int killed_at_pskel_limit = 0;  // TIMEOUT before the guard reached the limit without pskel
};

// One extension by the guard (docs/guard.md).
struct Extension {
  int64_t job_id = 0;
  int64_t prediction_id = 0;    // the prediction pskel set the job's first limit from
  uint32_t from_minutes = 0;
  uint32_t to_minutes = 0;
  uint32_t ceiling_minutes = 0; // the limit without pskel (0xffffffff: none)
  int64_t elapsed_seconds = 0;
};

// One traced run of an application as its run-time model sees it (docs/model.md): the job's
// task count and script arguments, the features of its trace, its run time.
struct ModelRun {
  int64_t job_id = 0;
  int64_t app_id = 0;
  uint32_t uid = 0;
  uint32_t ntasks = 0;
  std::string args;       // exportfile::encode_job_args
  double seconds = 0;     // the traced job's run time
  std::string features;   // JSON object: feature name -> mean over ranks
  int64_t recorded = 0;
};

// The run-time model fitted to an application's runs (core/model/app_model.h, as JSON, and as
// the export's M line).
struct StoredModel {
  int64_t app_id = 0;
  uint32_t uid = 0;
  std::string model;
  std::string export_line;  // the form job_submit evaluates (exportfile::model_line)
  uint32_t runs = 0;
  int64_t fitted = 0;
};

enum class Access {
  // Creates the file (mode 0644) and the schema when they are not there, and upgrades a store of
  // an older schema version: the epilog worker and the commands that change the store (db
  // forget, db export). A database of other tables is refused, never given pskel's.
  ReadWrite,
  // Opens an existing pskel store without writing a byte of it (SQLITE_OPEN_READONLY): no
  // schema created, no journal mode set, no chmod. A missing, empty or non-SQLite file, or a
  // database without pskel's schema or of an older schema version, is an Error naming the
  // file. For the commands that only read (db list, db show, report): looking must not repair,
  // truncate, create or upgrade.
  ReadOnly,
};

class Store {
 public:
  static Result<Store> open(const std::string& path, Access access = Access::ReadWrite);
  Store(Store&& other) noexcept;
  Store& operator=(Store&& other) noexcept;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;
  ~Store();

  // The application (uid, key), created if needed; a non-empty script_key is recorded as its
  // alias (the export carries its predictions under both keys).
  Result<int64_t> ensure_application(uint32_t uid, const std::string& user, const std::string& key,
                                     const std::string& script_key = "");
  // Inserts or replaces the trace row of trace.job_id.
  Result<bool> put_trace(const Trace& trace);
  Result<bool> set_trace_state(int64_t job_id, const std::string& state, const std::string& step,
                               const std::string& message);
  Result<bool> set_trace_runtime(int64_t job_id, double seconds);
  // One transaction: the skeleton, then one prediction per partition (replacing older
  // predictions of the same application, task count, node count and partition), then the trace
  // marked done. Returns the prediction ids.
  // A predicted_seconds that is not exportfile::valid_predicted_seconds (or a skeleton_seconds
  // or scale that is not finite and >= 0) is an Error and stores nothing.
  Result<std::vector<int64_t>> add_predictions(int64_t job_id, const Skeleton& skeleton,
                                               const std::vector<Prediction>& predictions);
  // An outcome whose predicted_seconds is not exportfile::valid_predicted_seconds, or whose
  // actual_seconds is not finite, is an Error.
  Result<bool> record_outcome(const Outcome& outcome);
  Result<bool> record_extension(const Extension& extension);
  Result<bool> set_partitions(const std::vector<exportfile::Partition>& partitions);
  // Inserts or replaces the run of run.job_id; a time that is not above zero is an Error.
  Result<bool> put_model_run(const ModelRun& run);
  Result<std::vector<ModelRun>> model_runs(int64_t app_id) const;
  Result<bool> put_model(const StoredModel& model);
  Result<std::optional<StoredModel>> model(int64_t app_id) const;

  Result<std::vector<AppSummary>> list(std::optional<uint32_t> uid) const;
  Result<std::vector<Application>> find_applications(const std::string& key,
                                                     std::optional<uint32_t> uid) const;
  Result<std::vector<Trace>> traces(int64_t app_id) const;
  Result<std::optional<Trace>> trace(int64_t job_id) const;
  Result<std::vector<Prediction>> predictions(int64_t app_id) const;
  Result<std::vector<Outcome>> outcomes(int64_t app_id) const;
  // Deletes an application and everything stored for it. Returns rows deleted (0 or 1).
  Result<int> forget(int64_t app_id);
  Result<std::vector<Accuracy>> report(std::optional<uint32_t> uid) const;

  // Everything job_submit needs, in a stable order. Rows the export cannot carry (wrong column
  // types, names that are not export words, predictions outside the export's range) are left
  // out: one damaged row must not keep every other prediction from slurmctld.
  Result<exportfile::Data> export_data() const;

  const std::string& path() const { return path_; }

 private:
  Store(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  sqlite3* db_ = nullptr;
  std::string path_;
};

// Regenerates the export from the store, atomically, holding an exclusive lock
// (<export>.lock) so that concurrent writers cannot put an older view in place of a newer one.
Result<bool> write_export(const Store& store, const std::string& export_path);

}  // namespace pskel::store
