/* Message-rate loop for the tracing-overhead benchmark: rank pairs exchange windows of small
 * non-blocking messages, so nearly all time is spent inside cheap MPI calls and the tracer's
 * per-call cost shows. Usage: msgrate [-i ITERS] [-w WINDOW]. Prints, on rank 0, the elapsed
 * seconds and the MPI calls each rank made, as "elapsed_seconds=X calls_per_rank=N". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kMaxWindow = 256 };

int main(int argc, char** argv) {
  long iters = 20000;
  int window = 32;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "-i") == 0) iters = atol(argv[i + 1]);
    if (strcmp(argv[i], "-w") == 0) window = atoi(argv[i + 1]);
  }
  if (window < 1 || window > kMaxWindow) window = 32;
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int peer = rank ^ 1;
  char buf[kMaxWindow][8];
  MPI_Request req[kMaxWindow];
  MPI_Status statuses[kMaxWindow];  /* not MPI_STATUSES_IGNORE: GCC 12 flags MPICH's (MPI_Status *)1 */
  long calls = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  if (peer < size) {
    for (long it = 0; it < iters; ++it) {
      for (int w = 0; w < window; ++w) {
        if (rank % 2 == 0)
          MPI_Isend(buf[w], 8, MPI_CHAR, peer, w, MPI_COMM_WORLD, &req[w]);
        else
          MPI_Irecv(buf[w], 8, MPI_CHAR, peer, w, MPI_COMM_WORLD, &req[w]);
      }
      MPI_Waitall(window, req, statuses);
      calls += window + 1;
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  const double elapsed = MPI_Wtime() - t0;
  if (rank == 0) printf("elapsed_seconds=%.6f calls_per_rank=%ld\n", elapsed, calls);
  MPI_Finalize();
  return 0;
}
