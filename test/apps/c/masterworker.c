/* masterworker: rank 0 farms out tasks to the other ranks, first come first served.
 *
 * -n SIZE   number of tasks (default 40)
 * -i ITERS  compute steps per task, each of about WORK*1000 flops (default 10)
 *
 * The master (rank 0) sends each worker a task id (MPI_Send, tag TASK). Then, until every
 * result is in: MPI_Probe for any message, MPI_Recv with MPI_ANY_SOURCE and MPI_ANY_TAG (a
 * result is {task id, value}), and MPI_Send of the next task, or of an empty STOP message, to
 * status.MPI_SOURCE. A worker loops on MPI_Probe from rank 0, MPI_Recv of the message with the
 * probed tag, and MPI_Send of the result, until STOP. Finally every rank checks with MPI_Iprobe
 * that no message is left. The master stores results by task id and sums them in task order,
 * so the checksum does not depend on who did what; how the calls are split between the
 * workers does. With one rank the master does every task itself.
 */
#include <mpi.h>
#include <stdlib.h>

#include "counts.h"
#include "common.h"

enum { TAG_TASK = 1, TAG_STOP = 2, TAG_RESULT = 3 };

static double task(int id, const struct options *o)
{
    double v = 1e-3 * id;
    for (int step = 0; step < o->iters; ++step)
        v = burn(o->work, v + 1e-2 * (id % 7));
    return v + id;
}

int main(int argc, char **argv)
{
    struct options o = {.name = "masterworker", .size_help = "number of tasks", .n = 40};
    int rank, size;
    const int status = app_begin(&argc, &argv, &o, &rank, &size);
    if (status >= 0)
        return status;

    const MPI_Comm comm = MPI_COMM_WORLD;
    /* Every message is doubles: a task is {task id}, a result {task id, value}, a stop empty. */
    MPI_Status st;
    int leftover;
    double task_id, result[2];

    if (rank == 0) {
        double *results = malloc(o.n * sizeof *results);
        int next = 0, busy = 0;
        for (int w = 1; w < size; ++w) {
            task_id = next;
            if (next < o.n) {
                CALL(MPI_Send, &task_id, 1, MPI_DOUBLE, w, TAG_TASK, comm);
                ++next;
                ++busy;
            } else {
                CALL(MPI_Send, &task_id, 0, MPI_DOUBLE, w, TAG_STOP, comm);
            }
        }
        while (busy > 0) {
            CALL(MPI_Probe, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &st);
            CALL(MPI_Recv, result, 2, MPI_DOUBLE, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &st);
            results[(int)result[0]] = result[1];
            task_id = next;
            if (next < o.n) {
                CALL(MPI_Send, &task_id, 1, MPI_DOUBLE, st.MPI_SOURCE, TAG_TASK, comm);
                ++next;
            } else {
                CALL(MPI_Send, &task_id, 0, MPI_DOUBLE, st.MPI_SOURCE, TAG_STOP, comm);
                --busy;
            }
        }
        for (; next < o.n; ++next) /* one rank: no workers */
            results[next] = task(next, &o);

        CALL(MPI_Iprobe, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &leftover, MPI_STATUS_IGNORE);
        double checksum = 0.0;
        for (int t = 0; t < o.n; ++t)
            checksum += results[t];
        report(&o, rank, size, checksum);
        free(results);
    } else {
        for (;;) {
            CALL(MPI_Probe, 0, MPI_ANY_TAG, comm, &st);
            CALL(MPI_Recv, &task_id, 1, MPI_DOUBLE, 0, st.MPI_TAG, comm, MPI_STATUS_IGNORE);
            if (st.MPI_TAG == TAG_STOP)
                break;
            result[0] = task_id;
            result[1] = task((int)task_id, &o);
            CALL(MPI_Send, result, 2, MPI_DOUBLE, 0, TAG_RESULT, comm);
        }
        CALL(MPI_Iprobe, 0, MPI_ANY_TAG, comm, &leftover, MPI_STATUS_IGNORE);
    }
    if (leftover)
        fprintf(stderr, "masterworker: rank %d: a message was left over\n", rank);
    return finish(&o, rank, leftover ? 1 : 0);
}
