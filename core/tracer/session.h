// The tracing session of one MPI process: its state, and its start and end for the hand-written
// MPI_Init / MPI_Finalize wrappers (C in session.cpp, Fortran in session_fortran.cpp). The state
// is here, not private to session.cpp, because the recorder's fast path (call.h) is inline in
// every generated wrapper.
// Not thread-safe: only the thread that called MPI_Init records (call.h).
#pragma once

#include <mpi.h>
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "clock.h"
#include "handle_map.h"
#include "meta_writer.h"
#include "sampler.h"
#include "trace/format.h"
#include "trace/functions.h"
#include "trace_writer.h"

namespace pskel::tracer {

struct CommInfo {
  uint16_t id = trace::kNoComm;
  std::vector<int32_t> world_ranks;   // of the group peers are named in (remote for inter)
  int my_rank = 0;                    // in the local group
};

struct RequestInfo {
  uint32_t id = 0;
  uint16_t comm = trace::kNoComm;
  bool receive = false;
  bool persistent = false;
};

inline constexpr size_t kRequestTableSize = 1 << 16;
inline constexpr size_t kCommTableSize = 1 << 12;
// Room for the predefined datatypes (about 70 in MPI-3) at under 3/4 load.
inline constexpr size_t kTypeTableSize = 1 << 8;

struct Session {
  TraceWriter writer;
  MetaInfo meta;
  int rank = 0;
  int size = 1;
  Clock clock;                                     // of every record time
  int64_t base_mono_ns = 0;                        // clock.now_ns() at t = 0
  MPI_Group world_group = MPI_GROUP_NULL;
  std::vector<std::unique_ptr<CommInfo>> comms;   // index = id
  const CommInfo* world = nullptr;                // comms[kCommWorld]
  HandleMap<uint16_t> comm_ids{kCommTableSize};
  HandleMap<RequestInfo> requests{kRequestTableSize};
  // Sizes of the predefined datatypes (and MPI_DATATYPE_NULL: 0), read once at the start: they
  // never change, unlike a derived type's handle, which MPI may reuse once the type is freed.
  HandleMap<uint32_t> predefined_type_sizes{kTypeTableSize};
  uint32_t next_request = 1;
  uint32_t untracked_requests = 0;
  uint32_t untraced_thread_calls = 0;
  std::vector<MPI_Request> captured;
  std::vector<MPI_Status> scratch_statuses;
  std::vector<MPI_Fint> scratch_fortran_statuses;
  Sampler sampler;                                 // CPU and memory, checked at each call
  MPI_Comm node_comm = MPI_COMM_NULL;              // the node's ranks, when writing node files
  pid_t pid = 0;                                   // the process that traces (not a fork of it)
  bool finished = false;
};

// The session, or nullptr before MPI_Init and when the run goes untraced.
extern Session* g_session;

// Called right after PMPI_Init* succeeded; `init_entry_mono` is when the program called it.
// Collective over MPI_COMM_WORLD. Does nothing if a session exists.
void start_session(trace::FunctionId init_function, int64_t init_entry_mono);
// Called on entry to MPI_Finalize, before PMPI_Finalize. Collective. Idempotent.
void end_session();
// Writes what is buffered, without ending the file (a process exiting without Finalize).
void flush_unfinished_session();

}  // namespace pskel::tracer
