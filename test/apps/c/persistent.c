/* persistent: persistent point-to-point requests, non-blocking collectives and the scans.
 *
 * -n SIZE  doubles per message (default 100)
 *
 * Starts with MPI_Init_thread(MPI_THREAD_FUNNELED). Four persistent requests are made once:
 * MPI_Send_init/MPI_Recv_init of x to the right and from the left neighbour in a ring, and the
 * same to the left and from the right. Each iteration:
 *   MPI_Startall of the rightward pair, MPI_Start of each leftward request, MPI_Waitall of all
 *   four, and x = x/2 + (from left + from right)/4;
 *   MPI_Iallreduce of sum(x), completed by MPI_Wait;
 *   MPI_Ibcast of x from rank it%size: one MPI_Test, then MPI_Wait;
 *   MPI_Ireduce of x to rank (it+1)%size, MPI_Ibarrier, MPI_Ialltoall of one double per rank and
 *   MPI_Iallgather of sum(x): one MPI_Testany, one MPI_Testsome, one MPI_Testall, then one
 *   MPI_Waitsome and MPI_Waitall;
 *   the results are mixed into x, then the compute on x[0].
 * At the end MPI_Request_free of the four requests; MPI_Scan, MPI_Exscan,
 * MPI_Reduce_scatter_block (one double per rank) and MPI_Reduce_scatter (1 + p%2 doubles to
 * rank p) of values made from x, once; MPI_Reduce of a weighted sum of x and of their results.
 * Each test polls once, as a program would between two phases of compute, and every call is
 * made whatever the earlier ones found (a request they completed is MPI_REQUEST_NULL, which the
 * later ones pass over), so every count is the same from run to run. Polling until done would
 * make the number of tests depend on timing, millions on an oversubscribed machine.
 */
#include <mpi.h>
#include <stdlib.h>

#include "counts.h"
#include "common.h"

