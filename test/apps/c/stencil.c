/* stencil: Jacobi iteration of a 2-D heat problem with halo exchange on a process grid.
 *
 * -n SIZE  side of each rank's square block (default 32)
 *
 * MPI_Dims_create arranges the ranks in a py x px grid; the global domain has the value 1 on its
 * top edge and 0 on the other edges. Each iteration exchanges the four halos with the north,
 * south, west and east neighbours (MPI_PROC_NULL at the domain's edges: those calls are made
 * and counted too): four MPI_Irecv, MPI_Isend north and south, MPI_Issend west and east,
 * MPI_Waitany four times to unpack each halo as it arrives, MPI_Waitall on the sends. Then the
 * Jacobi update, the compute (a heat source at the block's centre), and MPI_Allreduce of the
 * squared update (the residual). At the end MPI_Reduce sums the field at rank 0; the checksum
 * is that sum plus the last residual.
 */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "counts.h"
#include "common.h"

enum { NORTH, SOUTH, WEST, EAST };

int main(int argc, char **argv)
{
    struct options o = {.name = "stencil", .size_help = "side of each rank's square block",
                        .n = 32};
    int rank, size;
    const int status = app_begin(&argc, &argv, &o, &rank, &size);
    if (status >= 0)
        return status;

    const MPI_Comm comm = MPI_COMM_WORLD;
    int dims[2] = {0, 0};
    MPI_Dims_create(size, 2, dims);
    const int py = dims[0], px = dims[1], row = rank / px, col = rank % px;
    const int nbr[4] = {
        [NORTH] = row > 0 ? rank - px : MPI_PROC_NULL,
        [SOUTH] = row < py - 1 ? rank + px : MPI_PROC_NULL,
        [WEST] = col > 0 ? rank - 1 : MPI_PROC_NULL,
        [EAST] = col < px - 1 ? rank + 1 : MPI_PROC_NULL,
    };

    /* u and v: (n+2) x (n+2) with a halo of one; U(a, i, j) is row i, column j. */
    const int n = o.n, w = n + 2, c = (n + 1) / 2;
#define U(a, i, j) a[(i) * w + (j)]
    double *u = calloc(w * w, sizeof *u), *v = calloc(w * w, sizeof *v);
    double *sendbuf = malloc(4 * n * sizeof *sendbuf), *recvbuf = malloc(4 * n * sizeof *recvbuf);
    if (row == 0)
        for (int j = 1; j <= n; ++j)
            U(u, 0, j) = 1.0;

    double residual = 0.0;
    for (int it = 0; it < o.iters; ++it) {
        for (int k = 0; k < n; ++k) {
            sendbuf[NORTH * n + k] = U(u, 1, k + 1);
            sendbuf[SOUTH * n + k] = U(u, n, k + 1);
            sendbuf[WEST * n + k] = U(u, k + 1, 1);
            sendbuf[EAST * n + k] = U(u, k + 1, n);
        }
        MPI_Request rreq[4], sreq[4];
        MPI_Status statuses[4]; /* not MPI_STATUSES_IGNORE: GCC 12 misreads MPICH's */
        for (int d = 0; d < 4; ++d)
            CALL(MPI_Irecv, recvbuf + d * n, n, MPI_DOUBLE, nbr[d], 0, comm, &rreq[d]);
        for (int d = NORTH; d <= SOUTH; ++d)
            CALL(MPI_Isend, sendbuf + d * n, n, MPI_DOUBLE, nbr[d], 0, comm, &sreq[d]);
        for (int d = WEST; d <= EAST; ++d)
            CALL(MPI_Issend, sendbuf + d * n, n, MPI_DOUBLE, nbr[d], 0, comm, &sreq[d]);
        for (int done = 0; done < 4; ++done) {
            int d;
            CALL(MPI_Waitany, 4, rreq, &d, MPI_STATUS_IGNORE);
            if (nbr[d] == MPI_PROC_NULL)
                continue; /* keep the boundary value */
            const double *h = recvbuf + d * n;
            for (int k = 0; k < n; ++k) {
                if (d == NORTH)
                    U(u, 0, k + 1) = h[k];
                else if (d == SOUTH)
                    U(u, n + 1, k + 1) = h[k];
                else if (d == WEST)
                    U(u, k + 1, 0) = h[k];
                else
                    U(u, k + 1, n + 1) = h[k];
            }
        }
        CALL(MPI_Waitall, 4, sreq, statuses);

        double local = 0.0;
        for (int i = 1; i <= n; ++i)
            for (int j = 1; j <= n; ++j) {
                U(v, i, j) = 0.25 * (U(u, i - 1, j) + U(u, i + 1, j) + U(u, i, j - 1) +
                                     U(u, i, j + 1));
                double d = U(v, i, j) - U(u, i, j);
                local += d * d;
            }
        for (int i = 1; i <= n; ++i)
            memcpy(&U(u, i, 1), &U(v, i, 1), n * sizeof *u);
        U(u, c, c) = burn(o.work, U(u, c, c));
        CALL(MPI_Allreduce, &local, &residual, 1, MPI_DOUBLE, MPI_SUM, comm);
    }

    double local = 0.0, total = 0.0;
    for (int i = 1; i <= n; ++i)
        for (int j = 1; j <= n; ++j)
            local += U(u, i, j);
#undef U
    CALL(MPI_Reduce, &local, &total, 1, MPI_DOUBLE, MPI_SUM, 0, comm);
    report(&o, rank, size, total + residual);

    free(recvbuf);
    free(sendbuf);
    free(v);
    free(u);
    return finish(&o, rank, 0);
}
