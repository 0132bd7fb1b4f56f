/* groups: four groups of ranks that talk only inside their group (the test of `pskel place`).
 *
 * -n SIZE  doubles per message (default 1000)
 *
 * Rank r belongs to group (r + r/4) % 4: ranks 0-3 are in groups 0,1,2,3, ranks 4-7 in
 * 1,2,3,0, ranks 8-11 in 2,3,0,1 and so on. Neither block placement (ranks 0-3 on one node)
 * nor cyclic placement (ranks 0,4,8,12 on one node) puts a group together, so a placement
 * that does had to find it. The members of a group, in rank order, form a ring.
 * Each iteration:
 *   MPI_Irecv from the previous and the next member, MPI_Isend to the next and the previous,
 *   MPI_Waitall on the four requests (a member alone in its group talks to itself), then the
 *   compute on x[0].
 * At the end MPI_Reduce sums every rank's weighted sum at rank 0: the only call that crosses
 * groups, and a collective.
 */
#include <mpi.h>
#include <stdlib.h>

#include "counts.h"
#include "common.h"

enum { GROUPS = 4 };

static int group_of(int rank)
{
    return (rank + rank / GROUPS) % GROUPS;
}

/* The member of rank's group that comes `step` (+1 or -1) places after it, round the ring. */
static int neighbour(int rank, int size, int step)
{
    int r = rank;
    do {
        r = (r + step + size) % size;
    } while (group_of(r) != group_of(rank));
    return r;
}

int main(int argc, char **argv)
{
    struct options o = {.name = "groups", .size_help = "doubles per message", .n = 1000};
    int rank, size;
    const int status = app_begin(&argc, &argv, &o, &rank, &size);
    if (status >= 0)
        return status;

    const int n = o.n, next = neighbour(rank, size, 1), previous = neighbour(rank, size, -1);
    const MPI_Comm comm = MPI_COMM_WORLD;
    double *x = malloc(n * sizeof *x), *from_previous = malloc(n * sizeof *x),
           *from_next = malloc(n * sizeof *x);
    for (int k = 0; k < n; ++k)
        x[k] = rank + 1e-3 * k;

    for (int it = 0; it < o.iters; ++it) {
        MPI_Request requests[4];
        MPI_Status statuses[4]; /* not MPI_STATUSES_IGNORE: gcc misreads MPICH's annotation */
        /* Tag 1 travels forward round the ring, tag 2 backward. */
        CALL(MPI_Irecv, from_previous, n, MPI_DOUBLE, previous, 1, comm, &requests[0]);
        CALL(MPI_Irecv, from_next, n, MPI_DOUBLE, next, 2, comm, &requests[1]);
        CALL(MPI_Isend, x, n, MPI_DOUBLE, next, 1, comm, &requests[2]);
        CALL(MPI_Isend, x, n, MPI_DOUBLE, previous, 2, comm, &requests[3]);
        CALL(MPI_Waitall, 4, requests, statuses);
        for (int k = 0; k < n; ++k)
            x[k] = 0.5 * x[k] + 0.25 * (from_previous[k] + from_next[k]);
        x[0] = burn(o.work, x[0]);
    }

    double local = 0.0, checksum = 0.0;
    for (int k = 0; k < n; ++k)
        local += (1 + k % 7) * x[k];
    local *= 1 + rank;
    CALL(MPI_Reduce, &local, &checksum, 1, MPI_DOUBLE, MPI_SUM, 0, comm);
    report(&o, rank, size, checksum);

    free(from_next);
    free(from_previous);
    free(x);
    return finish(&o, rank, 0);
}
