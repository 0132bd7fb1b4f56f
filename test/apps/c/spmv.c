/* spmv: conjugate gradients on a large sparse matrix in CSR form, the 27-point Laplacian of a
 * 3-D grid (NPB CG-like, but the matrix is big: the mat-vec streams it from memory).
 *
 * -n SIZE  side of each rank's cube of grid points (default 16): SIZE^3 rows per rank, about
 *          370*SIZE^3 bytes per rank (16: 1.5 MB, 90: 270 MB, 120: 640 MB)
 *
 * The global grid is SIZE x SIZE x (SIZE*ranks), cut along z into slabs of SIZE planes, one per
 * rank. One row per grid point: 26.5 on the diagonal, -1 for each of its (up to 26) neighbours
 * inside the grid, stored as CSR (values, column indices into the rank's vector between its two
 * halo planes, row offsets). Solves A x = b, b = 1 + 0.1*(global row mod 10), for a fixed
 * number of iterations (no convergence test, so the calls do not depend on the data); should
 * r.r fall below 1e-24 of its first value, CG starts again from r = p = b, x kept (no calls).
 * Each iteration:
 *   halo exchange of p: its first and last plane (SIZE*SIZE doubles) with the ranks below and
 *     above: two MPI_Irecv, two MPI_Isend, MPI_Waitall (MPI_PROC_NULL at the ends of the
 *     domain: those calls are made and counted too);
 *   q = A p, reading all of the matrix, with p.q; MPI_Allreduce of p.q;
 *   x += alpha p, r -= alpha q, with r.r; the compute on x[0]; MPI_Allreduce of r.r;
 *   p = r + beta p.
 * One MPI_Allreduce of r.r before the loop; at the end MPI_Reduce of sum(x) at rank 0: the
 * checksum.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>

#include "counts.h"
#include "common.h"

int main(int argc, char **argv)
{
    struct options o = {.name = "spmv", .size_help = "side of each rank's cube of grid points",
                        .n = 16};
    int rank, size;
    const int status = app_begin(&argc, &argv, &o, &rank, &size);
    if (status >= 0)
        return status;
    const int n = o.n;
    if (n > 1000) { /* column indices are ints; 1000 is 370 GB per rank anyway */
        if (rank == 0)
            fprintf(stderr, "spmv: -n %d is too large (at most 1000)\n", n);
        return finish(&o, rank, 2);
    }

    const MPI_Comm comm = MPI_COMM_WORLD;
    const int below = rank > 0 ? rank - 1 : MPI_PROC_NULL;
    const int above = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;
    const long plane = (long)n * n, rows = plane * n, depth = (long)n * size;

    /* The matrix: row i is grid point (x, y, z) = (i % n, i / n % n, i / plane) of this slab;
     * its columns index p, which holds the plane below, the slab, then the plane above. */
    int64_t *start = app_calloc(rows + 1, sizeof *start);
    int *col = app_calloc(27 * rows, sizeof *col);
    double *val = app_calloc(27 * rows, sizeof *val);
    int64_t nnz = 0;
    for (long i = 0; i < rows; ++i) {
        const long x = i % n, y = i / n % n, z = i / plane, gz = rank * (long)n + z;
        start[i] = nnz;
        for (int dz = -1; dz <= 1; ++dz)
            for (int dy = -1; dy <= 1; ++dy)
                for (int dx = -1; dx <= 1; ++dx) {
                    if (x + dx < 0 || x + dx >= n || y + dy < 0 || y + dy >= n ||
                        gz + dz < 0 || gz + dz >= depth)
                        continue; /* outside the grid: the boundary value 0 */
                    col[nnz] = (int)((z + dz + 1) * plane + (y + dy) * n + x + dx);
                    val[nnz] = dx == 0 && dy == 0 && dz == 0 ? 26.5 : -1.0;
                    ++nnz;
                }
    }
    start[rows] = nnz;

    double *b = app_calloc(rows, sizeof *b), *x = app_calloc(rows, sizeof *x),
           *r = app_calloc(rows, sizeof *r), *q = app_calloc(rows, sizeof *q),
           *pfull = app_calloc(rows + 2 * plane, sizeof *pfull);
    double *p = pfull + plane; /* the slab's part of p */
    for (long i = 0; i < rows; ++i) {
        b[i] = 1.0 + 0.1 * ((rank * rows + i) % 10);
        r[i] = p[i] = b[i];
    }

    double rr0, local = 0.0;
    for (long i = 0; i < rows; ++i)
        local += r[i] * r[i];
    CALL(MPI_Allreduce, &local, &rr0, 1, MPI_DOUBLE, MPI_SUM, comm);
    double rr = rr0;
    for (int it = 0; it < o.iters; ++it) {
        MPI_Request requests[4];
        MPI_Status statuses[4]; /* not MPI_STATUSES_IGNORE: gcc misreads MPICH's annotation */
        CALL(MPI_Irecv, pfull, (int)plane, MPI_DOUBLE, below, 1, comm, &requests[0]);
        CALL(MPI_Irecv, p + rows, (int)plane, MPI_DOUBLE, above, 2, comm, &requests[1]);
        CALL(MPI_Isend, p + rows - plane, (int)plane, MPI_DOUBLE, above, 1, comm, &requests[2]);
        CALL(MPI_Isend, p, (int)plane, MPI_DOUBLE, below, 2, comm, &requests[3]);
        CALL(MPI_Waitall, 4, requests, statuses);

        double pq;
        local = 0.0;
        for (long i = 0; i < rows; ++i) {
            double s = 0.0;
            for (int64_t k = start[i]; k < start[i + 1]; ++k)
                s += val[k] * pfull[col[k]];
            q[i] = s;
            local += p[i] * s;
        }
        CALL(MPI_Allreduce, &local, &pq, 1, MPI_DOUBLE, MPI_SUM, comm);
        const double alpha = pq > 0.0 ? rr / pq : 0.0;
        local = 0.0;
        for (long i = 0; i < rows; ++i) {
            x[i] += alpha * p[i];
            r[i] -= alpha * q[i];
            local += r[i] * r[i];
        }
        x[0] = burn(o.work, x[0]);

        double rr_new;
        CALL(MPI_Allreduce, &local, &rr_new, 1, MPI_DOUBLE, MPI_SUM, comm);
        if (rr_new < 1e-24 * rr0) { /* converged: again from r = p = b */
            for (long i = 0; i < rows; ++i)
                r[i] = p[i] = b[i];
            rr = rr0;
            continue;
        }
        const double beta = rr_new / rr;
        rr = rr_new;
        for (long i = 0; i < rows; ++i)
            p[i] = r[i] + beta * p[i];
    }

    double sum = 0.0, checksum = 0.0;
    for (long i = 0; i < rows; ++i)
        sum += x[i];
    CALL(MPI_Reduce, &sum, &checksum, 1, MPI_DOUBLE, MPI_SUM, 0, comm);
    report(&o, rank, size, checksum);

    free(pfull);
    free(q);
    free(r);
    free(x);
    free(b);
    free(val);
    free(col);
    free(start);
    return finish(&o, rank, 0);
}
