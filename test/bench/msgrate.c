/* Message-rate loop for the tracing-overhead benchmark: rank pairs exchange windows of small
 * non-blocking messages, so nearly all time is spent inside cheap MPI calls and the tracer's
 * per-call cost shows. Usage: msgrate [-i ITERS] [-w WINDOW]. Prints, on rank 0, the elapsed
 * seconds of the loop, the MPI calls each rank made in it, and how long MPI_Init and
 * MPI_Finalize took (where a tracer's fixed start-up and shutdown cost goes), as
 * "elapsed_seconds=X calls_per_rank=N init_seconds=I finalize_seconds=F". */
#define _POSIX_C_SOURCE 199309L /* clock_gettime under -std=c11 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { kMaxWindow = 256 };

/* MPI_Wtime cannot time MPI_Init. */
static double monotonic_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char** argv) {
  long iters = 20000;
  int window = 32;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "-i") == 0) iters = atol(argv[i + 1]);
    if (strcmp(argv[i], "-w") == 0) window = atoi(argv[i + 1]);
  }
  if (window < 1 || window > kMaxWindow) window = 32;
  const double init_start = monotonic_seconds();
  MPI_Init(&argc, &argv);
  const double init_seconds = monotonic_seconds() - init_start;
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
  const double finalize_start = monotonic_seconds();
  MPI_Finalize();
  const double finalize_seconds = monotonic_seconds() - finalize_start;
  if (rank == 0)
    printf("elapsed_seconds=%.6f calls_per_rank=%ld init_seconds=%.6f finalize_seconds=%.6f\n",
           elapsed, calls, init_seconds, finalize_seconds);
  return 0;
}
