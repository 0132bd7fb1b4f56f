// The prediction cache inside slurmctld: the export file (core/export) held in memory as an
// immutable snapshot, replaced by a loader thread when the file changes. job_submit only
// stat()s the file now and then (poll) and looks up the current snapshot: no file reading, no
// parsing, no SQLite, no RPC on the submission path.
//
// Thread safety: poll(), snapshot() and the Snapshot objects may be used from any thread.
// A corrupt or truncated export is ignored (the previous snapshot stays) with one log line
// per version of the file.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
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
  uint32_t nodes = 1;       // the node count it was made for
  std::string input = "-";  // the inputs it was made for (exportfile::input_key), "-": any
};

// find()'s node count for a job that asked for none.
inline constexpr uint32_t kAnyNodes = 0;

// How often poll() looks at the export at most: slurmctld calls it on every submission.
inline constexpr std::chrono::milliseconds kDefaultPollEvery{250};

// An immutable view of one version of the export.
class Snapshot {
 public:
  explicit Snapshot(const exportfile::Data& data);
  // REQUIRES: partition non-empty. nullptr when nothing is known. `nodes` is the node count the
  // job asked for: only a prediction for that many nodes matches. kAnyNodes (the job asked for
  // none, so it may run on any layout) matches the longest prediction of any node count: a
  // limit from a shorter one could end the job early. One hash lookup either way.
  const Prediction* find(uint32_t uid, std::string_view app, uint32_t ntasks, uint32_t nodes,
                         std::string_view partition) const;
  // The run-time model of (uid, app) for jobs of this command shape (exportfile::shape_key),
  // or nullptr. One hash lookup.
  const exportfile::Model* find_model(uint32_t uid, std::string_view app,
                                      uint64_t shape_key) const;
  // kUnlimited when the partition is unknown.
  uint32_t partition_max(std::string_view partition) const;
  const std::string& default_partition() const { return default_partition_; }
  // The predictions held (the kAnyNodes entries not counted).
  size_t size() const { return predictions_; }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, Prediction, Hash, std::equal_to<>> entries_;
  std::unordered_map<std::string, uint32_t, Hash, std::equal_to<>> partitions_;
  std::unordered_map<std::string, exportfile::Model, Hash, std::equal_to<>> models_;
  std::string default_partition_;
  size_t predictions_ = 0;
};

// The lookup key of (uid, app, ntasks, nodes, partition), written into `out`.
void make_key(std::string& out, uint32_t uid, std::string_view app, uint32_t ntasks,
              uint32_t nodes, std::string_view partition);

class PredictionCache {
 public:
  using Log = std::function<void(const std::string&)>;
  // `log` is called from the loader thread. A non-empty `heartbeat` is the guard's heartbeat
  // file (guard/heartbeat.h), read by the loader thread; guard_alive() says what it found.
  // poll() stats the file at most once per `poll_every`.
  PredictionCache(std::string path, Log log, std::string heartbeat = "",
                  std::chrono::milliseconds poll_every = kDefaultPollEvery);
  ~PredictionCache();
  PredictionCache(const PredictionCache&) = delete;
  PredictionCache& operator=(const PredictionCache&) = delete;

  // Starts the loader thread (loads once first, synchronously). Idempotent.
  void start();
  void stop();
  // One stat() of the export, unless one was made less than poll_every ago; when the file
  // changed since the last load, wakes the loader. Why not on every call: the stat was a fifth
  // of a submission's time in job_submit (about 2 us of 12 on a VM), and the loader thread
  // looks every 2 s anyway; this only brings a new export in sooner.
  void poll();
  // The current snapshot (never null; empty before the first successful load).
  std::shared_ptr<const Snapshot> snapshot() const;
  // Loads the file now if it changed (the loader thread's step; public for tests).
  void reload_if_changed();
  // Whether the guard was running at the loader's last look (true without a heartbeat file to
  // watch). One atomic load: cheap enough for every submission.
  bool guard_alive() const { return guard_alive_.load(std::memory_order_relaxed); }
  // Reads the heartbeat now, logging a change (the loader thread's step; public for tests).
  void check_guard();

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
  const std::string heartbeat_;
  const int64_t poll_every_ns_;
  std::atomic<int64_t> next_poll_ns_{0};  // steady clock
  std::atomic<bool> guard_alive_{true};
  bool guard_logged_ = false;  // a state was logged once (the first look logs only a down guard)
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
