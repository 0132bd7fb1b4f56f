/* Call counting for the pskel test applications.
 *
 * Every call to a function pskel traces is written as
 *     CALL(MPI_Send, buf, n, MPI_DOUBLE, dest, tag, comm);
 * which adds one to that function's counter and then makes the call. Nothing here calls MPI:
 * counts_write() runs after MPI_Finalize, so the finalize itself is counted.
 *
 * counts_write(dir, rank) writes DIR/counts.RANK with one "MPI_Name count" line per function
 * called at least once, sorted by name (byte order, as `LC_ALL=C sort`).
 */
#ifndef PSKEL_TEST_APPS_COUNTS_H
#define PSKEL_TEST_APPS_COUNTS_H

#include <stdio.h>
#include <sys/stat.h>

/* The functions pskel traces, in byte order of their names: the one table of names. */
#define TRACED_FUNCTIONS(X)                                                                       \
    X(MPI_Allgather) X(MPI_Allgatherv) X(MPI_Allreduce) X(MPI_Alltoall) X(MPI_Alltoallv)         \
    X(MPI_Barrier) X(MPI_Bcast) X(MPI_Bsend) X(MPI_Cart_create) X(MPI_Cart_sub)                 \
    X(MPI_Comm_create) X(MPI_Comm_dup) X(MPI_Comm_free) X(MPI_Comm_split) X(MPI_Exscan)         \
    X(MPI_Finalize) X(MPI_Gather) X(MPI_Gatherv) X(MPI_Iallgather) X(MPI_Iallreduce)             \
    X(MPI_Ialltoall) X(MPI_Ibarrier) X(MPI_Ibcast) X(MPI_Init) X(MPI_Init_thread) X(MPI_Iprobe) \
    X(MPI_Irecv) X(MPI_Ireduce) X(MPI_Isend) X(MPI_Issend) X(MPI_Probe) X(MPI_Recv)             \
    X(MPI_Recv_init) X(MPI_Reduce) X(MPI_Reduce_scatter) X(MPI_Reduce_scatter_block)            \
    X(MPI_Request_free) X(MPI_Rsend) X(MPI_Scan) X(MPI_Scatter) X(MPI_Scatterv) X(MPI_Send)     \
    X(MPI_Send_init) X(MPI_Sendrecv) X(MPI_Sendrecv_replace) X(MPI_Ssend) X(MPI_Start)          \
    X(MPI_Startall) X(MPI_Test) X(MPI_Testall) X(MPI_Testany) X(MPI_Testsome) X(MPI_Wait)        \
    X(MPI_Waitall) X(MPI_Waitany) X(MPI_Waitsome)

enum traced_function {
#define COUNTS_ENUM(fn) COUNT_##fn,
    TRACED_FUNCTIONS(COUNTS_ENUM)
#undef COUNTS_ENUM
    COUNT_FUNCTIONS
};

static const char *const traced_names[COUNT_FUNCTIONS] = {
#define COUNTS_NAME(fn) #fn,
    TRACED_FUNCTIONS(COUNTS_NAME)
#undef COUNTS_NAME
};

static long call_counts[COUNT_FUNCTIONS];

/* Counts one call of fn, then makes it; the value is fn's return value. */
#define CALL(fn, ...) (++call_counts[COUNT_##fn], fn(__VA_ARGS__))

/* Writes DIR/counts.RANK (creating DIR if needed); returns 0, or 1 on an I/O error. */
static int counts_write(const char *dir, int rank)
{
    char path[4096];
    mkdir(dir, 0777); /* may exist already, or be made by another rank at the same time */
    snprintf(path, sizeof path, "%s/counts.%d", dir, rank);
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        return 1;
    }
    for (int i = 0; i < COUNT_FUNCTIONS; ++i)
        if (call_counts[i] > 0)
            fprintf(f, "%s %ld\n", traced_names[i], call_counts[i]);
    return fclose(f) == 0 ? 0 : 1;
}

#endif
