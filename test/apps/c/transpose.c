/* transpose: the all-to-all exchanges of a distributed FFT.
 *
 * -n SIZE  doubles each rank sends to each rank per MPI_Alltoall (default 64)
 *
 * Each rank holds ranks*n doubles, block d being meant for rank d. Each iteration:
 * MPI_Alltoall of the blocks (a transpose), a butterfly pass over each block received, and,
 * every other iteration (odd ones), an MPI_Alltoallv in which rank s sends rank d the first
 * f(s, d) = 1 + (s + 2d) mod n doubles of block d, mixed back into the blocks on arrival;
 * then the compute, on element 0. At the end MPI_Allgatherv collects the data of the last
 * MPI_Alltoallv (rank-dependent lengths; zeros if there was none) plus each rank's weighted
 * sum, and every rank sums it in the same order: that sum is the checksum.
 */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "counts.h"
#include "common.h"

/* Doubles rank s sends rank d in an MPI_Alltoallv. */
static int f(int s, int d, int n)
{
    return 1 + (s + 2 * d) % n;
}

int main(int argc, char **argv)
{
    struct options o = {.name = "transpose", .size_help = "doubles per rank pair in MPI_Alltoall",
                        .n = 64};
    int rank, size;
    const int status = app_begin(&argc, &argv, &o, &rank, &size);
    if (status >= 0)
        return status;

    const MPI_Comm comm = MPI_COMM_WORLD;
    const int n = o.n, len = n * size, half = n / 2;
    int *scounts = malloc(size * sizeof *scounts), *sdispls = malloc(size * sizeof *sdispls);
    int *rcounts = malloc(size * sizeof *rcounts), *rdispls = malloc(size * sizeof *rdispls);
    int rtotal = 0;
    for (int p = 0; p < size; ++p) {
        scounts[p] = f(rank, p, n);
        sdispls[p] = p * n; /* the start of block p */
        rcounts[p] = f(p, rank, n);
        rdispls[p] = rtotal;
        rtotal += rcounts[p];
    }

    double *a = malloc(len * sizeof *a), *b = malloc(len * sizeof *b);
    double *c = calloc(rtotal, sizeof *c);
    for (int k = 0; k < len; ++k)
        a[k] = rank + 1e-3 * k;

    for (int it = 0; it < o.iters; ++it) {
        CALL(MPI_Alltoall, a, n, MPI_DOUBLE, b, n, MPI_DOUBLE, comm);
        for (int p = 0; p < size; ++p) {
            double *blk = b + p * n;
            for (int k = 0; k < half; ++k) {
                const double t = blk[k + half] / (1 + k), s = blk[k];
                blk[k] = 0.5 * (s + t);
                blk[k + half] = 0.5 * (s - t);
            }
        }
        if (it % 2 == 1) {
            CALL(MPI_Alltoallv, b, scounts, sdispls, MPI_DOUBLE, c, rcounts, rdispls, MPI_DOUBLE,
                 comm);
            for (int p = 0; p < size; ++p)
                for (int k = 0; k < rcounts[p]; ++k)
                    b[p * n + k] = 0.5 * (b[p * n + k] + c[rdispls[p] + k]);
        }
        memcpy(a, b, len * sizeof *a);
        a[0] = burn(o.work, a[0]);
    }

    /* Everyone's last MPI_Alltoallv data, with each rank's weighted sum added to its first. */
    int *counts = malloc(size * sizeof *counts), *displs = malloc(size * sizeof *displs);
    int total = 0;
    for (int p = 0; p < size; ++p) {
        counts[p] = 0;
        for (int s = 0; s < size; ++s)
            counts[p] += f(s, p, n);
        displs[p] = total;
        total += counts[p];
    }
    for (int k = 0; k < len; ++k)
        c[0] += (1 + k % 7) * a[k];
    double *all = malloc(total * sizeof *all);
    CALL(MPI_Allgatherv, c, rtotal, MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, comm);
    double checksum = 0.0;
    for (int k = 0; k < total; ++k)
        checksum += (1 + k % 5) * all[k];
    report(&o, rank, size, checksum);

    free(all);
    free(displs);
    free(counts);
    free(c);
    free(b);
    free(a);
    free(rdispls);
    free(rcounts);
    free(sdispls);
    free(scounts);
    return finish(&o, rank, 0);
}
