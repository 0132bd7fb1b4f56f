/* What a generated performance skeleton (pskel skeleton, core/skeleton/) links against: the
 * start and end of the run, the calibrated compute (work.h), the message buffers, the request
 * bookkeeping and the timing that turns the skeleton's run into a prediction.
 *
 * Timing. From the end of MPI_Init to the start of MPI_Finalize every moment is accounted to
 * the current *factor*: 1 for what runs at full size, N/q for a scaled loop that runs q of its
 * N iterations, K for compute outside the scaled loops (run as 1/K of its work). The sum of
 * time x factor is this rank's predicted time; pskel_end() prints, on rank 0, the maxima over
 * the ranks of the raw and the weighted times:
 *     pskel-skeleton: ranks=2 scale=10 skeleton_seconds=... scaled_seconds=...
 *                     unscaled_seconds=... predicted_seconds=... errors=0
 * skeleton_seconds = scaled_seconds + unscaled_seconds (raw time of the slowest rank);
 * predicted_seconds = the weighted time (of the rank where it is largest); warmup_seconds =
 * the compute run before the clock starts (PSKEL_WARMUP_SECONDS, default 0; see
 * pskel_begin), which is not part of the prediction.
 *
 * Requests. Every call of the original that created a request is an *event* of the skeleton
 * (a small integer). Each event keeps the requests it created and that are still alive, oldest
 * first; a completion takes "the oldest live request of event e" for each event it covers, so
 * double buffering (a request completed one iteration later) needs no bookkeeping in the
 * generated code. Persistent requests stay with their event until freed.
 *
 * The runtime's own MPI calls (the final reduction of the timings, cleanup of leftover
 * requests, communicators the trace used but did not show being made) go through PMPI_, so
 * tracing a skeleton with pskel shows only the skeleton's communication.
 *
 * Single-threaded; everything here is per process. */
#ifndef PSKEL_SKELETONS_RUNTIME_H
#define PSKEL_SKELETONS_RUNTIME_H

#include <mpi.h>
#include <stdint.h>

#include "stream.h"
#include "work.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What the generated program tells the runtime before anything runs. */
struct pskel_config {
    const char *name;        /* what the skeleton stands for (printed) */
    int world_size;          /* the traced number of ranks: the skeleton refuses to run with another */
    int init_thread;         /* 1: start with MPI_Init_thread(MPI_THREAD_FUNNELED) */
    double scale;            /* K, for the printout */
    long send_bytes;         /* size of pskel_sbuf (at least 1) */
    long recv_bytes;         /* size of pskel_rbuf (at least 1) */
    long bsend_bytes;        /* buffer to attach for MPI_Bsend (0: none) */
    int events;              /* request-creating events are 0 .. events-1 */
    int comms;               /* pskel_comm[0 .. comms-1]; 0 is MPI_COMM_WORLD, 1 MPI_COMM_SELF */
    int max_requests;        /* longest request array of any completion or rewritten group */
    /* The memory-bound part of compute (stream.h), per world rank: {share of each gap streamed,
     * working set bytes, traced ns per work unit, traced ns per streamed byte}; NULL: none. */
    const double (*memory)[4];
    enum pskel_stream_kind stream_kind; /* how the trace's probes streamed the bytes they priced */
};

extern int pskel_rank, pskel_size;
extern char *pskel_sbuf, *pskel_rbuf;
extern MPI_Comm *pskel_comm;
extern MPI_Status *pskel_statuses;  /* max_requests entries */
extern int *pskel_indices;          /* max_requests entries */

/* MPI_Init (or MPI_Init_thread), buffers, error handler MPI_ERRORS_RETURN (errors are counted,
 * not fatal: a skeleton must end), an optional warm-up of compute (PSKEL_WARMUP_SECONDS),
 * then the clock starts. Exits with status 2 if the number of ranks is not config->world_size. */
void pskel_begin(int *argc, char ***argv, const struct pskel_config *config);
/* Stops the clock, completes leftover requests, prints the timings (rank 0), MPI_Finalize.
 * Returns the exit status for main: 0, or 3 if any MPI call failed. */
int pskel_end(void);

/* Counts a failed MPI call (error handler MPI_ERRORS_RETURN); the generated code wraps every
 * MPI call in CHK(). */
