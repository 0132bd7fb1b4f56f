// What the generated PMPI wrappers call: `tracing()` to decide between recording and straight
// pass-through, and a `Call` that collects one record from the call's arguments (one method
// per argument role of core/tracer/mpi_functions.tbl) and writes it when it goes out of scope.
//
// The methods every point-to-point call or collective goes through are defined inline below,
// so that a wrapper compiles to straight-line code (docs/design.md: <= 100 ns per traced call); the
// rare and the long ones (communicator registration, v-counts, completions) are in session.cpp.
//
// Threads: only the thread that called MPI_Init records. Calls from other threads pass
// straight through and are counted. A Call also makes nested MPI calls (an MPI library calling
// its own MPI_* entry points, Fortran bindings calling C ones) pass through, so each call of
// the program is recorded once.
#pragma once

#include <mpi.h>
#include <pthread.h>

#include <cstdint>

#include "aux_words.h"
#include "handle_map.h"
#include "session.h"
#include "trace/format.h"
#include "trace/functions.h"

// The tracer is built with hidden visibility; only the MPI entry points are exported.
#define PSKEL_EXPORT __attribute__((visibility("default")))

namespace pskel::tracer {

static_assert(sizeof(MPI_Fint) == sizeof(int), "Fortran integer arrays are read as int arrays");
inline constexpr int kFortranStatusSize = sizeof(MPI_Status) / sizeof(MPI_Fint);

// Session state the inline fast path reads. Defined in session.cpp.
extern bool g_recording;            // a session is active and no Call is open
extern pthread_t g_traced_thread;   // the thread that called MPI_Init
void count_untraced_thread_call();

inline bool tracing() {
  if (!g_recording) return false;
  if (pthread_equal(pthread_self(), g_traced_thread)) return true;
  count_untraced_thread_call();
  return false;
}

// The trace's value for a rank that is not one of the communicator's: kProcNull for
// MPI_PROC_NULL and the like, else kUnknownRank.
int32_t translate_special(int rank);
// The world rank of `rank` of `comm` (null: unknown).
inline int32_t translate(const CommInfo* comm, int rank) {
  // MPI's special ranks (MPI_PROC_NULL, MPI_ANY_SOURCE, MPI_ROOT) are negative.
  if (comm != nullptr && rank >= 0 && static_cast<size_t>(rank) < comm->world_ranks.size())
    return comm->world_ranks[static_cast<size_t>(rank)];
  return translate_special(rank);
}

// The communicator's entry, registering it when first seen (comm_info in session.cpp).
const CommInfo* comm_info(MPI_Comm comm);

// The size of a datatype in bytes (0 for MPI_DATATYPE_NULL): predefined types from the
// session's table, others from MPI.
uint32_t derived_type_bytes(MPI_Datatype type);
inline uint32_t type_bytes(MPI_Datatype type) {
  if (const uint32_t* size = g_session->predefined_type_sizes.find(handle_key(type))) return *size;
  return derived_type_bytes(type);
}

// Fills `r` in place: built in a temporary and copied, its wide loads would wait for its
// narrow stores (see TraceWriter::stage()).
inline void reset_record(trace::Record& r, trace::FunctionId function) {
  r = trace::Record{};
  r.function = static_cast<uint16_t>(function);
  r.comm = trace::kNoComm;
  r.peer = r.source = r.root = trace::kNoRank;
  r.tag = r.recv_tag = trace::kNoTag;
}

inline trace::Record empty_record(trace::FunctionId function) {
  trace::Record r;
  reset_record(r, function);
  return r;
}

// The statuses of a call, as C MPI_Status or as Fortran INTEGER(MPI_STATUS_SIZE) arrays.
class StatusView {
 public:
  static StatusView of_c(const MPI_Status* s, bool array) { return {s, nullptr, array}; }
  static StatusView of_fortran(const MPI_Fint* s, bool array) { return {nullptr, s, array}; }
  // Status i of an array, or the single status: the program's own in C, else converted into
  // `scratch`. Not a copy: MPI has just written the status field by field, and a copy's wide
  // loads would span those stores, which the CPU cannot forward from its store buffer: each
  // load would wait until they reach the cache.
  const MPI_Status& get(int i, MPI_Status& scratch) const {
    const int at = array_ ? i : 0;
    if (c_ != nullptr) return c_[at];
    scratch = MPI_Status{};
    if (f_ != nullptr) PMPI_Status_f2c(f_ + at * kFortranStatusSize, &scratch);
    return scratch;
  }

 private:
  StatusView(const MPI_Status* c, const MPI_Fint* f, bool array) : c_(c), f_(f), array_(array) {}
  const MPI_Status* c_;
  const MPI_Fint* f_;
  bool array_;
};

class Call {
 public:
  // REQUIRES: tracing(). Takes the start time.
  explicit Call(trace::FunctionId function) : record_(g_session->writer.stage()) {
    g_recording = false;
    reset_record(record_, function);
    record_.t_start = now();
    g_session->sampler.at_call_start(record_.t_start);
  }
  // Writes the record.
  ~Call();
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

  void set_flags(uint8_t flags) { record_.flags |= flags; }
  // Takes the end time; call right after the PMPI function returns.
  void finish(int mpi_error) {
    record_.t_end = now();
    if (mpi_error != MPI_SUCCESS) record_.flags |= trace::kFlagError;
  }

