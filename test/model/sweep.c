/* A program whose work follows its inputs and task count, for the run-time models
 * (test/integration/test_instrument.py): -n N cells per side of a grid shared by the ranks,
 * -i I iterations. Each iteration updates the rank's N*N/ntasks cells (8 dependent multiply-adds
 * each, the same whatever the values: the time per cell is constant) and sums a residual with
 * MPI_Allreduce; a setup loop fills N cells. Prints the checksum. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, ntasks;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ntasks);
  long n = 64, iterations = 10;
  for (int a = 1; a + 1 < argc; a += 2) {
    if (strcmp(argv[a], "-n") == 0) n = atol(argv[a + 1]);
    else if (strcmp(argv[a], "-i") == 0) iterations = atol(argv[a + 1]);
  }
  const long cells = n * n / ntasks;
  double* grid = malloc((size_t)(cells > 0 ? cells : 1) * sizeof *grid);
  for (long c = 0; c < cells; ++c) grid[c] = (double)((c * 7 + rank) % 13);
  double residual = 0;
  for (long it = 0; it < iterations; ++it) {
    double local = 0;
    for (long c = 0; c < cells; ++c) {
      double v = grid[c];
      for (int k = 0; k < 8; ++k) v = v * 0.999 + 0.5e-3;
      grid[c] = v;
      local += v;
    }
    MPI_Allreduce(&local, &residual, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }
  if (rank == 0) printf("checksum %.6e\n", residual);
  free(grid);
  MPI_Finalize();
  return 0;
}
