// Fortran MPI_INIT / MPI_INIT_THREAD / MPI_FINALIZE, for MPIs whose Fortran bindings call
// PMPI_* directly (Open MPI) and so would bypass the C wrappers of session.cpp.
#include <mpi.h>

#include "call.h"
#include "session.h"

extern "C" {

void pmpi_init_(MPI_Fint* ierr);
void pmpi_init_thread_(MPI_Fint* required, MPI_Fint* provided, MPI_Fint* ierr);
void pmpi_finalize_(MPI_Fint* ierr);

PSKEL_EXPORT void mpi_init_(MPI_Fint* ierr) {
  const int64_t entry = pskel::tracer::monotonic_ns();
  pmpi_init_(ierr);
  if (*ierr == MPI_SUCCESS) pskel::tracer::start_session(pskel::trace::FunctionId::MPI_Init, entry);
}

PSKEL_EXPORT void mpi_init_thread_(MPI_Fint* required, MPI_Fint* provided, MPI_Fint* ierr) {
  const int64_t entry = pskel::tracer::monotonic_ns();
  pmpi_init_thread_(required, provided, ierr);
  if (*ierr == MPI_SUCCESS)
    pskel::tracer::start_session(pskel::trace::FunctionId::MPI_Init_thread, entry);
}

PSKEL_EXPORT void mpi_finalize_(MPI_Fint* ierr) {
  pskel::tracer::end_session();
  pmpi_finalize_(ierr);
}

PSKEL_EXPORT void mpi_init__(MPI_Fint*) __attribute__((alias("mpi_init_")));
PSKEL_EXPORT void MPI_INIT(MPI_Fint*) __attribute__((alias("mpi_init_")));
PSKEL_EXPORT void mpi_init_thread__(MPI_Fint*, MPI_Fint*, MPI_Fint*) __attribute__((alias("mpi_init_thread_")));
PSKEL_EXPORT void MPI_INIT_THREAD(MPI_Fint*, MPI_Fint*, MPI_Fint*) __attribute__((alias("mpi_init_thread_")));
PSKEL_EXPORT void mpi_finalize__(MPI_Fint*) __attribute__((alias("mpi_finalize_")));
PSKEL_EXPORT void MPI_FINALIZE(MPI_Fint*) __attribute__((alias("mpi_finalize_")));

}  // extern "C"
