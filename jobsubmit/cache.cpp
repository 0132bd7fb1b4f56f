#include "cache.h"

#include <sys/stat.h>

#include <charconv>
#include <chrono>
#include <ctime>

#include "guard/heartbeat.h"

namespace pskel::jobsubmit {
namespace {

constexpr auto kPollInterval = std::chrono::seconds(2);

void append_u32(std::string& out, uint32_t v) {
  char buf[16];  // 10 digits at most; on a failure ptr would be the buffer's end, not the text's
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ec == std::errc() ? r.ptr : buf);
}

}  // namespace

// The lookup key of a model: (uid, app, shape key).
void make_model_key(std::string& out, uint32_t uid, std::string_view app, uint64_t shape_key) {
  out.clear();
  out += std::to_string(uid);
  out += '\0';
  out += app;
  out += '\0';
  out += std::to_string(shape_key);
}

void make_key(std::string& out, uint32_t uid, std::string_view app, uint32_t ntasks,
              uint32_t nodes, std::string_view partition) {
  out.clear();
  append_u32(out, uid);
  out += ' ';
  append_u32(out, ntasks);
  out += ' ';
  append_u32(out, nodes);
  out += ' ';
  out += partition;
  out += ' ';
  out += app;
}

Snapshot::Snapshot(const exportfile::Data& data) {
  entries_.reserve(data.entries.size() * 2);
  std::string key, any;
  for (const exportfile::Entry& e : data.entries) {
    if (e.nodes == kAnyNodes) continue;  // not a valid entry, and the key of jobs without a count
    make_key(key, e.uid, e.app, e.ntasks, e.nodes, e.partition);
    entries_[key] = Prediction{e.predicted_seconds, e.prediction_id, e.nodes, e.input};
  }
  predictions_ = entries_.size();
  // For jobs that ask for no node count: the longest prediction over every node count (of
  // the same length, the newer one), computed here so that job_submit looks up one key. From
  // the entries that stayed: a later line of the same key replaced an earlier one.
  for (const exportfile::Entry& e : data.entries) {
    if (e.nodes == kAnyNodes) continue;
    make_key(key, e.uid, e.app, e.ntasks, e.nodes, e.partition);
    const Prediction& p = entries_.find(std::string_view(key))->second;
    make_key(any, e.uid, e.app, e.ntasks, kAnyNodes, e.partition);
    const auto [it, added] = entries_.try_emplace(any, p);
    Prediction& longest = it->second;
    if (!added && (p.predicted_seconds > longest.predicted_seconds ||
                   (p.predicted_seconds == longest.predicted_seconds &&
                    p.prediction_id > longest.prediction_id)))
      longest = p;
  }
  for (const exportfile::Partition& p : data.partitions) {
    partitions_[p.name] = p.max_minutes;
    if (p.is_default) default_partition_ = p.name;
  }
  for (const exportfile::Model& m : data.models) {
    make_model_key(key, m.uid, m.app, m.shape_key);
    models_[key] = m;
  }
}

const exportfile::Model* Snapshot::find_model(uint32_t uid, std::string_view app,
                                              uint64_t shape_key) const {
  std::string key;  // as find(): no thread_local in a plugin that may be unloaded
  make_model_key(key, uid, app, shape_key);
  const auto it = models_.find(std::string_view(key));
  return it == models_.end() ? nullptr : &it->second;
}

const Prediction* Snapshot::find(uint32_t uid, std::string_view app, uint32_t ntasks,
                                 uint32_t nodes, std::string_view partition) const {
  std::string key;  // one small allocation; no thread_local in a plugin that may be unloaded
  key.reserve(40 + app.size() + partition.size());  // 3 numbers of 10 digits and 4 blanks
  make_key(key, uid, app, ntasks, nodes, partition);
  const auto it = entries_.find(std::string_view(key));
  return it == entries_.end() ? nullptr : &it->second;
}

uint32_t Snapshot::partition_max(std::string_view partition) const {
  const auto it = partitions_.find(partition);
  return it == partitions_.end() ? exportfile::kUnlimited : it->second;
}

