/* subcomm: collectives on the rows and columns of a process grid, as in 2-D decomposed linear
 * algebra (SUMMA, ScaLAPACK).
 *
 * -n SIZE  elements per rank: rank r holds n + r%3 (default 100)
 *
 * Setup: MPI_Dims_create makes a py x px grid, rank r at row r/px and column r%px.
 *   MPI_Comm_split twice gives the row and the column communicators; MPI_Cart_create (without
 *   reordering) and MPI_Cart_sub give the rows a second time; MPI_Comm_dup copies
 *   MPI_COMM_WORLD for the data distribution; MPI_Comm_create (of a group made with
 *   MPI_Comm_group and MPI_Group_incl) gives a communicator of the even ranks. Rank 0 hands out
 *   the data with MPI_Scatterv on the copy.
 * Each iteration: MPI_Bcast of the first element of the row's first rank over the row (split),
 *   MPI_Reduce of the local sums to the column's first rank over the column (split),
 *   MPI_Allgather of the local sums over the row (Cart_sub); each is mixed into the data; then
 *   the compute, on element 0.
 * End: MPI_Barrier on the even ranks, MPI_Gatherv of all data to rank 0 on the copy (the
 *   checksum is its weighted sum), MPI_Comm_free of every communicator made.
 */
#include <mpi.h>
#include <stdlib.h>

#include "counts.h"
#include "common.h"

int main(int argc, char **argv)
{
    struct options o = {.name = "subcomm", .size_help = "elements per rank (plus rank%3)",
                        .n = 100};
    int rank, size;
    const int status = app_begin(&argc, &argv, &o, &rank, &size);
    if (status >= 0)
        return status;

    int dims[2] = {0, 0}, periods[2] = {0, 0}, keep_columns[2] = {0, 1};
    MPI_Dims_create(size, 2, dims);
    const int py = dims[0], px = dims[1], row = rank / px, col = rank % px;

    MPI_Comm rowcomm, colcomm, cart, cartrow, world, evens;
    CALL(MPI_Comm_split, MPI_COMM_WORLD, row, col, &rowcomm);
    CALL(MPI_Comm_split, MPI_COMM_WORLD, col, row, &colcomm);
    CALL(MPI_Cart_create, MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
    CALL(MPI_Cart_sub, cart, keep_columns, &cartrow);
    CALL(MPI_Comm_dup, MPI_COMM_WORLD, &world);

    MPI_Group all, even;
    int *members = malloc(size * sizeof *members), neven = 0;
    for (int p = 0; p < size; p += 2)
        members[neven++] = p;
    MPI_Comm_group(MPI_COMM_WORLD, &all);
    MPI_Group_incl(all, neven, members, &even);
    CALL(MPI_Comm_create, MPI_COMM_WORLD, even, &evens); /* MPI_COMM_NULL on odd ranks */
    MPI_Group_free(&even);
    MPI_Group_free(&all);

    /* Rank 0 makes the data and scatters it: rank p gets counts[p] = n + p%3 elements. */
    int *counts = malloc(size * sizeof *counts), *displs = malloc(size * sizeof *displs);
    int total = 0;
    for (int p = 0; p < size; ++p) {
        counts[p] = o.n + p % 3;
        displs[p] = total;
        total += counts[p];
    }
    double *data = NULL;
    if (rank == 0) {
        data = malloc(total * sizeof *data);
        for (int k = 0; k < total; ++k)
            data[k] = 1.0 + 1e-3 * (k % 100);
    }
    const int m = counts[rank];
    double *v = malloc(m * sizeof *v), *rowsums = malloc(px * sizeof *rowsums);
    CALL(MPI_Scatterv, data, counts, displs, MPI_DOUBLE, v, m, MPI_DOUBLE, 0, world);

    for (int it = 0; it < o.iters; ++it) {
        double s = v[0];
        CALL(MPI_Bcast, &s, 1, MPI_DOUBLE, 0, rowcomm);
        for (int k = 0; k < m; ++k)
            v[k] = 0.9 * v[k] + 0.1 * s;

        double local = add_up(v, m), colsum = 0.0;
        CALL(MPI_Reduce, &local, &colsum, 1, MPI_DOUBLE, MPI_SUM, 0, colcomm);
        if (row == 0)
            v[m - 1] = 0.5 * v[m - 1] + 0.5 * colsum / (py * m);

        CALL(MPI_Allgather, &local, 1, MPI_DOUBLE, rowsums, 1, MPI_DOUBLE, cartrow);
        for (int k = 0; k < m; ++k)
            v[k] = 0.99 * v[k] + 0.01 * rowsums[k % px] / m;

        v[0] = burn(o.work, v[0]);
    }

    if (evens != MPI_COMM_NULL)
        CALL(MPI_Barrier, evens);
    CALL(MPI_Gatherv, v, m, MPI_DOUBLE, data, counts, displs, MPI_DOUBLE, 0, world);
    double checksum = 0.0;
    if (rank == 0)
        for (int k = 0; k < total; ++k)
            checksum += (1 + k % 7) * data[k];
    report(&o, rank, size, checksum);

    if (evens != MPI_COMM_NULL)
        CALL(MPI_Comm_free, &evens);
    CALL(MPI_Comm_free, &world);
    CALL(MPI_Comm_free, &cartrow);
    CALL(MPI_Comm_free, &cart);
    CALL(MPI_Comm_free, &colcomm);
    CALL(MPI_Comm_free, &rowcomm);

    free(rowsums);
    free(v);
    free(data);
    free(displs);
    free(counts);
    free(members);
    return finish(&o, rank, 0);
}
