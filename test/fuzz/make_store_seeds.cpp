// Writes the seeds of the store and export_cache fuzz targets with the project's own writers
// (test/fuzz/make-corpus runs it): a small store as the epilog worker fills it, and the
// export write_export derives from it. Usage: make_store_seeds OUT_DIR
#include <sqlite3.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "export/export.h"
#include "store/store.h"

namespace {

using namespace pskel;

// Exits on the first failure: half-written seeds would seed nothing real.
template <class T>
T check(Result<T> r) {
  if (!r) {
    std::fprintf(stderr, "make_store_seeds: %s\n", r.error().line().c_str());
    std::exit(1);
  }
  return std::move(r).value();
}

// Two applications of two users: one traced, predicted on two partitions and run once with the
// limit pskel set; one whose trace failed. What `pskel db list|show` and `report` read.
void fill(store::Store& s) {
  check(s.set_partitions({{"batch", 60, true}, {"long", exportfile::kUnlimited, false}}));
  const int64_t app = check(s.ensure_application(1000, "alice", "ring.mpich", "script:3f2a9c"));
  store::Trace t;
  t.job_id = 41;
  t.app_id = app;
  t.uid = 1000;
  t.ntasks = 2;
  t.partition = "batch";
  t.state = "running";
  t.step = "trace";
  t.trace_dir = "/var/spool/pskel/job.41";
  check(s.put_trace(t));
  check(s.set_trace_runtime(41, 12.5));
  store::Skeleton skeleton{0, 41, "/var/lib/pskel/skeletons/41", "skeleton", 10};
  std::vector<store::Prediction> predictions;
  for (const char* partition : {"batch", "long"})
    predictions.push_back({0, app, 1000, 2, partition, 0, 1.3, 10, 13.0, 0});
  const auto ids = check(s.add_predictions(41, skeleton, predictions));
  check(s.record_outcome({42, 1000, ids.front(), app, 13.0, 2, 12.1, "COMPLETED", 0}));

  const int64_t failed = check(s.ensure_application(1001, "bob", "stencil"));
  t.job_id = 43;
  t.app_id = failed;
  t.uid = 1001;
  check(s.put_trace(t));
  check(s.set_trace_state(43, "failed", "compress", "rank.1.pskt: truncated"));
}

void make_store(const std::string& path, int page_size) {
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
  if (page_size != 0) {  // set before the first table, which is when SQLite fixes it
    sqlite3* db = nullptr;
    const std::string sql = "PRAGMA page_size=" + std::to_string(page_size) + "; VACUUM";
    if (sqlite3_open(path.c_str(), &db) != SQLITE_OK ||
        sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) {
      std::fprintf(stderr, "make_store_seeds: %s: %s\n", path.c_str(), sqlite3_errmsg(db));
      std::exit(1);
    }
    sqlite3_close(db);
  }
  store::Store s = check(store::Store::open(path));
  fill(s);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_store_seeds OUT_DIR\n");
    return 2;
  }
  const std::string out = argv[1];
  make_store(out + "/store.db", 0);
  // The smallest pages SQLite allows: the same store in an eighth of the bytes to mutate.
  make_store(out + "/store-512.db", 512);
  store::Store s = check(store::Store::open(out + "/store-512.db"));
  check(store::write_export(s, out + "/predictions.export"));
  check(exportfile::write_atomic(out + "/empty.export", {}));
  return 0;
}
