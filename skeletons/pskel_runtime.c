/* The runtime of generated skeletons; see pskel_runtime.h. */
#define _POSIX_C_SOURCE 200112L /* clock_gettime, gethostname under -std=c11 */
#include "pskel_runtime.h"

#include "finalize_pause.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int pskel_rank = 0, pskel_size = 1;
char *pskel_sbuf = NULL, *pskel_rbuf = NULL;
MPI_Comm *pskel_comm = NULL;
int pskel_last_source = MPI_PROC_NULL; /* no wildcard receive yet: a reply goes nowhere */
MPI_Status *pskel_statuses = NULL;
int *pskel_indices = NULL;

static struct pskel_config config;
static char *bsend_buffer = NULL;

/* ---- time ---------------------------------------------------------------------------- */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double thread_cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double t_begin, t_mark, factor_now = 1.0, weighted = 0.0, scaled_raw = 0.0, warmup = 0.0;
static long errors = 0;
static int first_error_line = 0;

void pskel_section(double factor)
{
    const double t = now(), dt = t - t_mark;
    weighted += dt * factor_now;
    if (factor_now != 1.0)
        scaled_raw += dt;
    t_mark = t;
    factor_now = factor;
}

static volatile double work_sink;
static double carry = 0.0;
/* The memory part (config.memory): the share of each unit streamed, and the bytes that take;
 * the ratio they were priced by (setup_memory), 0 without one. */
static double memory_share = 0.0, bytes_per_unit = 0.0, byte_carry = 0.0, stream_ratio = 0.0;

enum { kStreamGrain = 4096 };  /* bytes: smaller pieces are carried to the next call */

void pskel_compute(double units)
{
    if (!(units > 0.0))
        return;
    if (memory_share > 0.0) {
        const double bytes = units * bytes_per_unit + byte_carry;
        const uint64_t whole = bytes >= kStreamGrain ? (uint64_t)bytes : 0;
        byte_carry = bytes - (double)whole;
        if (whole > 0)
            work_sink = pskel_stream(whole);
        units *= 1.0 - memory_share;
    }
    const double total = units + carry;
    const uint64_t whole = (uint64_t)total;
    carry = total - (double)whole;
    if (whole > 0)
        work_sink = pskel_work(whole);
}

static void barrier(void *arg)
{
    (void)arg;
    PMPI_Barrier(MPI_COMM_WORLD);
}

/* The rank's memory part, set up before the clock starts (the working set made resident, as
 * the original's data was by then). The trace prices a byte by its memory probe; the
 * skeleton's long passes through a larger set cost more per byte (stream.h), so its bytes are
 * priced at that times the ratio measured here, every rank of the job measuring at once as their
 * memory phases stream at once. Anything unusable leaves the compute core-bound. Collective
 * when the skeleton has a memory part: each rank enters the measurement's barrier once. */
static void setup_memory(void)
{
    if (config.memory == NULL)
        return;
    const double *m = config.memory[pskel_rank];
    const double share = m[0], bytes = m[1], unit_ns = m[2], byte_ns = m[3];
    const int usable = share > 0.0 && share < 1.0 && bytes >= 4096.0 && unit_ns > 0.0 &&
                       byte_ns > 0.0;
    if (usable && pskel_stream_setup((size_t)bytes, config.stream_kind) != 0)
        fprintf(stderr, "pskel-skeleton: rank %d: cannot allocate its working set (%.0f MB); "
                        "its compute stays core-bound\n", pskel_rank, bytes / 1e6);
    const double ratio = pskel_stream_probe_ratio(barrier, NULL);  /* -1 without a set */
    if (ratio < 0.0)
        return;
    /* Outside [0.5, 2] the measurement met something other than memory: the trace's price. */
    stream_ratio = ratio >= 0.5 && ratio <= 2.0 ? ratio : 1.0;
    memory_share = share;
    bytes_per_unit = unit_ns * share / (byte_ns * stream_ratio);
}

void pskel_compute_outside(double units)
{
    if (!(units > 0.0))
        return;
    const double previous = factor_now;
    pskel_section(config.scale);
    pskel_compute(units / config.scale);
    pskel_section(previous);
}

