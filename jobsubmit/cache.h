// The prediction cache inside slurmctld: the export file (core/export) held in memory as an
// immutable snapshot, replaced by a loader thread when the file changes. job_submit only
// stat()s the file (poll) and looks up the current snapshot: no file reading, no parsing, no
// SQLite, no RPC on the submission path.
//
// Thread safety: poll(), snapshot() and the Snapshot objects may be used from any thread.
// A corrupt or truncated export is ignored (the previous snapshot stays) with one log line
// per version of the file.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>

#include "export/export.h"

namespace pskel::jobsubmit {

struct Prediction {
  double predicted_seconds = 0;
  int64_t prediction_id = 0;
};

// An immutable view of one version of the export.
class Snapshot {
 public:
  explicit Snapshot(const exportfile::Data& data);
  // REQUIRES: partition non-empty. nullptr when nothing is known.
  const Prediction* find(uint32_t uid, std::string_view app, uint32_t ntasks,
                         std::string_view partition) const;
  // kUnlimited when the partition is unknown.
  uint32_t partition_max(std::string_view partition) const;
  const std::string& default_partition() const { return default_partition_; }
  size_t size() const { return entries_.size(); }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, Prediction, Hash, std::equal_to<>> entries_;
  std::unordered_map<std::string, uint32_t, Hash, std::equal_to<>> partitions_;
  std::string default_partition_;
};

// The lookup key of (uid, app, ntasks, partition), written into `out`.
void make_key(std::string& out, uint32_t uid, std::string_view app, uint32_t ntasks,
              std::string_view partition);

class PredictionCache {
 public:
  using Log = std::function<void(const std::string&)>;
  // `log` is called from the loader thread.
  PredictionCache(std::string path, Log log);
  ~PredictionCache();
  PredictionCache(const PredictionCache&) = delete;
  PredictionCache& operator=(const PredictionCache&) = delete;

  // Starts the loader thread (loads once first, synchronously). Idempotent.
  void start();
  void stop();
  // One stat() of the export; when the file changed since the last load, wakes the loader.
  void poll();
  // The current snapshot (never null; empty before the first successful load).
  std::shared_ptr<const Snapshot> snapshot() const;
  // Loads the file now if it changed (the loader thread's step; public for tests).
  void reload_if_changed();

 private:
  struct FileId {
    dev_t dev = 0;
    ino_t ino = 0;
    off_t size = -1;
    int64_t mtime_ns = 0;
    bool operator==(const FileId&) const = default;
  };
  bool stat_file(FileId* id) const;
  void loader();

  const std::string path_;
  const Log log_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::shared_ptr<const Snapshot> snapshot_;
  FileId loaded_;         // the version snapshot_ (or the last rejected file) came from
  FileId seen_;           // the version poll() saw last
  bool missing_logged_ = false;
  bool stopping_ = false;
  bool kick_ = false;
  std::thread thread_;
};

}  // namespace pskel::jobsubmit
