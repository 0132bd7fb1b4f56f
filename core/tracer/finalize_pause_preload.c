/* libpskel-finalize-pause.so: MPI_Finalize preceded by the pause of finalize_pause.h, and
 * nothing else (no tracing). For untraced MPICH 4.0.x jobs that span nodes, which can hang in
 * MPI_Finalize (docs/cluster.md): LD_PRELOAD it. MPICH's Fortran bindings call the C
 * MPI_Finalize, so this one wrapper covers both languages. */
#define _POSIX_C_SOURCE 200809L /* gethostname, nanosleep */
#include "finalize_pause.h"

__attribute__((visibility("default"))) int MPI_Finalize(void)
{
    pskel_finalize_pause();
    return PMPI_Finalize();
}
