/* ring: a vector travels around a ring of ranks in every point-to-point send mode.
 *
 * -n SIZE  doubles per message (default 1000)
 *
 * Each iteration shifts the local vector one rank to the right five times and mixes what
 * arrives into it, x = (x + received) / 2:
 *   1. MPI_Send, MPI_Recv   even ranks send first, odd ranks receive first: no deadlock
 *   2. MPI_Ssend, MPI_Recv  the same order
 *   3. MPI_Sendrecv_replace
 *   4. MPI_Irecv, MPI_Barrier, MPI_Rsend, MPI_Wait: every receive is posted before the barrier,
 *      so the ready send is legal
 *   5. MPI_Bsend, MPI_Recv  through a buffer given to MPI_Buffer_attach
 * then does its compute on x[0]. At the end MPI_Gather brings every rank's weighted sum to
 * rank 0.
 * With one rank, passes 1 and 2 (blocking sends to itself) are skipped.
 */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "counts.h"
#include "common.h"

static void mix(double *x, const double *received, int n)
{
    for (int k = 0; k < n; ++k)
        x[k] = 0.5 * (x[k] + received[k]);
}

int main(int argc, char **argv)
{
    struct options o = {.name = "ring", .size_help = "doubles per message", .n = 1000};
    int rank, size;
    const int status = app_begin(&argc, &argv, &o, &rank, &size);
    if (status >= 0)
        return status;

    const int n = o.n, right = (rank + 1) % size, left = (rank - 1 + size) % size;
    const MPI_Comm comm = MPI_COMM_WORLD;
    double *x = malloc(n * sizeof *x), *r = malloc(n * sizeof *r);
    for (int k = 0; k < n; ++k)
        x[k] = rank + 1e-3 * k;

    int bsize = 2 * (n * (int)sizeof(double) + MPI_BSEND_OVERHEAD);
    char *bbuf = malloc(bsize);
    MPI_Buffer_attach(bbuf, bsize);

    for (int it = 0; it < o.iters; ++it) {
        if (size > 1) {
            /* 1. standard mode */
            if (rank % 2 == 0) {
                CALL(MPI_Send, x, n, MPI_DOUBLE, right, 1, comm);
                CALL(MPI_Recv, r, n, MPI_DOUBLE, left, 1, comm, MPI_STATUS_IGNORE);
            } else {
                CALL(MPI_Recv, r, n, MPI_DOUBLE, left, 1, comm, MPI_STATUS_IGNORE);
                CALL(MPI_Send, x, n, MPI_DOUBLE, right, 1, comm);
            }
            mix(x, r, n);

            /* 2. synchronous mode */
            if (rank % 2 == 0) {
                CALL(MPI_Ssend, x, n, MPI_DOUBLE, right, 2, comm);
                CALL(MPI_Recv, r, n, MPI_DOUBLE, left, 2, comm, MPI_STATUS_IGNORE);
            } else {
                CALL(MPI_Recv, r, n, MPI_DOUBLE, left, 2, comm, MPI_STATUS_IGNORE);
                CALL(MPI_Ssend, x, n, MPI_DOUBLE, right, 2, comm);
            }
            mix(x, r, n);
        }

        /* 3. in place */
        memcpy(r, x, n * sizeof *r);
        CALL(MPI_Sendrecv_replace, r, n, MPI_DOUBLE, right, 3, left, 3, comm, MPI_STATUS_IGNORE);
        mix(x, r, n);

        /* 4. ready mode */
        MPI_Request req;
        CALL(MPI_Irecv, r, n, MPI_DOUBLE, left, 4, comm, &req);
        CALL(MPI_Barrier, comm);
        CALL(MPI_Rsend, x, n, MPI_DOUBLE, right, 4, comm);
        CALL(MPI_Wait, &req, MPI_STATUS_IGNORE);
        mix(x, r, n);

        /* 5. buffered mode */
        CALL(MPI_Bsend, x, n, MPI_DOUBLE, right, 5, comm);
        CALL(MPI_Recv, r, n, MPI_DOUBLE, left, 5, comm, MPI_STATUS_IGNORE);
        mix(x, r, n);

        x[0] = burn(o.work, x[0]);
    }

    void *detached;
    MPI_Buffer_detach(&detached, &bsize);

    /* Weighted sums, so that data in the wrong place changes the checksum. */
    double local = 0.0, *sums = malloc(size * sizeof *sums);
    for (int k = 0; k < n; ++k)
        local += (1 + k % 7) * x[k];
    CALL(MPI_Gather, &local, 1, MPI_DOUBLE, sums, 1, MPI_DOUBLE, 0, comm);
    double checksum = 0.0;
    if (rank == 0)
        for (int p = 0; p < size; ++p)
            checksum += (p + 1) * sums[p];
    report(&o, rank, size, checksum);

    free(sums);
    free(bbuf);
    free(r);
    free(x);
    return finish(&o, rank, 0);
}