int main(int argc, char **argv)
{
    struct options o = {.name = "persistent", .size_help = "doubles per message",
                        .n = 100, .funneled = 1};
    int rank, size;
    const int status = app_begin(&argc, &argv, &o, &rank, &size);
    if (status >= 0)
        return status;

    const MPI_Comm comm = MPI_COMM_WORLD;
    const int n = o.n, right = (rank + 1) % size, left = (rank - 1 + size) % size;
    double *x = malloc(n * sizeof *x), *out = malloc(n * sizeof *out);
    double *from_left = malloc(n * sizeof *from_left), *from_right = malloc(n * sizeof *from_right);
    double *bc = malloc(n * sizeof *bc), *red = malloc(n * sizeof *red);
    double *a2a_out = malloc(size * sizeof *a2a_out), *a2a_in = malloc(size * sizeof *a2a_in);
    double *sums = malloc(size * sizeof *sums), *rs_in = malloc(2 * size * sizeof *rs_in);
    int *rs_counts = malloc(size * sizeof *rs_counts);
    for (int p = 0; p < size; ++p)
        rs_counts[p] = 1 + p % 2;
    for (int k = 0; k < n; ++k)
        x[k] = rank + 1e-3 * k;

    /* p2p[0..1]: the rightward pair, p2p[2..3]: the leftward pair */
    MPI_Request p2p[4];
    MPI_Status statuses[4]; /* not MPI_STATUSES_IGNORE: GCC 12 misreads MPICH's */
    CALL(MPI_Recv_init, from_left, n, MPI_DOUBLE, left, 1, comm, &p2p[0]);
    CALL(MPI_Send_init, out, n, MPI_DOUBLE, right, 1, comm, &p2p[1]);
    CALL(MPI_Recv_init, from_right, n, MPI_DOUBLE, right, 2, comm, &p2p[2]);
    CALL(MPI_Send_init, out, n, MPI_DOUBLE, left, 2, comm, &p2p[3]);

    for (int it = 0; it < o.iters; ++it) {
        for (int k = 0; k < n; ++k)
            out[k] = x[k];
        CALL(MPI_Startall, 2, p2p);
        CALL(MPI_Start, &p2p[2]);
        CALL(MPI_Start, &p2p[3]);
        CALL(MPI_Waitall, 4, p2p, statuses);
        for (int k = 0; k < n; ++k)
            x[k] = 0.5 * x[k] + 0.25 * (from_left[k] + from_right[k]);

        MPI_Request req, coll[4];
        int flag, index, outcount, done[4];
        double local = add_up(x, n), global;
        CALL(MPI_Iallreduce, &local, &global, 1, MPI_DOUBLE, MPI_SUM, comm, &req);
        CALL(MPI_Wait, &req, MPI_STATUS_IGNORE);

        const int bcast_root = it % size, reduce_root = (it + 1) % size;
        for (int k = 0; k < n; ++k)
            bc[k] = x[k];
        CALL(MPI_Ibcast, bc, n, MPI_DOUBLE, bcast_root, comm, &req);
        CALL(MPI_Test, &req, &flag, MPI_STATUS_IGNORE);
        CALL(MPI_Wait, &req, MPI_STATUS_IGNORE);

        for (int p = 0; p < size; ++p)
            a2a_out[p] = x[p % n] + p;
        CALL(MPI_Ireduce, x, red, n, MPI_DOUBLE, MPI_SUM, reduce_root, comm, &coll[0]);
        CALL(MPI_Ibarrier, comm, &coll[1]);
        CALL(MPI_Ialltoall, a2a_out, 1, MPI_DOUBLE, a2a_in, 1, MPI_DOUBLE, comm, &coll[2]);
        CALL(MPI_Iallgather, &local, 1, MPI_DOUBLE, sums, 1, MPI_DOUBLE, comm, &coll[3]);
        CALL(MPI_Testany, 4, coll, &index, &flag, MPI_STATUS_IGNORE);
        CALL(MPI_Testsome, 4, coll, &outcount, done, statuses);
        CALL(MPI_Testall, 4, coll, &flag, statuses);
        CALL(MPI_Waitsome, 4, coll, &outcount, done, statuses);
        CALL(MPI_Waitall, 4, coll, statuses);

        /* Mix everything in, scaled to stay near the values of x. */
        double mixed = global + add_up(sums, size);
        for (int p = 0; p < size; ++p)
            mixed += a2a_in[p];
        if (rank == reduce_root)
            mixed += red[n - 1];
        for (int k = 0; k < n; ++k)
            x[k] = 0.5 * x[k] + 0.5 * bc[k];
        x[n - 1] = 0.5 * x[n - 1] + 0.5 * mixed / (2 * size * n + 2 * size);
        x[0] = burn(o.work, x[0]);
    }

    for (int r = 0; r < 4; ++r)
        CALL(MPI_Request_free, &p2p[r]);

    double local = add_up(x, n), prefix, exprefix = 0.0, block, pair[2] = {0.0, 0.0};
    for (int p = 0; p < 2 * size; ++p)
        rs_in[p] = x[p % n];
    CALL(MPI_Scan, &local, &prefix, 1, MPI_DOUBLE, MPI_SUM, comm);
    CALL(MPI_Exscan, &local, &exprefix, 1, MPI_DOUBLE, MPI_SUM, comm);
    if (rank == 0)
        exprefix = 0.0; /* MPI_Exscan leaves rank 0's result undefined */
    CALL(MPI_Reduce_scatter_block, rs_in, &block, 1, MPI_DOUBLE, MPI_SUM, comm);
    CALL(MPI_Reduce_scatter, rs_in, pair, rs_counts, MPI_DOUBLE, MPI_SUM, comm);

    double weighted = 1e-3 * ((prefix - exprefix) + block + pair[0] + pair[1]), checksum = 0.0;
    for (int k = 0; k < n; ++k)
        weighted += (1 + k % 7) * x[k];
    CALL(MPI_Reduce, &weighted, &checksum, 1, MPI_DOUBLE, MPI_SUM, 0, comm);
    report(&o, rank, size, checksum);

    free(rs_counts);
    free(rs_in);
    free(sums);
    free(a2a_in);
    free(a2a_out);
    free(red);
    free(bc);
    free(from_right);
    free(from_left);
    free(out);
    free(x);
    return finish(&o, rank, 0);
}
