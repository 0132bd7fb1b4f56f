/* eager_ring: a ring exchange that is only correct while messages are small.
 *
 * Every rank sends to the right neighbour with a blocking MPI_Send and then receives from the
 * left one with MPI_Recv, -i times, with some compute (-w, as in test/apps) and an
 * MPI_Allreduce per iteration. MPI lets MPI_Send wait until the receive is posted (the
 * rendezvous protocol, used for large messages), and then every rank waits in MPI_Send for a
 * neighbour that also waits in MPI_Send: the program hangs. It works only because small messages
 * are buffered (eager protocol). The skeleton test traces it with small messages and runs the
 * skeleton with rendezvous forced for every size (UCX_RNDV_THRESH=0 for MPICH's ch4:ucx,
 * OMPI_MCA_btl_vader_eager_limit for Open MPI): the skeleton must complete.
 *
 * -n SIZE  doubles per message (default 100)   -i ITERS (default 20)   -w WORK (default 10)
 * -t       rank 0 prints elapsed_seconds=SECONDS to stderr
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double burn(int work, double x)
{
    for (long k = 0; k < 500L * work; ++k)
        x = x * 0.999 + 0.001;
    return x;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    const double start = MPI_Wtime();
    int rank, size, n = 100, iters = 20, work = 10, timing = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "-n") == 0 && i + 1 < argc)
            n = atoi(argv[++i]);
        else if (strcmp(argv[i], "-i") == 0 && i + 1 < argc)
            iters = atoi(argv[++i]);
        else if (strcmp(argv[i], "-w") == 0 && i + 1 < argc)
            work = atoi(argv[++i]);
        else if (strcmp(argv[i], "-t") == 0)
            timing = 1;
        else {
            if (rank == 0)
                fprintf(stderr, "usage: eager_ring [-n SIZE] [-i ITERS] [-w WORK] [-t]\n");
            MPI_Finalize();
            return 2;
        }
    }
    double *x = calloc(n > 0 ? n : 1, sizeof *x), *r = calloc(n > 0 ? n : 1, sizeof *r);
    const int right = (rank + 1) % size, left = (rank + size - 1) % size;
    double sum = 0.0;
    for (int it = 0; it < iters; ++it) {
        MPI_Send(x, n, MPI_DOUBLE, right, 1, MPI_COMM_WORLD);
        MPI_Recv(r, n, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        x[0] = burn(work, r[0] + 1.0);
        double local = x[0], global;
        MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        sum += global;
    }
    if (rank == 0) {
        printf("eager_ring: ranks=%d n=%d iters=%d checksum=%.6e\n", size, n, iters, sum);
        if (timing)
            fprintf(stderr, "elapsed_seconds=%.6f\n", MPI_Wtime() - start);
    }
    free(r);
    free(x);
    MPI_Finalize();
    return 0;
}