void pskel_failed(int code, int line)
{
    if (errors++ == 0) {
        char text[MPI_MAX_ERROR_STRING];
        int length = 0;
        if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
            snprintf(text, sizeof text, "error %d", code);
        first_error_line = line;
        fprintf(stderr, "pskel-skeleton: rank %d: MPI call at skeleton.c:%d failed: %s\n",
                pskel_rank, line, text);
    }
}

/* ---- requests ------------------------------------------------------------------------ */

struct ring {
    MPI_Request *handle;
    unsigned char *persistent;
    unsigned *taken; /* take stamp */
    int n, cap;
};

static struct ring *rings = NULL;
static unsigned take_stamp = 0;
/* What the last pskel_take put where: out[j] came from rings[take_event[j]] entry take_pos[j]. */
static int *take_event = NULL, *take_pos = NULL;
static int take_count = 0;

static struct ring *ring_of(int event)
{
    if (event < 0 || event >= config.events) {
        fprintf(stderr, "pskel-skeleton: bad request event %d\n", event);
        MPI_Abort(MPI_COMM_WORLD, 4);
    }
    return &rings[event];
}

static MPI_Request *ring_push(int event, int persistent)
{
    struct ring *r = ring_of(event);
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 4;
        r->handle = realloc(r->handle, (size_t)r->cap * sizeof *r->handle);
        r->persistent = realloc(r->persistent, (size_t)r->cap);
        r->taken = realloc(r->taken, (size_t)r->cap * sizeof *r->taken);
        if (!r->handle || !r->persistent || !r->taken) {
            fprintf(stderr, "pskel-skeleton: out of memory\n");
            MPI_Abort(MPI_COMM_WORLD, 4);
        }
    }
    r->handle[r->n] = MPI_REQUEST_NULL;
    r->persistent[r->n] = (unsigned char)persistent;
    r->taken[r->n] = 0;
    return &r->handle[r->n++];
}

static void ring_remove(struct ring *r, int pos)
{
    memmove(&r->handle[pos], &r->handle[pos + 1], (size_t)(r->n - pos - 1) * sizeof *r->handle);
    memmove(&r->persistent[pos], &r->persistent[pos + 1], (size_t)(r->n - pos - 1));
    memmove(&r->taken[pos], &r->taken[pos + 1], (size_t)(r->n - pos - 1) * sizeof *r->taken);
    --r->n;
}

MPI_Request *pskel_request(int event) { return ring_push(event, 0); }

MPI_Request *pskel_persistent(int event) { return ring_push(event, 1); }

MPI_Request *pskel_started(int event, int nth)
{
    static MPI_Request none = MPI_REQUEST_NULL;
    struct ring *r = ring_of(event);
    for (int i = 0; i < r->n; ++i)
        if (r->persistent[i] && nth-- == 0)
            return &r->handle[i];
    none = MPI_REQUEST_NULL;
    pskel_failed(MPI_ERR_REQUEST, __LINE__);
    return &none;
}

int pskel_take(MPI_Request *out, int passed, int n, const int *events)
{
    ++take_stamp;
    take_count = 0;
    for (int k = 0; k < n && take_count < passed; ++k) {
        struct ring *r = ring_of(events[k]);
        for (int i = 0; i < r->n; ++i) {
            if (r->taken[i] == take_stamp)
                continue;
            r->taken[i] = take_stamp;
            out[take_count] = r->handle[i];
            take_event[take_count] = events[k];
            take_pos[take_count] = i;
            ++take_count;
            break;
        }
    }
    for (int j = take_count; j < passed; ++j)
        out[j] = MPI_REQUEST_NULL;
    return take_count;
}

void pskel_give_back(MPI_Request *out, int passed)
{
    (void)passed;
    /* Write back first (positions are still valid), then drop completed ones, last first so
     * that the positions of the others do not move. */
    for (int j = 0; j < take_count; ++j)
        rings[take_event[j]].handle[take_pos[j]] = out[j];
    for (int j = take_count - 1; j >= 0; --j) {
        int best = -1;
        for (int k = 0; k < take_count; ++k) /* the highest position still to look at */
            if (take_pos[k] >= 0 && (best < 0 || take_pos[k] > take_pos[best]))
                best = k;
        struct ring *r = &rings[take_event[best]];
        if (r->handle[take_pos[best]] == MPI_REQUEST_NULL)
            ring_remove(r, take_pos[best]);
        take_pos[best] = -1;
    }
    take_count = 0;
}

