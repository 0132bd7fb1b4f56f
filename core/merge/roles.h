// What the merge needs to know of each MPI function, as O(1) tables built at compile time from
// the generated function table: its role in Algorithm 1, whether it creates a request, whether
// every member of its communicator makes it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "trace/functions.h"

namespace pskel::merge::detail {

// What Algorithm 1 may do with a call. The first six are the point-to-point roles that it
// reorders, numbered in their canonical order within a round (normalize.cpp explains it).
enum class Role : uint8_t {
  recv_post = 0,  // MPI_Irecv (and a Start whose requests include a receive)
  send_post,      // MPI_Isend, MPI_Issend (and a Start of send requests)
  send,           // MPI_Send, Ssend, Rsend, Bsend
  exchange,       // MPI_Sendrecv, Sendrecv_replace
  recv,           // MPI_Recv, MPI_Probe
  completion,     // MPI_Wait*, MPI_Test* (fixed when none of the run's requests is pending)
  start,          // MPI_Start, Startall: recv_post or send_post, by the requests it starts
  fixed,          // any other call: nothing moves across it
  pseudo,         // a record the tracer wrote itself (kind meta): not an event
};
inline constexpr int kReorderableRoles = 6;

namespace facts {

using trace::FunctionId;
using trace::FunctionKind;

// Function ids are small (the table's largest is pskel_comm_define = 1000).
inline constexpr size_t kIdSlots = 1024;
static_assert(static_cast<size_t>(FunctionId::pskel_comm_define) < kIdSlots);

constexpr Role role_from(const trace::FunctionInfo& f) {
  switch (f.kind) {
    case FunctionKind::p2p:
      switch (f.id) {
        case FunctionId::MPI_Isend:
        case FunctionId::MPI_Issend:
          return Role::send_post;
        case FunctionId::MPI_Irecv:
          return Role::recv_post;
        case FunctionId::MPI_Sendrecv:
        case FunctionId::MPI_Sendrecv_replace:
          return Role::exchange;
        case FunctionId::MPI_Recv:
          return Role::recv;
        default:
          return Role::send;  // Send, Ssend, Rsend, Bsend
      }
    case FunctionKind::start:
      return Role::start;
    case FunctionKind::completion:
      return Role::completion;
    case FunctionKind::probe:  // Probe waits for a message like a receive; Iprobe only polls
      return f.id == FunctionId::MPI_Probe ? Role::recv : Role::fixed;
    case FunctionKind::meta:
      return Role::pseudo;
    default:
      return Role::fixed;
  }
}

struct Table {
  std::array<Role, kIdSlots> role;
  std::array<bool, kIdSlots> creates;
  std::array<bool, kIdSlots> collective;
};

constexpr Table build() {
  Table t{};
  t.role.fill(Role::fixed);  // ids the table does not know
  for (const trace::FunctionInfo& f : trace::kFunctions) {
    const auto id = static_cast<size_t>(f.id);
    if (id >= kIdSlots) continue;
    t.role[id] = role_from(f);
    t.creates[id] = f.creates_request;
    t.collective[id] = f.kind == FunctionKind::collective || f.kind == FunctionKind::icollective ||
                       f.kind == FunctionKind::comm || f.kind == FunctionKind::env;
  }
  return t;
}

inline constexpr Table kTable = build();

}  // namespace facts

// Role of a function id; ids the table does not know are `fixed`.
inline Role role_of(uint16_t function) {
  return function < facts::kIdSlots ? facts::kTable.role[function] : Role::fixed;
}
// Whether the function's Record::request is a request it creates (Isend, Irecv, Send_init,
// Recv_init, the non-blocking collectives).
inline bool creates_request(uint16_t function) {
  return function < facts::kIdSlots && facts::kTable.creates[function];
}
// Whether every member of the call's communicator makes it, in the same order (collectives,
// Init/Finalize, communicator calls).
inline bool is_collective(uint16_t function) {
  return function < facts::kIdSlots && facts::kTable.collective[function];
}

}  // namespace pskel::merge::detail
