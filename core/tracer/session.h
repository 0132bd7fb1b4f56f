// Start and end of a process's tracing session, for the hand-written MPI_Init / MPI_Finalize
// wrappers (C in session.cpp, Fortran in session_fortran.cpp).
#pragma once

#include <cstdint>

#include "trace/functions.h"

namespace pskel::tracer {

int64_t monotonic_ns();
// Called right after PMPI_Init* succeeded; `init_entry_mono` is when the program called it.
// Collective over MPI_COMM_WORLD. Does nothing if a session exists.
void start_session(trace::FunctionId init_function, int64_t init_entry_mono);
// Called on entry to MPI_Finalize, before PMPI_Finalize. Collective. Idempotent.
void end_session();
// Writes what is buffered, without ending the file (a process exiting without Finalize).
void flush_unfinished_session();

}  // namespace pskel::tracer
