/* What every pskel test application shares: the start of the run (MPI_Init and the options),
 * the compute kernel, the report line and the end of the run. Include after mpi.h and counts.h.
 * A program's main() begins
 *     struct options o = {.name = "ring", .size_help = "doubles per message", .n = 1000};
 *     int rank, size;
 *     const int status = app_begin(&argc, &argv, &o, &rank, &size);
 *     if (status >= 0)
 *         return status;
 * and ends with report() and return finish(&o, rank, 0).
 *
 * Options: -n SIZE  problem size (its meaning is each program's own)
 *          -i ITERS iterations
 *          -w WORK  about WORK*1000 flops of compute per iteration and rank (0: none)
 *          -c DIR   write DIR/counts.RANK, the calls of each traced MPI function
 *          -t       rank 0 prints elapsed_seconds=SECONDS to stderr
 *          -h       help
 */
#ifndef PSKEL_TEST_APPS_COMMON_H
#define PSKEL_TEST_APPS_COMMON_H

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct options {
    const char *name;      /* program name, first word of the report line */
    const char *size_help; /* what -n means */
    int n, iters, work;    /* -n's default is the program's; -i and -w default to 10 */
    int funneled;          /* start with MPI_Init_thread(MPI_THREAD_FUNNELED), not MPI_Init */
    const char *count_dir; /* -c, or NULL */
    int timing;            /* -t */
    double start;          /* MPI_Wtime() right after init */
};

static void usage(FILE *out, const struct options *o)
{
    fprintf(out,
            "usage: %s [-n SIZE] [-i ITERS] [-w WORK] [-c DIR] [-t]\n"
            "  -n SIZE   %s (default %d)\n"
            "  -i ITERS  iterations (default %d)\n"
            "  -w WORK   about WORK*1000 flops per iteration and rank (default %d)\n"
            "  -c DIR    write DIR/counts.RANK: calls per traced MPI function\n"
            "  -t        print elapsed_seconds=... to stderr (rank 0)\n",
            o->name, o->size_help, o->n, o->iters, o->work);
}

static int parse_int(const char *s, int min, int *out)
{
    char *end;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || *s == '\0' || *end != '\0' || v < min || v > INT_MAX)
        return 0;
    *out = (int)v;
    return 1;
}

/* Parses argv into o (which holds the defaults). Returns -1 to go on, else the exit status
 * (0 after -h, 2 after a bad option); only rank 0 prints. */
static int parse_options(int argc, char **argv, struct options *o, int rank)
{
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int ok = 1;
        if (strcmp(a, "-n") == 0) {
            ok = parse_int(v, 1, &o->n);
            ++i;
        } else if (strcmp(a, "-i") == 0) {
            ok = parse_int(v, 0, &o->iters);
            ++i;
        } else if (strcmp(a, "-w") == 0) {
            ok = parse_int(v, 0, &o->work);
            ++i;
        } else if (strcmp(a, "-c") == 0) {
            o->count_dir = v;
            ok = v != NULL && *v != '\0';
            ++i;
        } else if (strcmp(a, "-t") == 0) {
            o->timing = 1;
        } else if (strcmp(a, "-h") == 0) {
            if (rank == 0)
                usage(stdout, o);
            return 0;
        } else {
            ok = 0;
        }
        if (!ok) {
            if (rank == 0) {
                fprintf(stderr, "%s: bad option or value: %s\n", o->name, a);
                usage(stderr, o);
            }
            return 2;
        }
    }
    return -1;
}

/* The compute of one iteration: 500*work steps of 2 dependent flops, seeded by x. The result
 * depends on x and work, so callers feed it into their data and it cannot be optimised away. */
static inline double burn(int work, double x)
{
    for (long k = 0; k < 500L * work; ++k)
        x = x * 0.999 + 0.001;
    return x;
}

/* v[0] + ... + v[m-1], added in that order (the Fortran twins' add_up). */
static inline double add_up(const double *v, int m)
{
    double s = 0.0;
    for (int k = 0; k < m; ++k)
        s += v[k];
    return s;
}

static const char *app_program = "app"; /* o->name, set by app_begin */

/* calloc, or a message naming the program and MPI_Abort: the large arrays of the memory-heavy
 * programs. */
static inline void *app_calloc(size_t count, size_t each)
{
    void *p = calloc(count, each);
    if (!p) {
        fprintf(stderr, "%s: out of memory (%zu x %zu bytes)\n", app_program, count, each);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return p;
}

/* Rank 0 prints the one line of standard output. */
static void report(const struct options *o, int rank, int size, double checksum)
{
    if (rank == 0)
        printf("%s: ranks=%d n=%d iters=%d work=%d checksum=%.12e\n", o->name, size, o->n,
               o->iters, o->work, checksum);
}

/* Ends the run: timing, MPI_Finalize, then the counts file. Returns the exit status. */
static int finish(const struct options *o, int rank, int status)
{
    if (o->timing && rank == 0)
        fprintf(stderr, "elapsed_seconds=%.6f\n", MPI_Wtime() - o->start);
    fflush(stdout);
    CALL(MPI_Finalize, );
    if (o->count_dir && counts_write(o->count_dir, rank) != 0 && status == 0)
        status = 1;
    return status;
}

/* The start of every program: MPI_Init (or MPI_Init_thread if o->funneled), the start time,
 * this rank and the number of ranks in MPI_COMM_WORLD, then the options parsed into o, which
 * holds the program's name, size_help, n and funneled. Returns -1 to go on; otherwise MPI is
 * finalised already and main() returns this exit status at once (0 after -h, 2 after a bad
 * option). */
static int app_begin(int *argc, char ***argv, struct options *o, int *rank, int *size)
{
    if (o->funneled) {
        int provided;
        CALL(MPI_Init_thread, argc, argv, MPI_THREAD_FUNNELED, &provided);
    } else {
        CALL(MPI_Init, argc, argv);
    }
    o->iters = 10;
    o->work = 10;
    o->start = MPI_Wtime();
    app_program = o->name;
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, size);
    const int status = parse_options(*argc, *argv, o, *rank);
    return status >= 0 ? finish(o, *rank, status) : -1;
}

#endif
