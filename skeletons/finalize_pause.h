/* A pause before MPI_Finalize for MPICH jobs that span nodes, shared by the tracer and the
 * skeletons. MPICH 4.0.x over UCX closes every endpoint in MPI_Finalize (a flush that, over
 * TCP, waits for the peer's acknowledgement) and only then enters a PMI barrier that does not
 * progress UCX: a rank whose peers finished their flushes and sit in that barrier spins for
 * ever (a 2-node ring hung in 15 of 20 runs here; MPICH removed the barrier upstream, PR 6596).
 * Ranks that leave a barrier together and then wait a moment enter finalize close enough that
 * every flush is answered: 0 hangs in 120 runs, traced, untraced and skeletons (docs/cluster.md).
 * PSKEL_FINALIZE_PAUSE_MS sets the pause (default 500; 0 turns it off). Costs one allreduce on
 * one node, and the pause only across nodes. */
#ifndef PSKEL_FINALIZE_PAUSE_H
#define PSKEL_FINALIZE_PAUSE_H

#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static inline void pskel_finalize_pause(void)
{
#ifdef MPICH_VERSION
    const char *env = getenv("PSKEL_FINALIZE_PAUSE_MS");
    long ms = env && *env ? strtol(env, NULL, 10) : 500;
    if (ms <= 0)
        return;
    if (ms > 10000)
        ms = 10000;
    char host[256] = {0};
    gethostname(host, sizeof host - 1);
    unsigned long long hash = 1469598103934665603ULL; /* FNV-1a of the host name */
    for (const char *c = host; *c; ++c)
        hash = (hash ^ (unsigned char)*c) * 1099511628211ULL;
    unsigned long long range[2] = {hash, ~hash}, seen[2];
    PMPI_Allreduce(range, seen, 2, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    if (seen[0] == hash && seen[1] == ~hash)
        return; /* every rank on this node: no endpoint to flush across the network */
    PMPI_Barrier(MPI_COMM_WORLD);
    struct timespec pause = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&pause, &pause) != 0) {
    }
#endif
}

#endif
