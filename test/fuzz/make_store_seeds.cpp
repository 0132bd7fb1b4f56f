// Writes the seeds of the store and export_cache fuzz targets with the project's own writers
// (test/fuzz/make-corpus runs it): a small store as the epilog worker fills it, the export
// write_export derives from it, and that export as version 1 (no node counts) as a worker
// before multi-node jobs wrote it. Usage: make_store_seeds OUT_DIR
#include <sqlite3.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "export/export.h"
#include "store/store.h"
#include "util/crc32c.h"

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

// Two applications of two users: one traced on one node and on two, predicted on two
// partitions and run once with the limit pskel set; one whose trace failed. What `pskel db
// list|show` and `report` read.
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
    predictions.push_back({0, app, 1000, 2, 1, partition, 0, 1.3, 10, 13.0, 0});
  const auto ids = check(s.add_predictions(41, skeleton, predictions));
  check(s.record_outcome({42, 1000, ids.front(), app, 13.0, 2, 12.1, "COMPLETED", 0}));

  t.job_id = 44;
  t.nodes = 2;
  check(s.put_trace(t));
  check(s.set_trace_runtime(44, 30.5));
  skeleton.job_id = 44;
  check(s.add_predictions(44, skeleton, {{0, app, 1000, 2, 2, "batch", 0, 3.1, 10, 31.0, 0}}));

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

// The export as version 1 had it: no <nodes> field (every prediction was for one node).
void write_v1(const std::string& v2_path, const std::string& out_path) {
  std::ifstream in(v2_path, std::ios::binary);
  const std::string v2((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string text = "pskel-export 1\n";
  size_t entries = 0, partitions = 0;
  size_t pos = v2.find('\n') + 1;  // after the header
  for (size_t nl; (nl = v2.find('\n', pos)) != std::string::npos; pos = nl + 1) {
    const std::string line = v2.substr(pos, nl - pos);
    if (line.starts_with("P ")) {
      text += line + "\n";
      ++partitions;
    } else if (line.starts_with("E ")) {
      // E uid ntasks nodes partition seconds id app input: without the node count and the
      // input (versions 2 and 3 added them), and only for 1 node (all version 1 knew).
      size_t a = line.find(' ', 2);
      a = line.find(' ', a + 1);
      const size_t b = line.find(' ', a + 1);
      if (line.compare(a + 1, b - a - 1, "1") != 0) continue;
      text += line.substr(0, a) + line.substr(b, line.rfind(' ') - b) + "\n";
      ++entries;
    }
  }
  char crc[16];
  std::snprintf(crc, sizeof crc, "%08x", crc32c(text.data(), text.size()));
  text += "end " + std::to_string(entries) + " " + std::to_string(partitions) + " " + crc + "\n";
  std::ofstream(out_path, std::ios::binary | std::ios::trunc) << text;
  check(exportfile::parse(text, out_path));  // still what the reader accepts
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
  write_v1(out + "/predictions.export", out + "/predictions-v1.export");
  check(exportfile::write_atomic(out + "/empty.export", {}));
  return 0;
}
