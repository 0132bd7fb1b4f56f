/* The counter runtime of programs rewritten by `pskel instrument` (docs/model.md): each
 * rewritten file holds a table of counters (loop bodies, branches, MPI calls and bytes by
 * source location) and registers it at load; with PSKEL_COUNTERS=DIR set, each rank writes
 * DIR/rank.N.json just before MPI_Finalize (or at exit, when MPI_Finalize is called from a file
 * that was not rewritten, with the rank the launcher exported). The runtime makes no MPI call: the rewritten code
 * passes the rank and task count, so one library serves every MPI. Counting is not atomic:
 * counters of loops run by several threads at once may come out low. */
#ifndef PSKEL_COUNTERS_H
#define PSKEL_COUNTERS_H

#ifdef __cplusplus
extern "C" {
#endif

struct pskel_counter {
  unsigned long long count;
  const char* key; /* "file:line:kind" */
};

/* Adds a file's table (from its constructor); the table lives as long as the program. */
void pskel_counters_register(struct pskel_counter* table, unsigned count);
/* Around MPI_Init or MPI_Init_thread, given its result (returned as it is): the start of the
 * timed run is the end of MPI_Init, as in traces (MPI_Init's own time varies by a tenth of a
 * second from run to run, noise that short training runs cannot afford). */
int pskel_counters_start_after(int mpi_init_result);
/* Just before MPI_Finalize: writes this rank's file if PSKEL_COUNTERS is set. */
void pskel_counters_finish(int rank, int ntasks);

#ifdef __cplusplus
}
#endif

/* Scratch of the rewritten MPI calls (a datatype's size, the rank and task count at
 * MPI_Finalize), one set per translation unit. */
static int pskel_type_size_ __attribute__((unused));
static int pskel_rank_ __attribute__((unused));
static int pskel_size_ __attribute__((unused));

#endif