PredictionCache::PredictionCache(std::string path, Log log, std::string heartbeat,
                                 std::chrono::milliseconds poll_every)
    : path_(std::move(path)),
      log_(std::move(log)),
      heartbeat_(std::move(heartbeat)),
      poll_every_ns_(std::chrono::nanoseconds(poll_every).count()),
      snapshot_(std::make_shared<Snapshot>(exportfile::Data{})) {}

PredictionCache::~PredictionCache() { stop(); }

bool PredictionCache::stat_file(FileId* id) const {
  struct stat st;
  if (::stat(path_.c_str(), &st) != 0) return false;
  id->dev = st.st_dev;
  id->ino = st.st_ino;
  id->size = st.st_size;
  id->mtime_ns = int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
  return true;
}

void PredictionCache::start() {
  reload_if_changed();
  check_guard();
  std::lock_guard<std::mutex> lock(mu_);
  if (thread_.joinable()) return;
  stopping_ = false;
  thread_ = std::thread([this] { loader(); });
}

void PredictionCache::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void PredictionCache::poll() {
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  // Two threads racing here may both stat: harmless, and cheaper than a lock.
  if (now < next_poll_ns_.load(std::memory_order_relaxed)) return;
  next_poll_ns_.store(now + poll_every_ns_, std::memory_order_relaxed);
  FileId id;
  if (!stat_file(&id)) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (id == seen_) return;
  seen_ = id;
  if (!(id == loaded_)) {
    kick_ = true;
    wake_.notify_one();
  }
}

std::shared_ptr<const Snapshot> PredictionCache::snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return snapshot_;
}

void PredictionCache::check_guard() {
  if (heartbeat_.empty()) return;
  const guard::Heartbeat h = guard::read_heartbeat(heartbeat_, std::time(nullptr));
  const bool was = guard_alive_.exchange(h.alive, std::memory_order_relaxed);
  if (was == h.alive && guard_logged_) return;
  if (!guard_logged_ && h.alive) {
    guard_logged_ = true;  // the usual state: nothing to say
    return;
  }
  guard_logged_ = true;
  if (log_)
    log_(h.alive ? "guard: " + guard::describe(h, heartbeat_) + ": time limits are set again"
                 : "guard: " + guard::describe(h, heartbeat_) +
                       ": no time limits are set while it is down (GuardRequired=yes)");
}

void PredictionCache::reload_if_changed() {
  FileId id;
  if (!stat_file(&id)) {
    std::lock_guard<std::mutex> lock(mu_);
    if (missing_logged_) return;
    missing_logged_ = true;
    if (log_) log_("export: " + path_ + ": not there yet: no predictions");
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    missing_logged_ = false;
    if (id == loaded_) return;
  }
  auto text = exportfile::read_file(path_);
  Result<exportfile::Data> data = text ? exportfile::parse(text.value(), path_)
                                       : Result<exportfile::Data>(text.error());
  // The file may have been replaced while it was read: remember the version seen before
  // reading; a newer one is loaded on the next round.
  std::shared_ptr<const Snapshot> fresh;
  if (data) fresh = std::make_shared<Snapshot>(data.value());
  std::lock_guard<std::mutex> lock(mu_);
  loaded_ = id;
  if (fresh) {
    snapshot_ = std::move(fresh);
    if (log_) log_("export: loaded " + std::to_string(snapshot_->size()) + " predictions from " + path_);
  } else if (log_) {
    log_("export: " + data.error().line() + ": ignored, keeping " +
         std::to_string(snapshot_->size()) + " cached predictions");
  }
}

void PredictionCache::loader() {
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait_for(lock, kPollInterval, [this] { return stopping_ || kick_; });
      if (stopping_) return;
      kick_ = false;
    }
    try {
      reload_if_changed();
      check_guard();
    } catch (const std::exception& e) {
      if (log_) log_(std::string("export: reload failed: ") + e.what());
    }
  }
}

}  // namespace pskel::jobsubmit
