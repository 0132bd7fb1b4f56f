// What the generated PMPI wrappers call: `tracing()` to decide between recording and straight
// pass-through, and a `Call` that collects one record from the call's arguments (one method
// per argument role of core/tracer/mpi_functions.tbl) and writes it when it goes out of scope.
//
// Threads: only the thread that called MPI_Init records. Calls from other threads pass
// straight through and are counted. A Call also makes nested MPI calls (an MPI library calling
// its own MPI_* entry points, Fortran bindings calling C ones) pass through, so each call of
// the program is recorded once.
#pragma once

#include <mpi.h>
#include <pthread.h>

#include <cstdint>

#include "trace/format.h"
#include "trace/functions.h"

// The tracer is built with hidden visibility; only the MPI entry points are exported.
#define PSKEL_EXPORT __attribute__((visibility("default")))

namespace pskel::tracer {

static_assert(sizeof(MPI_Fint) == sizeof(int), "Fortran integer arrays are read as int arrays");
inline constexpr int kFortranStatusSize = sizeof(MPI_Status) / sizeof(MPI_Fint);

struct CommInfo;

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

// The statuses of a call, as C MPI_Status or as Fortran INTEGER(MPI_STATUS_SIZE) arrays.
class StatusView {
 public:
  static StatusView of_c(const MPI_Status* s, bool array) { return {s, nullptr, array}; }
  static StatusView of_fortran(const MPI_Fint* s, bool array) { return {nullptr, s, array}; }
  // Status i of an array, or the single status.
  MPI_Status get(int i) const;

 private:
  StatusView(const MPI_Status* c, const MPI_Fint* f, bool array) : c_(c), f_(f), array_(array) {}
  const MPI_Status* c_;
  const MPI_Fint* f_;
  bool array_;
};

class Call {
 public:
  // REQUIRES: tracing(). Takes the start time.
  explicit Call(trace::FunctionId function);
  // Writes the record.
  ~Call();
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

  void set_flags(uint8_t flags) { record_.flags |= flags; }
  // Takes the end time; call right after the PMPI function returns.
  void finish(int mpi_error);

  void comm(MPI_Comm comm);
  void root(int root);
  bool at_root() const { return at_root_; }
  void send_buffer(const void* buffer);
  void count(int count);
  void type(MPI_Datatype type);
  void recv_count(int count);
  void recv_type(MPI_Datatype type);
  void send_counts(const int* counts);   // one per rank of the communicator
  void recv_counts(const int* counts);
  void counts_not_significant();         // a v-count argument this rank must not read
  void dest(int rank);
  void source(int rank);
  void tag(int tag);
  void recv_tag(int tag);
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
  // Records what a receive or probe got from its status (flag: Iprobe's).
  void received(StatusView status, const int* flag);

 private:
  int32_t world_rank(int rank) const;
  void append_counts(const int* counts, int64_t* total);
  void complete(MPI_Request request, const MPI_Status& status);

  trace::Record record_{};
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

}  // namespace pskel::tracer
