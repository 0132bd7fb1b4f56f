#include "worker/trace_pick.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <vector>

#include "config/config.h"
#include "trace/node_index.h"
#include "util/spool_names.h"
#include "util/text.h"

namespace pskel::worker {
namespace {

constexpr size_t kMaxMetaBytes = 1 << 20;
constexpr int kMaxSteps = 1024;
// Directory entries looked at over all of a job's steps: a 16,384-rank job's step holds about
// 33,000 (a rank file and a samples file per rank); more is a user keeping root's serial
// worker queue busy, refused.
constexpr uint64_t kMaxEntriesPerJob = uint64_t{1} << 20;

struct StepFiles {
  uint64_t bytes = 0;             // of every rank, samples and node file
  std::vector<bool> rank_present; // a trace seen (rank.<N>.pskt or a node file's section)
};

// "rank.<N>.pskt" -> N; -1 for any other name.
int64_t rank_of(std::string_view name) {
  if (!name.starts_with("rank.") || !name.ends_with(".pskt")) return -1;
  const std::string_view digits = name.substr(5, name.size() - 10);
  uint64_t n = 0;
  if (digits.empty() || digits.size() > 9 || !config::parse_u64(digits, &n)) return -1;
  return static_cast<int64_t>(n);
}

// Adds the ranks whose traces node file `name` holds (its section headers only) to `files`.
std::optional<Error> add_node_file_ranks(int step_fd, const std::string& step_path,
                                         const char* name, uid_t uid, int ranks,
                                         StepFiles& files) {
  const std::string path = step_path + "/" + name;
  UniqueFd fd(::openat(step_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  struct stat st;
  if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != uid)
    return Error{path, "not a regular file of the job's user"};
  trace::NodeIndex index;
  if (auto e = trace::add_node_file(fd.get(), static_cast<uint64_t>(st.st_size), path, ranks, index))
    return e;
  for (int r = 0; r < ranks; ++r)
    if (index.trace_of(r)) files.rank_present[static_cast<size_t>(r)] = true;
  return std::nullopt;
}

// The files of a step's trace: every regular file whose name is a rank, samples or node file.
// One pass over the directory, so the cost follows the files that exist, not the rank count
// meta.json claims; it stops early once past max_bytes or out of `entry_budget`.
Result<StepFiles> step_files(int step_fd, const std::string& step_path, int ranks, uid_t uid,
                             uint64_t max_bytes, uint64_t* entry_budget) {
  DIR* d = ::fdopendir(::dup(step_fd));
  if (!d) return Error{step_path, std::strerror(errno)};
  StepFiles files;
  files.rank_present.assign(static_cast<size_t>(ranks), false);
  uint64_t& bytes = files.bytes;
  std::string problem;
  std::optional<Error> node_error;
  while (const dirent* e = ::readdir(d)) {
    if (*entry_budget == 0) {
      problem = "too many files in the job's trace directories";
      break;
    }
    --*entry_budget;
    const std::string_view name = e->d_name;
    const bool node_file = trace::node_file_number(name) >= 0;
    if (!name.starts_with("rank.") && !name.starts_with("samples.") && !node_file) continue;
    struct stat st;
    if (::fstatat(step_fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) continue;
    bytes += static_cast<uint64_t>(st.st_size);
    if (bytes > max_bytes) {
      problem = "trace larger than MaxTraceBytes";
      break;
    }
    if (const int64_t r = rank_of(name); r >= 0 && r < ranks) files.rank_present[static_cast<size_t>(r)] = true;
    if (node_file) {
      node_error = add_node_file_ranks(step_fd, step_path, e->d_name, uid, ranks, files);
      if (node_error) break;
    }
  }
  ::closedir(d);
  if (node_error) return std::move(*node_error);
  if (!problem.empty()) return Error{step_path, problem};
  return files;
}

// "2-3 on node2, 5 on node3": the missing ranks as ranges, by host (as meta.json names them).
std::string describe_missing(const std::vector<bool>& present, const std::vector<std::string>& hosts) {
  std::string out;
  size_t ranges = 0;
  for (size_t r = 0; r < present.size();) {
    if (present[r]) {
      ++r;
      continue;
    }
    const std::string host = r < hosts.size() ? hosts[r] : "";
    size_t end = r;
    while (end + 1 < present.size() && !present[end + 1] &&
           (end + 1 < hosts.size() ? hosts[end + 1] : "") == host)
      ++end;
    if (++ranges > 8) return out + ", ...";
    out += (out.empty() ? "" : ", ") + std::to_string(r) + (end > r ? "-" + std::to_string(end) : "") +
           (host.empty() ? "" : " on " + one_line(host, 64));
    r = end + 1;
  }
  return out;
}

// meta.json's "hosts": one name per rank, or empty when absent or malformed.
std::vector<std::string> hosts_of(const nlohmann::json& meta, int ranks) {
  std::vector<std::string> hosts;
  if (!meta.contains("hosts") || !meta["hosts"].is_array() || meta["hosts"].size() != static_cast<size_t>(ranks))
    return hosts;
  for (const auto& h : meta["hosts"]) {
    if (!h.is_string()) return {};
    hosts.push_back(h.get<std::string>());
  }
  return hosts;
}

}  // namespace

Result<std::string> read_owned_file(int dir_fd, const std::string& dir_path,
                                    const std::string& name, uid_t uid, size_t max_bytes) {
  const std::string path = dir_path + "/" + name;
  UniqueFd fd(::openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (fd.get() < 0)
    return Error{path, errno == ELOOP ? "is a symbolic link" : std::strerror(errno)};
  struct stat st;
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return Error{path, "not a regular file"};
  if (st.st_uid != uid) return Error{path, "not owned by the job's user"};
  if (static_cast<uint64_t>(st.st_size) > max_bytes) return Error{path, "too large"};
  std::string text(static_cast<size_t>(st.st_size), '\0');
  const ssize_t got = ::pread(fd.get(), text.data(), text.size(), 0);
  if (got < 0) return Error{path, std::strerror(errno)};
  text.resize(static_cast<size_t>(got));
  return text;
}

Result<TraceChoice> pick_trace(const std::string& spool_dir, uint32_t job_id, uid_t uid,
                               uint64_t max_bytes, uint32_t restarts) {
  const std::string step_prefix = step_dir_prefix(restarts);
  TraceChoice choice;
  UniqueFd spool(::open(spool_dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (spool.get() < 0) return Error{spool_dir, std::strerror(errno)};
  const std::string job_name = job_dir_name(job_id);
  struct stat job_st;
  if (::fstatat(spool.get(), job_name.c_str(), &job_st, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT)
    return Error{spool_dir + "/" + job_name,
                 "no trace directory: no rank of the job was traced, or SpoolDir is not one file "
                 "system shared by every node and the controller"};
  auto job = open_owned_dir(spool.get(), spool_dir, job_name, uid);
  if (!job) return job.error();
  choice.job_dir = std::move(job).value();
  choice.job_path = spool_dir + "/" + job_name;

  // readdir on a duplicate: closedir closes the descriptor it was given.
  DIR* d = ::fdopendir(::dup(choice.job_dir.get()));
  if (!d) return Error{choice.job_path, std::strerror(errno)};
  std::string refused;
  std::string missing;  // of the step chosen so far
  int seen = 0;
  uint64_t entry_budget = kMaxEntriesPerJob;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (!name.starts_with(step_prefix) || ++seen > kMaxSteps) continue;
    struct stat st;
    if (::fstatat(choice.job_dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISLNK(st.st_mode)) {
      refused = choice.job_path + "/" + name + ": is a symbolic link";
      continue;
    }
    if (!S_ISDIR(st.st_mode) || st.st_uid != uid) {
      refused = choice.job_path + "/" + name + ": not a directory of the job's user";
      continue;
    }
    auto step = open_owned_dir(choice.job_dir.get(), choice.job_path, name, uid);
    if (!step) continue;
    const std::string step_path = choice.job_path + "/" + name;
    auto meta_text = read_owned_file(step.value().get(), step_path, "meta.json", uid, kMaxMetaBytes);
    if (!meta_text) continue;
    const nlohmann::json meta = nlohmann::json::parse(meta_text.value(), nullptr, false);
    if (!meta.is_object() || !meta.contains("complete") || meta["complete"] != true ||
        !meta.contains("ranks") || !meta["ranks"].is_number_integer())
      continue;
    const int64_t ranks64 = meta["ranks"].get<int64_t>();
    if (ranks64 <= 0 || ranks64 > 1000000) continue;
    const int ranks = static_cast<int>(ranks64);
    if (ranks <= choice.ranks) continue;
    auto files = step_files(step.value().get(), step_path, ranks, uid, max_bytes, &entry_budget);
    if (!files) {
      refused = files.error().line();
      if (entry_budget == 0) break;
      continue;
    }
    const std::vector<std::string> hosts = hosts_of(meta, ranks);
    const auto& present = files.value().rank_present;
    const auto found = std::count(present.begin(), present.end(), true);
    missing.clear();
    if (found < ranks) {
      missing = step_path + ": " + std::to_string(ranks - found) + " of " + std::to_string(ranks) +
                " ranks have no trace file here (ranks " + describe_missing(present, hosts) +
                "): their nodes wrote them where this host cannot see them; SpoolDir must be one "
                "file system shared by every node and the controller";
    }
    std::map<std::string, int> per_host;
    for (const std::string& h : hosts) ++per_host[h];
    choice.dir = step_path;
    choice.step = name;
    choice.ranks = ranks;
    choice.mpi = meta.contains("mpi") && meta["mpi"].is_string() ? meta["mpi"].get<std::string>() : "";
    choice.bytes = files.value().bytes;
    choice.hosts = per_host.empty() ? 1 : static_cast<int>(per_host.size());
    choice.ranks_per_host = per_host.empty() ? ranks : per_host.begin()->second;
    for (const auto& [host, n] : per_host)
      if (n != choice.ranks_per_host) choice.ranks_per_host = 0;
  }
  ::closedir(d);
  if (choice.dir.empty())
    return Error{choice.job_path, refused.empty() ? "no complete trace" : refused};
  if (!missing.empty()) return Error{"", missing};
  return choice;
}

}  // namespace pskel::worker
