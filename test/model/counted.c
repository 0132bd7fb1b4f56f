/* The rewriting's fixture (test/integration/test_instrument.py): every kind of counted
 * statement, with counts known in advance. Loops with and without braces, nested ones, a do
 * loop, an else-if chain, statements made by macros (left alone), MPI calls with a predefined
 * and a derived datatype, a call whose count has a side effect (calls counted, bytes not), and
 * MPI_Init and MPI_Finalize whose values are used. Run on 2 ranks. */
#include <mpi.h>
#include <stdio.h>

#define TWICE(x) do { x; x; } while (0)
#define LOOP3(body) for (int m_ = 0; m_ < 3; ++m_) body

static int classify(int v) {
  if (v < 3) return 0;
  else if (v < 6) return 1;
  else if (v < 8) return 2;
  else return 3;
}

int main(int argc, char** argv) {
  int rc = MPI_Init(&argc, &argv);
  int rank, size, sum = 0, classes[4] = {0};
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  for (int i = 0; i < 10; ++i) sum += i;
  for (int i = 0; i < 10; ++i)
    for (int j = 0; j < 5; ++j)
      sum += j;
  int k = 0;
  while (k < 7) { ++k; }
  do k--; while (k > 0);
  for (int i = 0; i < 10; ++i) classes[classify(i)]++;
  TWICE(sum++);
  LOOP3(sum++;);
  MPI_Datatype pairs;
  MPI_Type_vector(4, 2, 3, MPI_DOUBLE, &pairs);
  MPI_Type_commit(&pairs);
  double buf[64] = {0};
  for (int i = 0; i < 3; ++i)
    MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) MPI_Send(buf, 2, pairs, 1, 0, MPI_COMM_WORLD);
  else if (rank == 1) MPI_Recv(buf, 2, pairs, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  int n = 4;
  MPI_Bcast(buf, n++, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  MPI_Type_free(&pairs);
  if (rc != MPI_SUCCESS) printf("MPI_Init failed\n");
  printf("rank %d of %d: sum %d, classes %d %d %d %d, n %d\n", rank, size, sum, classes[0],
         classes[1], classes[2], classes[3], n);
  return MPI_Finalize();
}
