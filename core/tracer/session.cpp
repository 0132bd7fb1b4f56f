// The tracing session of one MPI process: started by the MPI_Init wrapper, ended by the
// MPI_Finalize wrapper (both hand-written here; the table marks them `manual`). It owns the
// trace writer, the communicator table (handle -> id and world ranks) and the request table
// (handle -> id), and implements the Call methods the generated wrappers use.
//
// Failure policy: nothing here may change what the program does. A trace that cannot be
// created or written costs one warning line on stderr (printed by one rank for the whole run)
// and the program goes on untraced.

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "aux_words.h"
#include "call.h"
#include "env_number.h"
#include "finalize_pause.h"
#include "session.h"
#include "meta_writer.h"
#include "node_writer.h"
#include "trace/format.h"
#include "trace/samples_format.h"
#include "trace_writer.h"
#include "stream.h"
#include "work.h"

#ifndef PSKEL_MPI_FLAVOUR
#error "PSKEL_MPI_FLAVOUR must be set by the build (1 = MPICH, 2 = Open MPI)"
#endif

namespace pskel::tracer {

using trace::FunctionId;
using trace::Record;

bool g_recording = false;
pthread_t g_traced_thread;
Session* g_session = nullptr;

namespace {

constexpr size_t kDefaultBufferBytes = 1 << 20;
constexpr size_t kMaxBufferBytes = 256 << 20;
constexpr double kCalibrationSeconds = 0.002;  // x 9 runs (skeletons/work.c): ~20 ms in MPI_Init
// The memory probe's working set: larger than the last-level cache of the CPUs pskel meets, so
// that it measures memory, not cache (6 passes of 64 MB: ~0.1 s in MPI_Finalize).
// PSKEL_STREAM_PROBE_MB changes it (0: no probe, as on a node short of memory).
constexpr long kDefaultStreamProbeMb = 64;
constexpr long kMaxStreamProbeMb = 4096;

size_t stream_probe_bytes_from_env() {
  const long mb =
      number_from_env("PSKEL_STREAM_PROBE_MB", kDefaultStreamProbeMb, 0, kMaxStreamProbeMb);
  return static_cast<size_t>(mb) << 20;
}

int64_t realtime_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

int64_t now() { return g_session->clock.now_ns() - g_session->base_mono_ns; }

void warn(const std::string& what) {
  const std::string line = "pskel: trace: " + what + "\n";
  // One write: the line is not interleaved with the program's own output mid-way.
  [[maybe_unused]] ssize_t n = ::write(STDERR_FILENO, line.data(), line.size());
}

// The lowest rank for which `failed` is true, or -1; every rank learns the same answer, so
// exactly one of them reports a problem that several share.
int lowest_failing_rank(bool failed) {
  int mine = failed ? g_session->rank : INT_MAX;
  int lowest = INT_MAX;
  PMPI_Allreduce(&mine, &lowest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return lowest == INT_MAX ? -1 : lowest;
}

// The predefined datatypes of MPI-3.1 §3.2.2, §5.9.4 and §17.2.5 that both MPIs define.
// One missing here costs a PMPI_Type_size per use, nothing else.
const MPI_Datatype kPredefinedTypes[] = {
    MPI_CHAR, MPI_SHORT, MPI_INT, MPI_LONG, MPI_LONG_LONG, MPI_SIGNED_CHAR, MPI_UNSIGNED_CHAR,
    MPI_UNSIGNED_SHORT, MPI_UNSIGNED, MPI_UNSIGNED_LONG, MPI_UNSIGNED_LONG_LONG, MPI_FLOAT,
    MPI_DOUBLE, MPI_LONG_DOUBLE, MPI_WCHAR, MPI_C_BOOL, MPI_INT8_T, MPI_INT16_T, MPI_INT32_T,
    MPI_INT64_T, MPI_UINT8_T, MPI_UINT16_T, MPI_UINT32_T, MPI_UINT64_T, MPI_C_COMPLEX,
    MPI_C_FLOAT_COMPLEX, MPI_C_DOUBLE_COMPLEX, MPI_C_LONG_DOUBLE_COMPLEX, MPI_BYTE, MPI_PACKED,
    MPI_AINT, MPI_OFFSET, MPI_COUNT, MPI_INTEGER, MPI_REAL, MPI_DOUBLE_PRECISION, MPI_COMPLEX,
    MPI_DOUBLE_COMPLEX, MPI_LOGICAL, MPI_CHARACTER, MPI_FLOAT_INT, MPI_DOUBLE_INT, MPI_LONG_INT,
    MPI_2INT, MPI_SHORT_INT, MPI_LONG_DOUBLE_INT, MPI_2REAL, MPI_2DOUBLE_PRECISION, MPI_2INTEGER,
};

void fill_predefined_type_sizes(HandleMap<uint32_t>& sizes) {
  sizes.insert(handle_key(MPI_DATATYPE_NULL), 0);
  for (MPI_Datatype type : kPredefinedTypes) {
    if (type == MPI_DATATYPE_NULL) continue;  // a type this MPI build does not support
    int size = 0;
    PMPI_Type_size(type, &size);
    sizes.insert(handle_key(type), size > 0 ? static_cast<uint32_t>(size) : 0);
  }
}

}  // namespace

uint32_t derived_type_bytes(MPI_Datatype type) {
  if (type == MPI_DATATYPE_NULL) return 0;
  int size = 0;
  PMPI_Type_size(type, &size);
  return size > 0 ? static_cast<uint32_t>(size) : 0;
}

int32_t translate_special(int rank) {
  if (rank == MPI_PROC_NULL) return trace::kProcNull;
  if (rank == MPI_ANY_SOURCE) return trace::kAnySource;
  if (rank == MPI_ROOT) return trace::kRootSelf;
  return trace::kUnknownRank;
}

namespace {

std::vector<int32_t> world_ranks_of(MPI_Group group) {
  int n = 0;
  PMPI_Group_size(group, &n);
  std::vector<int> local(static_cast<size_t>(n)), world(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) local[static_cast<size_t>(i)] = i;
  PMPI_Group_translate_ranks(group, n, local.data(), g_session->world_group, world.data());
  std::vector<int32_t> out(static_cast<size_t>(n));
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = world[i] == MPI_UNDEFINED ? trace::kUnknownRank : world[i];
  return out;
}

void append_plain_record(FunctionId function, int64_t t_start, int64_t t_end) {
  Record r = empty_record(function);
  r.t_start = t_start;
  r.t_end = t_end;
  g_session->writer.append(r, nullptr, 0);
}

// Sets r.aux_words to the part of `words` aux words that fits (aux_words.h); the requests
// whose entries are cut off count as untracked_requests.
void fit_aux_words(Record& r, size_t words) {
  const AuxCut cut = cut_aux_words(r.function, words);
  r.aux_words = cut.kept;
  g_session->untracked_requests += cut.lost_requests;
}

// For an intercommunicator, info.world_ranks is the remote group and local_group the local
// one; for an intracommunicator both are the same vector.
void write_comm_define(const CommInfo& info, const std::vector<int32_t>& local_group,
                       bool inter) {
  Record r = empty_record(FunctionId::pskel_comm_define);
  r.comm = info.id;
  r.count = static_cast<int64_t>(local_group.size());
  r.recv_count = inter ? static_cast<int64_t>(info.world_ranks.size()) : 0;
  r.t_start = r.t_end = now();
  std::vector<int64_t> words(local_group.begin(), local_group.end());
  if (inter) words.insert(words.end(), info.world_ranks.begin(), info.world_ranks.end());
  fit_aux_words(r, words.size());
  g_session->writer.append(r, words.data(), r.aux_words);
}

}  // namespace

// The communicator's entry, registering it (and writing its definition) when first seen:
// communicators made by functions pskel does not wrap are followed too.
const CommInfo* comm_info(MPI_Comm comm) {
  if (comm == MPI_COMM_NULL) return nullptr;
  Session& s = *g_session;
  if (comm == MPI_COMM_WORLD) return s.comms[trace::kCommWorld].get();
  if (comm == MPI_COMM_SELF) return s.comms[trace::kCommSelf].get();
  if (const uint16_t* id = s.comm_ids.find(handle_key(comm))) return s.comms[*id].get();
  if (s.comms.size() >= trace::kNoComm) return nullptr;  // ids exhausted: peers stay unknown
  auto info = std::make_unique<CommInfo>();
  info->id = static_cast<uint16_t>(s.comms.size());
  if (!s.comm_ids.insert(handle_key(comm), info->id)) return nullptr;
  MPI_Group group;
  PMPI_Comm_group(comm, &group);
  std::vector<int32_t> local = world_ranks_of(group);
  PMPI_Group_rank(group, &info->my_rank);
  PMPI_Group_free(&group);
  int inter = 0;
  PMPI_Comm_test_inter(comm, &inter);
  if (inter) {
    PMPI_Comm_remote_group(comm, &group);
    info->world_ranks = world_ranks_of(group);
    PMPI_Group_free(&group);
    write_comm_define(*info, local, true);
  } else {
    info->world_ranks = std::move(local);
    write_comm_define(*info, info->world_ranks, false);
  }
  s.comms.push_back(std::move(info));
  return s.comms.back().get();
}

namespace {

std::string trace_dir_from_env_or_default(const std::string& run_id) {
  const char* dir = std::getenv("PSKEL_TRACE_DIR");
  if (dir != nullptr && *dir != '\0') return dir;
  return "pskel-trace-" + run_id;
}

std::string make_run_id() {
  char id[32];
  std::snprintf(id, sizeof id, "%llx-%x", static_cast<unsigned long long>(realtime_ns()),
                static_cast<unsigned>(getpid()));
  return id;
}

// Rank 0 creates the trace directory (a symlink there is refused) and decides the run id.
// Returns "" on success, else the reason.
std::string prepare_directory(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    return "cannot create directory " + dir + ": " + std::strerror(errno);
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0) return "cannot use " + dir + ": " + std::strerror(errno);
  if (!S_ISDIR(st.st_mode)) return "cannot use " + dir + ": not a directory";
  return "";
}

void broadcast_string(std::string& s, int root) {
  int n = static_cast<int>(s.size());
  PMPI_Bcast(&n, 1, MPI_INT, root, MPI_COMM_WORLD);
  s.resize(static_cast<size_t>(n));
  if (n > 0) PMPI_Bcast(s.data(), n, MPI_CHAR, root, MPI_COMM_WORLD);
}

void copy_truncated(char* dst, size_t size, const std::string& src) {
  std::memset(dst, 0, size);
  std::memcpy(dst, src.data(), src.size() < size - 1 ? src.size() : size - 1);
}

}  // namespace

void start_session(FunctionId init_function, int64_t init_entry_mono) {
  if (g_session != nullptr) return;
  auto* s = new Session;
  g_session = s;
  s->clock.start();  // the calibration below gives it a few ms to measure the TSC's rate
  PMPI_Comm_rank(MPI_COMM_WORLD, &s->rank);
  PMPI_Comm_size(MPI_COMM_WORLD, &s->size);
  PMPI_Comm_group(MPI_COMM_WORLD, &s->world_group);
  s->captured.reserve(256);

  std::string run_id = s->rank == 0 ? make_run_id() : "";
  broadcast_string(run_id, 0);
  std::string dir = trace_dir_from_env_or_default(run_id);
  std::string problem = s->rank == 0 ? prepare_directory(dir) : "";
  broadcast_string(problem, 0);
  // Every rank takes rank 0's choice: the node files' writers gather from all their ranks.
  int node_files = s->rank == 0 && node_files_wanted(s->size);
  PMPI_Bcast(&node_files, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (node_files) s->node_comm = split_by_node(s->rank);
  const size_t memory_cap = s->node_comm != MPI_COMM_NULL ? node_memory_cap_from_env() : 0;

  const double ns_per_unit = pskel_work_calibrate(kCalibrationSeconds);
  char host[64] = {};
  gethostname(host, sizeof host - 1);
  s->meta.hosts.assign(static_cast<size_t>(s->size) * sizeof host, '\0');
  s->meta.work_ns_per_unit.resize(static_cast<size_t>(s->size));
  PMPI_Gather(host, sizeof host, MPI_CHAR, s->meta.hosts.data(), sizeof host, MPI_CHAR, 0,
              MPI_COMM_WORLD);
  PMPI_Gather(&ns_per_unit, 1, MPI_DOUBLE, s->meta.work_ns_per_unit.data(), 1, MPI_DOUBLE, 0,
              MPI_COMM_WORLD);

  PMPI_Barrier(MPI_COMM_WORLD);  // t = 0 on every rank within the barrier's skew
  s->base_mono_ns = s->clock.now_ns();
  const int64_t base_real = realtime_ns();

  trace::FileHeader header{};
  std::memcpy(header.magic, trace::kFileMagic, sizeof header.magic);
  header.version = trace::kFormatVersion;
  header.header_bytes = sizeof header;
  header.record_bytes = sizeof(Record);
  header.rank = s->rank;
  header.world_size = s->size;
  header.flavour = PSKEL_MPI_FLAVOUR;
  header.base_realtime_ns = base_real;
  header.work_ns_per_unit = ns_per_unit;
  header.pid = static_cast<uint32_t>(getpid());
  copy_truncated(header.run_id, sizeof header.run_id, run_id);
  copy_truncated(header.hostname, sizeof header.hostname, host);

  if (problem.empty()) {
    const char* env_buffer = std::getenv("PSKEL_TRACE_BUFFER_BYTES");
    size_t buffer = env_buffer ? std::strtoull(env_buffer, nullptr, 10) : kDefaultBufferBytes;
    if (buffer > kMaxBufferBytes) buffer = kMaxBufferBytes;
    char name[64];
    std::snprintf(name, sizeof name, "/%s%d%s", trace::kRankFilePrefix, s->rank,
                  trace::kRankFileSuffix);
    if (!s->writer.open(dir + name, header, buffer, memory_cap)) problem = s->writer.error();
  }
  const int failing = lowest_failing_rank(!problem.empty());
  if (failing >= 0) {
    if (failing == s->rank) warn(problem + "; the program runs untraced");
    g_session = nullptr;
    PMPI_Group_free(&s->world_group);
    if (s->node_comm != MPI_COMM_NULL) PMPI_Comm_free(&s->node_comm);
    delete s;
    return;
  }

  s->meta.dir = dir;
  s->meta.run_id = run_id;
  s->meta.flavour = PSKEL_MPI_FLAVOUR;
  s->meta.ranks = s->size;
  s->meta.start_realtime_ns = base_real;
  s->meta.init_entry_ns = init_entry_mono - s->base_mono_ns;
  if (s->rank == 0) write_meta(s->meta);  // complete: false until MPI_Finalize

  auto world = std::make_unique<CommInfo>();
  world->id = trace::kCommWorld;
  world->my_rank = s->rank;
  world->world_ranks.resize(static_cast<size_t>(s->size));
  for (int i = 0; i < s->size; ++i) world->world_ranks[static_cast<size_t>(i)] = i;
  auto self = std::make_unique<CommInfo>();
  self->id = trace::kCommSelf;
  self->world_ranks = {s->rank};
  s->comms.push_back(std::move(world));
  s->comms.push_back(std::move(self));
  s->world = s->comms[trace::kCommWorld].get();
  fill_predefined_type_sizes(s->predefined_type_sizes);

  // Sampling is optional: a sample file that cannot be created leaves the trace as it is.
  const std::string samples_path =
      dir + "/" + trace::kSamplesFilePrefix + std::to_string(s->rank);
  s->sampler.start(samples_path.c_str(), s->rank, run_id.c_str(), sample_interval_ms_from_env(),
                   now(), memory_cap);
  s->sampler.size_probes(ns_per_unit);
  s->sampler.probe_memory(stream_probe_bytes_from_env() > 0);

  g_traced_thread = pthread_self();
  s->pid = getpid();
  // The Init record spans the program's call: from its entry (before t = 0) to now.
  append_plain_record(init_function, init_entry_mono - s->base_mono_ns, now());
  g_recording = true;
}

void end_session() {
  if (g_session == nullptr || g_session->finished) return;
  const int64_t entry_ns = now();
  Session* s = g_session;
  g_recording = false;
  s->sampler.stop(entry_ns);
  const double ns_per_unit_in_run = s->sampler.probe_ns_per_unit();
  const double ns_per_byte_in_run = s->sampler.probe_ns_per_byte();
  append_plain_record(FunctionId::MPI_Finalize, entry_ns, entry_ns);
  s->writer.close(entry_ns, s->untraced_thread_calls, s->untracked_requests);
  std::string node_problem;
  if (s->node_comm != MPI_COMM_NULL) {
    node_problem = write_node_file(s->node_comm, s->rank, s->meta.dir, s->writer.output(),
                                   s->sampler.output());
    PMPI_Comm_free(&s->node_comm);
  }
  // What the rank's files took at the end (the last sample, the last block, closing samples.N
  // and rank.N.pskt, or gathering and writing the node file): the part of a job's end that
  // grows with its rank count when the ranks share a file system (docs/trace-format.md §12).
  const double close_ns = static_cast<double>(now() - entry_ns);
  const bool failed = s->writer.failed() || !node_problem.empty();
  const int failing = lowest_failing_rank(failed || s->writer.dropped() > 0);
  if (failing == s->rank) {
    warn(failed ? (node_problem.empty() ? s->writer.error() : node_problem) +
                      "; the trace of this run is incomplete"
                : std::to_string(s->writer.dropped()) + " records dropped");
  }
  uint64_t records = s->writer.records(), total_records = 0;
  PMPI_Reduce(&records, &total_records, 1, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
  // Measured again, outside the traced time like the first: on a VM a slow moment of the host
  // inflates one measurement by several % unseen by the run-queue delay, and the two disagree;
  // a run that was slow throughout inflates both (skeleton/analyse.cpp combines them).
  const double ns_per_unit_at_finalize = pskel_work_calibrate(kCalibrationSeconds);
  s->meta.work_ns_per_unit_at_finalize.resize(static_cast<size_t>(s->size));
  PMPI_Gather(&ns_per_unit_at_finalize, 1, MPI_DOUBLE, s->meta.work_ns_per_unit_at_finalize.data(),
              1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  s->meta.finalize_write_ns.resize(static_cast<size_t>(s->size));
  PMPI_Gather(&close_ns, 1, MPI_DOUBLE, s->meta.finalize_write_ns.data(), 1, MPI_DOUBLE, 0,
              MPI_COMM_WORLD);
  s->meta.work_ns_per_unit_in_run.resize(static_cast<size_t>(s->size));
  PMPI_Gather(&ns_per_unit_in_run, 1, MPI_DOUBLE, s->meta.work_ns_per_unit_in_run.data(), 1,
              MPI_DOUBLE, 0, MPI_COMM_WORLD);
  // What a byte streamed through memory costs here, for the memory-bound part of a skeleton's
  // compute (skeletons/stream.h). At the end, not at MPI_Init: it delays no start. The ranks
  // time their passes together from a barrier, sharing a node's bandwidth as their memory
  // phases did (and as a skeleton's ranks do): without it, each rank's passes overlapped the
  // others' by chance (2 ranks on this VM: 0.049-0.062 ns a byte without, 0.074-0.090 with).
  // Every rank enters the barrier, whatever its PSKEL_STREAM_PROBE_MB or its memory says.
  const auto barrier = [](void*) { PMPI_Barrier(MPI_COMM_WORLD); };
  const double ns_per_byte =
      pskel_stream_calibrate(stream_probe_bytes_from_env(), PSKEL_STREAM_READ, barrier, nullptr);
  s->meta.stream_ns_per_byte.resize(static_cast<size_t>(s->size));
  PMPI_Gather(&ns_per_byte, 1, MPI_DOUBLE, s->meta.stream_ns_per_byte.data(), 1, MPI_DOUBLE, 0,
              MPI_COMM_WORLD);
  s->meta.stream_kind = trace::kStreamRead;  // PSKEL_STREAM_READ, as the sampler's probes stream too
  s->meta.stream_ns_per_byte_in_run.resize(static_cast<size_t>(s->size));
  PMPI_Gather(&ns_per_byte_in_run, 1, MPI_DOUBLE, s->meta.stream_ns_per_byte_in_run.data(), 1,
              MPI_DOUBLE, 0, MPI_COMM_WORLD);
  if (s->rank == 0) {
    s->meta.complete = failing < 0;
    s->meta.end_realtime_ns = realtime_ns();
    s->meta.total_records = total_records;
    write_meta(s->meta);
  }
  s->finished = true;
}

void flush_unfinished_session() {
  // A child forked by the program shares the rank file: its exit must not write the parent's
  // buffered records into it.
  if (g_session != nullptr && !g_session->finished && getpid() == g_session->pid) {
    g_session->sampler.stop(now());
    g_session->sampler.output().spill();  // held for a node file that will not be written
    g_session->writer.output().spill();
    g_session->writer.flush();
  }
}

void count_untraced_thread_call() {
  if (g_session) __atomic_add_fetch(&g_session->untraced_thread_calls, 1, __ATOMIC_RELAXED);
}

void Call::append_counts(const int* counts, int64_t* total) {
  const size_t n = comm_ ? comm_->world_ranks.size() : 0;
  auto& aux = g_session->writer.staged_aux();
  aux.push_back(static_cast<int64_t>(n));
  *total = 0;
  for (size_t i = 0; i < n; ++i) {
    aux.push_back(counts[i]);
    *total += counts[i];
  }
}

// v-collectives: aux = [n, send counts...] then [n, receive counts...], always both parts; a
// side the call does not have, or that is not significant on this rank (in place, or not the
// root), is [0]. send_counts() comes first (ROLE_ORDER); the destructor closes the layout.
void Call::send_counts(const int* counts) {
  v_collective_ = true;
  send_side_written_ = true;
  if (in_place_ || counts == nullptr) {
    g_session->writer.staged_aux().push_back(0);  // ignored by MPI: the pointer may be anything
    return;
  }
  append_counts(counts, &v_send_elements_);
  record_.count = v_send_elements_;
}

void Call::recv_counts(const int* counts) {
  v_collective_ = true;
  if (!send_side_written_) g_session->writer.staged_aux().push_back(0);
  send_side_written_ = true;
  recv_side_written_ = true;
  append_counts(counts, &v_recv_elements_);
  record_.recv_count = v_recv_elements_;
}

void Call::close_v_collective() {
  if (!send_side_written_) g_session->writer.staged_aux().push_back(0);
  if (!recv_side_written_) g_session->writer.staged_aux().push_back(0);
}

void Call::op(MPI_Op op) {
  static const MPI_Op kOps[] = {MPI_MAX,  MPI_MIN,  MPI_SUM,  MPI_PROD,   MPI_LAND,
                                MPI_BAND, MPI_LOR,  MPI_BOR,  MPI_LXOR,   MPI_BXOR,
                                MPI_MINLOC, MPI_MAXLOC, MPI_REPLACE};
  record_.op = static_cast<uint8_t>(trace::Op::user);
  for (size_t i = 0; i < sizeof kOps / sizeof kOps[0]; ++i)
    if (op == kOps[i]) record_.op = static_cast<uint8_t>(i + 1);
}

void Call::new_comm(MPI_Comm comm) {
  const CommInfo* info = comm_info(comm);
  g_session->writer.staged_aux().push_back(info ? info->id : trace::kNoComm);
}

void Call::free_comm(MPI_Comm comm) {
  const CommInfo* info = comm_info(comm);
  record_.comm = info ? info->id : trace::kNoComm;
  if (comm != MPI_COMM_WORLD && comm != MPI_COMM_SELF) g_session->comm_ids.erase(handle_key(comm));
}

namespace {
uint32_t request_id(MPI_Request request) {
  const RequestInfo* info = g_session->requests.find(handle_key(request));
  return info ? info->id : 0;
}
}  // namespace

void Call::start_requests(int n, const MPI_Request* requests) {
  record_.count = n;
  std::vector<int64_t>& aux = g_session->writer.staged_aux();
  for (int i = 0; i < n; ++i) aux.push_back(request_id(requests[i]));
  if (n > 0) record_.request = request_id(requests[0]);
}

void Call::start_requests_fortran(int n, const MPI_Fint* requests) {
  record_.count = n;
  std::vector<int64_t>& aux = g_session->writer.staged_aux();
  for (int i = 0; i < n; ++i) aux.push_back(request_id(PMPI_Request_f2c(requests[i])));
  if (n > 0) record_.request = request_id(PMPI_Request_f2c(requests[0]));
}

void Call::capture_requests(int n, const MPI_Request* requests) {
  auto& captured = g_session->captured;
  captured.assign(requests, requests + (n > 0 ? n : 0));
}

void Call::capture_requests_fortran(int n, const MPI_Fint* requests) {
  auto& captured = g_session->captured;
  captured.clear();
  for (int i = 0; i < n; ++i) captured.push_back(PMPI_Request_f2c(requests[i]));
}

void Call::free_request(const MPI_Request* request) {
  record_.request = request_id(*request);
  g_session->requests.erase(handle_key(*request));
}

void Call::free_request_fortran(const MPI_Fint* request) {
  const MPI_Request c = PMPI_Request_f2c(*request);
  free_request(&c);
}

MPI_Status* Call::scratch_statuses(int n) {
  auto& v = g_session->scratch_statuses;
  if (v.size() < static_cast<size_t>(n)) v.resize(static_cast<size_t>(n));
  return v.data();
}

MPI_Fint* Call::scratch_fortran_statuses(int n) {
  auto& v = g_session->scratch_fortran_statuses;
  const size_t need = static_cast<size_t>(n) * kFortranStatusSize;
  if (v.size() < need) v.resize(need);
  return v.data();
}

void Call::complete(MPI_Request request, const MPI_Status& status) {
  Session& s = *g_session;
  if (request == MPI_REQUEST_NULL) return;
  const RequestInfo* found = s.requests.find(handle_key(request));
  const RequestInfo info = found ? *found : RequestInfo{};
  int32_t source = trace::kNoRank;
  int32_t tag = trace::kNoTag;
  int64_t bytes = 0;
  if (info.receive) {
    const CommInfo* comm = info.comm < s.comms.size() ? s.comms[info.comm].get() : nullptr;
    source = translate(comm, status.MPI_SOURCE);
    tag = status.MPI_TAG;
    int count = 0;
    PMPI_Get_count(&status, MPI_BYTE, &count);
    bytes = count == MPI_UNDEFINED ? 0 : count;
  }
  // The completion entry of docs/trace-format.md §4.5, word by word: building it in an array
  // first and copying that costs a store-forwarding stall per completed request.
  static_assert(trace::kCompletionWords == 4, "the completion layout of §4.5");
  std::vector<int64_t>& aux = s.writer.staged_aux();
  aux.push_back(info.id);
  aux.push_back(source);
  aux.push_back(tag);
  aux.push_back(bytes);
  recv_bytes_ = (recv_bytes_ < 0 ? 0 : recv_bytes_) + bytes;
  if (found && !info.persistent) s.requests.erase(handle_key(request));
}

void Call::completions(int n, StatusView statuses, const int* flag, const int* index,
                       const int* outcount, const int* indices) {
  const auto& captured = g_session->captured;
  record_.count = n;
  if (flag != nullptr && !*flag) return;
  MPI_Status scratch;
  auto at = [&](int i) { return i >= 0 && static_cast<size_t>(i) < captured.size(); };
  if (outcount != nullptr) {
    if (*outcount == MPI_UNDEFINED) return;
    for (int k = 0; k < *outcount; ++k)
      if (at(indices[k]))
        complete(captured[static_cast<size_t>(indices[k])], statuses.get(k, scratch));
  } else if (index != nullptr) {
    if (*index != MPI_UNDEFINED && at(*index))
      complete(captured[static_cast<size_t>(*index)], statuses.get(0, scratch));
  } else {
    for (size_t i = 0; i < captured.size(); ++i)
      complete(captured[i], statuses.get(static_cast<int>(i), scratch));
  }
}

void Call::received(StatusView status_view, const int* flag) {
  if (flag != nullptr && !*flag) return;
  MPI_Status scratch;
  const MPI_Status& status = status_view.get(0, scratch);
  record_.source = world_rank(status.MPI_SOURCE);
  record_.recv_tag = status.MPI_TAG;
  int count = 0;
  PMPI_Get_count(&status, MPI_BYTE, &count);
  recv_bytes_ = count == MPI_UNDEFINED ? 0 : count;
}

void Call::probed(StatusView status_view, const int* flag) {
  received(status_view, flag);
  if (flag != nullptr && !*flag) return;
  record_.recv_count = recv_bytes_;  // the size of the message found; a probe moves nothing
  record_.recv_type_size = 1;
  recv_bytes_ = 0;
}

}  // namespace pskel::tracer

extern "C" {

PSKEL_EXPORT int MPI_Init(int* argc, char*** argv) {
  const int64_t entry = pskel::tracer::monotonic_ns();
  const int rc = PMPI_Init(argc, argv);
  if (rc == MPI_SUCCESS) pskel::tracer::start_session(pskel::trace::FunctionId::MPI_Init, entry);
  return rc;
}

PSKEL_EXPORT int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  const int64_t entry = pskel::tracer::monotonic_ns();
  const int rc = PMPI_Init_thread(argc, argv, required, provided);
  if (rc == MPI_SUCCESS)
    pskel::tracer::start_session(pskel::trace::FunctionId::MPI_Init_thread, entry);
  return rc;
}

PSKEL_EXPORT int MPI_Finalize(void) {
  pskel::tracer::end_session();
  pskel_finalize_pause();  // a traced job must not hang where MPICH's finalize can (its header)
  return PMPI_Finalize();
}

}  // extern "C"

// A process that exits without MPI_Finalize keeps what it recorded (the file then has no end
// block, and readers report it as truncated).
__attribute__((destructor)) static void flush_unfinished_trace() {
  pskel::tracer::flush_unfinished_session();
}
