/* cg: conjugate gradients on a 1-D Laplacian distributed in blocks over the ranks.
 *
 * -n SIZE  vector elements per rank (default 1000)
 *
 * Solves A x = b, A = tridiag(-1, 2.1, -1) of order n*ranks, for a fixed number of iterations
 * (no convergence test, so the calls do not depend on the data). Rank 0 makes b and hands out
 * the blocks with MPI_Scatter. Each iteration: two MPI_Sendrecv to get the neighbours' edge
 * values of p (MPI_PROC_NULL at the ends of the domain), q = A p, and two MPI_Allreduce for the
 * dot products p.q and r.r; the compute works on x[0]. One more MPI_Allreduce before the loop
 * and an MPI_Reduce of sum(x) at the end, which is the checksum.
 */
#include <mpi.h>
#include <stdlib.h>

#include "counts.h"
#include "common.h"

static double dot(const double *a, const double *b, int n)
{
    double s = 0.0;
    for (int k = 0; k < n; ++k)
        s += a[k] * b[k];
    return s;
}

int main(int argc, char **argv)
{
    struct options o = {.name = "cg", .size_help = "vector elements per rank", .n = 1000};
    int rank, size;
    const int status = app_begin(&argc, &argv, &o, &rank, &size);
    if (status >= 0)
        return status;

    const MPI_Comm comm = MPI_COMM_WORLD;
    const int n = o.n;
    const int left = rank > 0 ? rank - 1 : MPI_PROC_NULL;
    const int right = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;

    double *b = NULL;
    if (rank == 0) {
        b = malloc((size_t)n * size * sizeof *b);
        for (int k = 0; k < n * size; ++k)
            b[k] = 1.0 + 0.1 * (k % 10);
    }
    double *x = calloc(n, sizeof *x), *r = malloc(n * sizeof *r), *p = malloc(n * sizeof *p),
           *q = malloc(n * sizeof *q);
    CALL(MPI_Scatter, b, n, MPI_DOUBLE, r, n, MPI_DOUBLE, 0, comm);
    for (int k = 0; k < n; ++k)
        p[k] = r[k];

    double rr, local = dot(r, r, n);
    CALL(MPI_Allreduce, &local, &rr, 1, MPI_DOUBLE, MPI_SUM, comm);
    for (int it = 0; it < o.iters; ++it) {
        /* p's neighbours beyond the block: 0 at the ends of the domain */
        double pleft = 0.0, pright = 0.0;
        CALL(MPI_Sendrecv, &p[n - 1], 1, MPI_DOUBLE, right, 1, &pleft, 1, MPI_DOUBLE, left, 1,
             comm, MPI_STATUS_IGNORE);
        CALL(MPI_Sendrecv, &p[0], 1, MPI_DOUBLE, left, 2, &pright, 1, MPI_DOUBLE, right, 2, comm,
             MPI_STATUS_IGNORE);
        for (int k = 0; k < n; ++k)
            q[k] = 2.1 * p[k] - (k > 0 ? p[k - 1] : pleft) - (k < n - 1 ? p[k + 1] : pright);

        double pq;
        local = dot(p, q, n);
        CALL(MPI_Allreduce, &local, &pq, 1, MPI_DOUBLE, MPI_SUM, comm);
        const double alpha = pq > 0.0 ? rr / pq : 0.0;
        for (int k = 0; k < n; ++k) {
            x[k] += alpha * p[k];
            r[k] -= alpha * q[k];
        }
        x[0] = burn(o.work, x[0]);

        double rr_new;
        local = dot(r, r, n);
        CALL(MPI_Allreduce, &local, &rr_new, 1, MPI_DOUBLE, MPI_SUM, comm);
        const double beta = rr > 0.0 ? rr_new / rr : 0.0;
        rr = rr_new;
        for (int k = 0; k < n; ++k)
            p[k] = r[k] + beta * p[k];
    }

    double sum = 0.0, checksum = 0.0;
    for (int k = 0; k < n; ++k)
        sum += x[k];
    CALL(MPI_Reduce, &sum, &checksum, 1, MPI_DOUBLE, MPI_SUM, 0, comm);
    report(&o, rank, size, checksum);

    free(q);
    free(p);
    free(r);
    free(x);
    free(b);
    return finish(&o, rank, 0);
}