void pskel_failed(int code, int line);
#define CHK(call)                                   \
    do {                                            \
        const int pskel_rc_ = (call);               \
        if (pskel_rc_ != MPI_SUCCESS)               \
            pskel_failed(pskel_rc_, __LINE__);      \
    } while (0)

/* Compute: `units` units of pskel_work (fractions are carried to the next call, so many small
 * gaps add up right); with config.memory, the rank's share of them as bytes streamed through its
 * working set (the same traced time, spent on memory), the rest as work. */
void pskel_compute(double units);
/* Compute outside the scaled loops: runs units/K and accounts its time at factor K. */
void pskel_compute_outside(double units);
/* From now on, time is accounted at `factor` (see above). */
void pskel_section(double factor);

/* Per-rank tables stored as runs of equal values: the run that holds `rank`, the last i with
 * starts[i] <= rank (starts[0] is 0, ascending). */
static inline int pskel_run(const int *starts, int n, int rank)
{
    int lo = 0, hi = n - 1;
    while (lo < hi) {
        const int mid = lo + (hi - lo + 1) / 2;
        if (starts[mid] <= rank)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* Per-rank tables of a value that follows where the rank sits on an nx x ny x nz grid (x
 * fastest): per axis 0 at the first coordinate, 2 at the last, 1 between; 0..26 indexes the
 * table. A 3-D stencil's ranks inside, on a face, on an edge or at a corner differ by what
 * their edges leave out. */
static inline int pskel_grid_place(int rank, int nx, int ny, int nz)
{
    const int x = rank % nx, y = rank / nx % ny, z = rank / (nx * ny);
    return (x == 0 ? 0 : x == nx - 1 ? 2 : 1) + 3 * (y == 0 ? 0 : y == ny - 1 ? 2 : 1) +
           9 * (z == 0 ? 0 : z == nz - 1 ? 2 : 1);
}

/* Replies (a master answering whichever worker reported first): the skeleton's wildcard
 * receives remember the source they matched, and a reply is sent there, so the skeleton's
 * run answers whoever comes first in it, as the program did. pskel_recv is MPI_Recv that sets
 * pskel_last_source when `source` is MPI_ANY_SOURCE; a reply's destination is
 * pskel_last_source (a rank of the communicator of that receive, which is the reply's). */
extern int pskel_last_source;
int pskel_recv(void *buf, int count, int source, int tag, MPI_Comm comm);

/* Requests of event `event`. */
MPI_Request *pskel_request(int event);            /* a new one, for MPI_Isend, MPI_Irecv... */
MPI_Request *pskel_persistent(int event);         /* a new persistent one (MPI_Send_init...) */
/* For MPI_Start: the nth (0: the oldest) live persistent request of the event. */
MPI_Request *pskel_started(int event, int nth);
/* Fills out[0 .. passed-1] for a completion: for each of events[0 .. n-1] the oldest live
 * request of that event not taken yet (an event listed twice gives its two oldest), then
 * MPI_REQUEST_NULL. Returns the number of live requests put in. */
int pskel_take(MPI_Request *out, int passed, int n, const int *events);
/* After the completion call on the array pskel_take filled: requests that completed are
 * dropped from their events. */
void pskel_give_back(MPI_Request *out, int passed);
/* MPI_Request_free of the oldest live request of `event`. */
void pskel_free_request(int event);

/* Rewritten groups (deadlock-free plan): requests of the group's calls, completed together. */
MPI_Request *pskel_group_request(void);
int pskel_group_wait(void);   /* MPI_Waitall of the group's requests; returns its error code */

/* Sends whose completion is deferred (a blocking send the original got through only by eager
 * buffering, and whose receive lies beyond any group the planner could rewrite): completed
 * quietly as they finish, the rest at the end of the run. */
MPI_Request *pskel_deferred_request(void);

/* Communicators. pskel_comm_out(i) is &pskel_comm[i], or a dummy for i < 0 (a rank that gets
 * MPI_COMM_NULL). pskel_group(n, ranks) is the group of these world ranks. */
MPI_Comm *pskel_comm_out(int index);
MPI_Group pskel_group(int n, const int *world_ranks);
/* A communicator the trace used without showing how it was made: made here with PMPI_Comm_split
 * of MPI_COMM_WORLD (collective over the world: call it on every rank). */
void pskel_make_comm(int index, int color, int key);

#ifdef __cplusplus
}
#endif

#endif
