/* wavefront: pipelined forward and backward sweeps, like the SSOR solver of NPB LU.
 *
 * -n SIZE  rows and columns of each rank's strip (default 32)
 *
 * The ranks own consecutive horizontal strips of an (n*ranks) x n grid whose top and left edges
 * hold 1 and whose other edges hold 0. The columns are cut into 4 blocks (fewer if n < 4).
 * Each iteration:
 *   forward sweep, blocks left to right: MPI_Recv the row above the block from rank-1 (unless
 *     rank 0), update u = u/2 + (up + left)/4 from the top-left corner, MPI_Send the block's last
 *     row to rank+1 (unless the last rank);
 *   backward sweep, blocks right to left: the mirror image, from rank+1 to rank-1, updating
 *     u = u/2 + (down + right)/4 from the bottom-right corner;
 * then the compute, on the strip's centre. At the end MPI_Reduce sums the grid at rank 0.
 */
#include <mpi.h>
#include <stdlib.h>

#include "counts.h"
#include "common.h"

int main(int argc, char **argv)
{
    struct options o = {.name = "wavefront", .size_help = "rows and columns of each rank's strip",
                        .n = 32};
    int rank, size;
    const int status = app_begin(&argc, &argv, &o, &rank, &size);
    if (status >= 0)
        return status;

    const MPI_Comm comm = MPI_COMM_WORLD;
    const int up = rank > 0 ? rank - 1 : MPI_PROC_NULL;
    const int down = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;

    /* u: (n+2) x (n+2) with a halo of one; U(i, j) is row i, column j. Block b is the columns
     * lo(b) <= j < lo(b+1). */
    const int n = o.n, w = n + 2, c = (n + 1) / 2, blocks = n < 4 ? n : 4;
#define U(i, j) u[(i) * w + (j)]
#define LO(b) (1 + (b) * n / blocks)
    double *u = calloc(w * w, sizeof *u);
    for (int i = 0; i <= n + 1; ++i)
        U(i, 0) = 1.0;
    if (rank == 0)
        for (int j = 0; j <= n + 1; ++j)
            U(0, j) = 1.0;

    for (int it = 0; it < o.iters; ++it) {
        for (int b = 0; b < blocks; ++b) {
            const int lo = LO(b), hi = LO(b + 1);
            if (up != MPI_PROC_NULL)
                CALL(MPI_Recv, &U(0, lo), hi - lo, MPI_DOUBLE, up, 1, comm, MPI_STATUS_IGNORE);
            for (int i = 1; i <= n; ++i)
                for (int j = lo; j < hi; ++j)
                    U(i, j) = 0.5 * U(i, j) + 0.25 * (U(i - 1, j) + U(i, j - 1));
            if (down != MPI_PROC_NULL)
                CALL(MPI_Send, &U(n, lo), hi - lo, MPI_DOUBLE, down, 1, comm);
        }
        for (int b = blocks - 1; b >= 0; --b) {
            const int lo = LO(b), hi = LO(b + 1);
            if (down != MPI_PROC_NULL)
                CALL(MPI_Recv, &U(n + 1, lo), hi - lo, MPI_DOUBLE, down, 2, comm,
                     MPI_STATUS_IGNORE);
            for (int i = n; i >= 1; --i)
                for (int j = hi - 1; j >= lo; --j)
                    U(i, j) = 0.5 * U(i, j) + 0.25 * (U(i + 1, j) + U(i, j + 1));
            if (up != MPI_PROC_NULL)
                CALL(MPI_Send, &U(1, lo), hi - lo, MPI_DOUBLE, up, 2, comm);
        }
        U(c, c) = burn(o.work, U(c, c));
    }

    double local = 0.0, total = 0.0;
    for (int i = 1; i <= n; ++i)
        for (int j = 1; j <= n; ++j)
            local += U(i, j);
#undef LO
#undef U
    CALL(MPI_Reduce, &local, &total, 1, MPI_DOUBLE, MPI_SUM, 0, comm);
    report(&o, rank, size, total);

    free(u);
    return finish(&o, rank, 0);
}