void pskel_free_request(int event)
{
    struct ring *r = ring_of(event);
    if (r->n == 0) {
        pskel_failed(MPI_ERR_REQUEST, __LINE__);
        return;
    }
    CHK(MPI_Request_free(&r->handle[0]));
    ring_remove(r, 0);
}

int pskel_recv(void *buf, int count, int source, int tag, MPI_Comm comm)
{
    MPI_Status status;
    const int rc = MPI_Recv(buf, count, MPI_BYTE, source, tag, comm, &status);
    if (rc == MPI_SUCCESS && source == MPI_ANY_SOURCE)
        pskel_last_source = status.MPI_SOURCE;
    return rc;
}

static MPI_Request *group = NULL;
static MPI_Status *group_status = NULL; /* not MPI_STATUSES_IGNORE: GCC 12 misreads MPICH's */
static int group_n = 0, group_cap = 0;

MPI_Request *pskel_group_request(void)
{
    if (group_n == group_cap) {
        group_cap = group_cap ? 2 * group_cap : 64;
        group = realloc(group, (size_t)group_cap * sizeof *group);
        group_status = realloc(group_status, (size_t)group_cap * sizeof *group_status);
        if (!group || !group_status) {
            fprintf(stderr, "pskel-skeleton: out of memory\n");
            MPI_Abort(MPI_COMM_WORLD, 4);
        }
    }
    group[group_n] = MPI_REQUEST_NULL;
    return &group[group_n++];
}

int pskel_group_wait(void)
{
    const int rc = MPI_Waitall(group_n, group, group_status);
    group_n = 0;
    return rc;
}

static MPI_Request *deferred = NULL;
static int deferred_n = 0, deferred_cap = 0;

MPI_Request *pskel_deferred_request(void)
{
    if (deferred_n >= 64 && deferred_n == deferred_cap) { /* drop the finished ones */
        int kept = 0;
        for (int i = 0; i < deferred_n; ++i) {
            int done = 0;
            PMPI_Test(&deferred[i], &done, MPI_STATUS_IGNORE);
            if (!done)
                deferred[kept++] = deferred[i];
        }
        deferred_n = kept;
    }
    if (deferred_n == deferred_cap) {
        deferred_cap = deferred_cap ? 2 * deferred_cap : 64;
        deferred = realloc(deferred, (size_t)deferred_cap * sizeof *deferred);
        if (!deferred) {
            fprintf(stderr, "pskel-skeleton: out of memory\n");
            MPI_Abort(MPI_COMM_WORLD, 4);
        }
    }
    deferred[deferred_n] = MPI_REQUEST_NULL;
    return &deferred[deferred_n++];
}

static void finish_deferred(void)
{
    for (int i = 0; i < deferred_n; ++i)
        PMPI_Wait(&deferred[i], MPI_STATUS_IGNORE);
    deferred_n = 0;
    free(deferred);
    deferred = NULL;
}

/* Requests the skeleton left alive (a test that completed nothing where the original's did):
 * completed quietly, or cancelled if they do not complete within a few seconds. */
static long finish_leftovers(void)
{
    long left = 0;
    for (int e = 0; e < config.events; ++e) {
        struct ring *r = &rings[e];
        for (int i = 0; i < r->n; ++i) {
            if (r->handle[i] == MPI_REQUEST_NULL)
                continue;
            int done = 0;
            const double deadline = now() + 5.0;
            while (!done && now() < deadline)
                PMPI_Test(&r->handle[i], &done, MPI_STATUS_IGNORE);
            if (!done) {
                ++left;
                PMPI_Cancel(&r->handle[i]);
                const double cancel_deadline = now() + 5.0;
                while (!done && now() < cancel_deadline)
                    PMPI_Test(&r->handle[i], &done, MPI_STATUS_IGNORE);
            }
            if (r->persistent[i] && r->handle[i] != MPI_REQUEST_NULL)
                PMPI_Request_free(&r->handle[i]);
        }
        free(r->handle);
        free(r->persistent);
        free(r->taken);
    }
    free(rings);
    rings = NULL;
    return left;
}