  void comm(MPI_Comm comm) {
    comm_ = comm == MPI_COMM_WORLD ? g_session->world : comm_info(comm);
    record_.comm = comm_ ? comm_->id : trace::kNoComm;
  }
  void root(int root) {
    record_.root = world_rank(root);
    at_root_ = comm_ != nullptr && root == comm_->my_rank;
  }
  bool at_root() const { return at_root_; }
  void send_buffer(const void* buffer) {
    in_place_ = buffer == MPI_IN_PLACE;
    if (in_place_) record_.flags |= trace::kFlagInPlace;
  }
  // With MPI_IN_PLACE the count and type still describe the data (reductions) or are ignored
  // by MPI (gathers: then often MPI_DATATYPE_NULL, which type_bytes() takes as 0).
  void count(int count) { record_.count = count; }
  void type(MPI_Datatype type) { record_.type_size = type_bytes(type); }
  void recv_count(int count) { record_.recv_count = count; }
  void recv_type(MPI_Datatype type) { record_.recv_type_size = type_bytes(type); }
  void send_counts(const int* counts);   // one per rank of the communicator
  void recv_counts(const int* counts);
  void counts_not_significant() { v_collective_ = true; }  // a v-count argument not to read
  void dest(int rank) { record_.peer = world_rank(rank); }
  void source(int rank) {
    if (rank == MPI_ANY_SOURCE) record_.flags |= trace::kFlagAnySource;
    record_.source = world_rank(rank);
  }
  void tag(int tag) { record_.tag = tag == MPI_ANY_TAG ? trace::kAnyTag : tag; }
  void recv_tag(int tag) {
    if (tag == MPI_ANY_TAG) record_.flags |= trace::kFlagAnyTag;
    record_.recv_tag = tag == MPI_ANY_TAG ? trace::kAnyTag : tag;
  }
  void op(MPI_Op op);
  void new_comm(MPI_Comm comm);
  void free_comm(MPI_Comm comm);
  void new_request(MPI_Request request, bool persistent);
  void start_requests(int n, const MPI_Request* requests);
  void start_requests_fortran(int n, const MPI_Fint* requests);
  void capture_requests(int n, const MPI_Request* requests);
  void capture_requests_fortran(int n, const MPI_Fint* requests);
  void free_request(const MPI_Request* request);
  void free_request_fortran(const MPI_Fint* request);

  // Room for n statuses where the program passed MPI_STATUSES_IGNORE but the tracer needs them.
  MPI_Status* scratch_statuses(int n);
  MPI_Fint* scratch_fortran_statuses(int n);

  // Records what a wait or test completed: the captured requests, selected by the outputs
  // the function has (the others are null).
  void completions(int n, StatusView statuses, const int* flag, const int* index,
                   const int* outcount, const int* indices);
  // Records what a receive got from its status, or what a probe found (a probe moves nothing:
  // the message's size goes to recv_count). flag: Iprobe's, else null.
  void received(StatusView status, const int* flag);
  void probed(StatusView status, const int* flag);

 private:
  static int64_t now() { return g_session->clock.now_ns() - g_session->base_mono_ns; }
  int32_t world_rank(int rank) const { return translate(comm_, rank); }
  void append_counts(const int* counts, int64_t* total);
  void complete(MPI_Request request, const MPI_Status& status);
  void close_v_collective();

  trace::Record& record_;  // the writer's staged record
  const CommInfo* comm_ = nullptr;
  bool at_root_ = true;
  bool in_place_ = false;
  int64_t recv_bytes_ = -1;  // actual bytes received, where a status said so
  int64_t v_send_elements_ = -1;
  int64_t v_recv_elements_ = -1;
  bool v_collective_ = false;
  bool send_side_written_ = false;
  bool recv_side_written_ = false;
};

inline Call::~Call() {
  Session& s = *g_session;
  const int64_t sent = in_place_ ? 0
                       : v_send_elements_ >= 0 ? v_send_elements_ * record_.type_size
                                               : record_.count * record_.type_size;
  const uint32_t recv_size = record_.recv_type_size ? record_.recv_type_size : record_.type_size;
  const int64_t received = recv_bytes_ >= 0        ? recv_bytes_
                           : v_recv_elements_ >= 0 ? v_recv_elements_ * recv_size
                                                   : record_.recv_count * record_.recv_type_size;
  record_.bytes = sent + received;
  if (v_collective_) close_v_collective();
  const AuxCut cut = cut_aux_words(record_.function, s.writer.staged_aux().size());
  record_.aux_words = cut.kept;
  if (cut.lost_requests) s.untracked_requests += cut.lost_requests;
  s.sampler.at_call_end(record_.t_end);
  s.writer.staged_done();
  g_recording = !s.finished;
}

inline void Call::new_request(MPI_Request request, bool persistent) {
  Session& s = *g_session;
  if (request == MPI_REQUEST_NULL) return;
  const RequestInfo info{s.next_request, record_.comm, record_.source != trace::kNoRank,
                         persistent};
  if (info.receive) recv_bytes_ = 0;  // counted by the wait that completes it
  if (!s.requests.insert(handle_key(request), info)) {
    ++s.untracked_requests;
    return;
  }
  record_.request = s.next_request++;
}

}  // namespace pskel::tracer