/* ---- communicators ------------------------------------------------------------------- */

MPI_Comm *pskel_comm_out(int index)
{
    static MPI_Comm dummy;
    if (index < 0 || index >= config.comms) {
        dummy = MPI_COMM_NULL;
        return &dummy;
    }
    return &pskel_comm[index];
}

MPI_Group pskel_group(int n, const int *world_ranks)
{
    MPI_Group world, sub;
    PMPI_Comm_group(MPI_COMM_WORLD, &world);
    PMPI_Group_incl(world, n, world_ranks, &sub);
    PMPI_Group_free(&world);
    return sub;
}

void pskel_make_comm(int index, int color, int key)
{
    MPI_Comm made;
    if (PMPI_Comm_split(MPI_COMM_WORLD, color < 0 ? MPI_UNDEFINED : color, key, &made) !=
        MPI_SUCCESS)
        pskel_failed(MPI_ERR_COMM, __LINE__);
    if (index >= 0 && index < config.comms)
        pskel_comm[index] = made;
}

/* ---- begin and end ------------------------------------------------------------------- */

static void *allocate(long bytes)
{
    void *p = calloc((size_t)(bytes > 0 ? bytes : 1), 1);
    if (!p) {
        fprintf(stderr, "pskel-skeleton: cannot allocate %ld bytes\n", bytes);
        MPI_Abort(MPI_COMM_WORLD, 4);
    }
    return p;
}

/* Makes every page of a buffer resident now, before the clock starts. The original touched its
 * buffers while it set up; a skeleton's first message would otherwise pay for every page of a
 * large buffer inside the timed run, weighted by a scaled loop's N/run (calloc'd pages are
 * mapped on first use). Volatile stores: the compiler may not drop them from calloc'd memory. */
static void touch(void *buffer, long bytes)
{
    volatile char *p = buffer;
    for (long i = 0; i < bytes; i += 4096)
        p[i] = 0;
}

void pskel_begin(int *argc, char ***argv, const struct pskel_config *c)
{
    config = *c;
    if (config.scale <= 0.0)
        config.scale = 1.0;
    if (config.init_thread) {
        int provided;
        MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
    } else {
        MPI_Init(argc, argv);
    }
    PMPI_Comm_rank(MPI_COMM_WORLD, &pskel_rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &pskel_size);
    if (pskel_size != config.world_size) {
        if (pskel_rank == 0)
            fprintf(stderr,
                    "pskel-skeleton: this skeleton of %s was made for %d ranks, not %d\n",
                    config.name, config.world_size, pskel_size);
        PMPI_Finalize();
        exit(2);
    }
    PMPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    PMPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    /* The skeleton's own set-up, from here to the clock's start, is not the program's: the
     * original made its data resident in its own compute after MPI_Init, which the trace's
     * entry gap holds and the skeleton replays. pskel predict subtracts it (warmup_seconds)
     * from the start-up it adds back: fft3d's 0.4 s of touching 0.5 GB had made its
     * predictions 7 % long. */
    const double setup_start = now();
    pskel_sbuf = allocate(config.send_bytes);
    pskel_rbuf = allocate(config.recv_bytes);
    touch(pskel_sbuf, config.send_bytes);
    touch(pskel_rbuf, config.recv_bytes);
    setup_memory();
    const int slots = config.max_requests > 0 ? config.max_requests : 1;
    pskel_statuses = allocate((long)slots * (long)sizeof *pskel_statuses);
    pskel_indices = allocate((long)slots * (long)sizeof *pskel_indices);
    take_event = allocate((long)slots * (long)sizeof *take_event);
    take_pos = allocate((long)slots * (long)sizeof *take_pos);
    rings = allocate((long)(config.events > 0 ? config.events : 1) * (long)sizeof *rings);
    pskel_comm = allocate((long)(config.comms > 2 ? config.comms : 2) * (long)sizeof *pskel_comm);
    for (int i = 0; i < (config.comms > 2 ? config.comms : 2); ++i)
        pskel_comm[i] = MPI_COMM_NULL;
    pskel_comm[0] = MPI_COMM_WORLD;
    pskel_comm[1] = MPI_COMM_SELF;
    if (config.bsend_bytes > 0) {
        const long bytes = config.bsend_bytes;
        bsend_buffer = allocate(bytes);
        touch(bsend_buffer, bytes);
        MPI_Buffer_attach(bsend_buffer, (int)(bytes < 2000000000L ? bytes : 2000000000L));
    }
    /* Optional warm-up (PSKEL_WARMUP_SECONDS = CPU seconds per rank, default none): compute
     * before the clock starts, meant for CPU quotas, where an idle group runs at full speed
     * until the period's quota is spent. It ends on this thread's CPU time: a wall-clock end
     * is first seen when a throttled process resumes, at the start of a fresh period. Measured
     * under a 50 % quota it did not help (docs/skeleton.md), so it is off. Not counted, as
     * the set-up. */
    const char *warm = getenv("PSKEL_WARMUP_SECONDS");
    const double warm_cpu = warm && *warm ? atof(warm) : 0.0;
    if (warm_cpu > 0) {
        const double cpu_start = thread_cpu_seconds();
        while (thread_cpu_seconds() - cpu_start < warm_cpu)
            work_sink = pskel_work(64);
    }
    PMPI_Barrier(MPI_COMM_WORLD);
    warmup = now() - setup_start;
    const char *calibrate = getenv("PSKEL_CALIBRATE");
    if (calibrate && *calibrate && *calibrate != '0') {
        const double ns = pskel_work_calibrate(0.001);
        fprintf(stderr, "pskel-skeleton: rank %d: work_ns_per_unit=%.6f\n", pskel_rank, ns);
    }
    t_begin = t_mark = now();
}

int pskel_end(void)
{
    finish_deferred();
    pskel_section(1.0);
    const double elapsed = t_mark - t_begin;
    const long left = finish_leftovers();
    enum { kFigures = 6 };
    double mine[kFigures] = {elapsed, scaled_raw, weighted, (double)errors, (double)left,
                             stream_ratio};
    double *all =
        pskel_rank == 0 ? allocate(kFigures * (long)pskel_size * (long)sizeof(double)) : NULL;
    PMPI_Gather(mine, kFigures, MPI_DOUBLE, all, kFigures, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (pskel_rank == 0) {
        int slowest = 0, critical = 0;
        long total_errors = 0, total_left = 0;
        double ratio = 0.0;  /* the largest rank's: the one whose streaming it lengthens most */
        for (int r = 0; r < pskel_size; ++r) {
            const double *f = all + kFigures * r;
            if (f[0] > all[kFigures * slowest])
                slowest = r;
            if (f[2] > all[kFigures * critical + 2])
                critical = r;
            total_errors += (long)f[3];
            total_left += (long)f[4];
            if (f[5] > ratio)
                ratio = f[5];
        }
        const double *s = all + kFigures * slowest;
        printf("pskel-skeleton: ranks=%d scale=%.6g skeleton_seconds=%.6f scaled_seconds=%.6f "
               "unscaled_seconds=%.6f predicted_seconds=%.6f critical_rank=%d errors=%ld "
               "leftover_requests=%ld warmup_seconds=%.6f stream_ratio=%.3f\n",
               pskel_size, config.scale, s[0], s[1], s[0] - s[1],
               all[kFigures * critical + 2], critical, total_errors, total_left, warmup, ratio);
        fflush(stdout);
        free(all);
    }
    if (bsend_buffer) {
        void *detached;
        int size;
        MPI_Buffer_detach(&detached, &size);
        free(bsend_buffer);
    }
    pskel_finalize_pause(); /* after the timed part: see its header */
    MPI_Finalize();
    free(group_status);
    free(group);
    free(take_pos);
    free(take_event);
    free(pskel_indices);
    free(pskel_statuses);
    free(pskel_comm);
    free(pskel_rbuf);
    free(pskel_sbuf);
    (void)first_error_line;
    return errors > 0 ? 3 : 0;
}
