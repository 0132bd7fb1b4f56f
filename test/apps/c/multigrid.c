/* multigrid: V-cycles of a 3-D multigrid solver for a Poisson problem (NPB MG-like).
 *
 * -n SIZE  side of each rank's cube at the finest level (default 16); about 28*SIZE^3 bytes
 *          per rank (64: 7 MB, 160: 115 MB, 192: 200 MB)
 *
 * Level 0 is a grid of SIZE x SIZE x (SIZE*ranks) cells cut along z into slabs of SIZE planes,
 * one per rank; each level halves the sides of the one before (rounding down) while that leaves
 * at least 2 (16: levels of side 16, 8, 4, 2). Each level l has u, f and r, with a halo of one
 * cell (0 outside the domain: Dirichlet), and the operator A u = (6u - its 6 neighbours) / 2^l
 * (the Galerkin operator of the restriction and prolongation below).
 * A halo exchange on a level of side s trades the slab's top and bottom plane, (s+2)^2 doubles,
 * with the ranks above and below: two MPI_Irecv, two MPI_Send, MPI_Waitall (MPI_PROC_NULL at
 * the ends of the domain: those calls are made and counted too), so each level has its own
 * message size. A smoothing sweep is a halo exchange of u, r = f - A u, then
 * u += 0.8 * 2^l r / 6 (weighted Jacobi).
 * Each iteration is one V-cycle:
 *   down, each level but the coarsest: a sweep; a halo exchange of u and r = f - A u; the next
 *     level's f = r averaged over each coarse cell's 8 cells, its u = 0;
 *   the coarsest level: two sweeps;
 *   up, from the second coarsest level to level 0: u += the coarse cell's u (prolongation),
 *     a sweep;
 *   the compute on the centre of level 0's u; a halo exchange of u, r = f - A u on level 0 and
 *     MPI_Allreduce of the sum of r^2.
 * At the end MPI_Reduce of sum(u) at rank 0; the checksum is that plus the last residual norm.
 */
#include <math.h>
#include <mpi.h>
#include <stdlib.h>

#include "counts.h"
#include "common.h"

enum { MAX_LEVELS = 32 };

struct level {
    int s, w;          /* side of the slab's cube, and w = s + 2 with the halo */
    double div;        /* 2^l */
    double *u, *f, *r; /* w^3 each, indexed (z * w + y) * w + x */
};

static int below, above; /* neighbour ranks, or MPI_PROC_NULL */

/* The halo planes of a: MPI_Irecv of both, then MPI_Send of the top plane to the rank above and
 * of the bottom plane to the rank below, MPI_Waitall on the receives (NPB MG's comm3). */
static void exchange(const struct level *g, double *a)
{
    const int p = g->w * g->w;
    MPI_Request requests[2];
    MPI_Status statuses[2]; /* not MPI_STATUSES_IGNORE: gcc misreads MPICH's annotation */
    CALL(MPI_Irecv, a, p, MPI_DOUBLE, below, 1, MPI_COMM_WORLD, &requests[0]);
    CALL(MPI_Irecv, a + (long)(g->s + 1) * p, p, MPI_DOUBLE, above, 2, MPI_COMM_WORLD,
         &requests[1]);
    CALL(MPI_Send, a + (long)g->s * p, p, MPI_DOUBLE, above, 1, MPI_COMM_WORLD);
    CALL(MPI_Send, a + p, p, MPI_DOUBLE, below, 2, MPI_COMM_WORLD);
    CALL(MPI_Waitall, 2, requests, statuses);
}

/* r = f - A u inside the slab (u's halo up to date); returns the sum of r^2. */
static double residual(const struct level *g)
{
    const long w = g->w, p = w * w;
    const double inv = 1.0 / g->div; /* exact: a power of two */
    double sum = 0.0;
    for (long z = 1; z <= g->s; ++z)
        for (long y = 1; y <= g->s; ++y)
            for (long i = z * p + y * w + 1, end = i + g->s; i < end; ++i) {
                const double *u = g->u + i;
                g->r[i] = g->f[i] - (6 * u[0] - u[-1] - u[1] - u[-w] - u[w] - u[-p] - u[p]) * inv;
                sum += g->r[i] * g->r[i];
            }
    return sum;
}

static void sweep(const struct level *g)
{
    exchange(g, g->u);
    residual(g);
    const long w = g->w, p = w * w;
    const double c = 0.8 * g->div / 6.0;
    for (long z = 1; z <= g->s; ++z)
        for (long y = 1; y <= g->s; ++y)
            for (long i = z * p + y * w + 1, end = i + g->s; i < end; ++i)
                g->u[i] += c * g->r[i];
}

/* Fine cell k (1..s) lies in coarse cell (k+1)/2, the last one if s is odd. */
static long coarse_of(long k, int coarse_s)
{
    const long c = (k + 1) / 2;
    return c < coarse_s ? c : coarse_s;
}

/* The coarse level's f: the fine r averaged over each coarse cell; its u = 0. */
static void restrict_to(const struct level *fine, const struct level *coarse)
{
    const long fw = fine->w, fp = fw * fw, cw = coarse->w, cp = cw * cw;
    for (long z = 1; z <= coarse->s; ++z)
        for (long y = 1; y <= coarse->s; ++y)
            for (long x = 1; x <= coarse->s; ++x) {
                const double *r = fine->r + (2 * z - 1) * fp + (2 * y - 1) * fw + 2 * x - 1;
                coarse->f[z * cp + y * cw + x] =
                    0.125 * (r[0] + r[1] + r[fw] + r[fw + 1] + r[fp] + r[fp + 1] + r[fp + fw] +
                             r[fp + fw + 1]);
                coarse->u[z * cp + y * cw + x] = 0.0;
            }
}

/* The fine u += the u of the coarse cell each fine cell lies in. */
static void prolong(const struct level *coarse, const struct level *fine)
{
    const long fw = fine->w, fp = fw * fw, cw = coarse->w, cp = cw * cw;
    for (long z = 1; z <= fine->s; ++z)
        for (long y = 1; y <= fine->s; ++y) {
            const double *c = coarse->u + coarse_of(z, coarse->s) * cp +
                              coarse_of(y, coarse->s) * cw;
            double *u = fine->u + z * fp + y * fw;
            for (long x = 1; x <= fine->s; ++x)
                u[x] += c[coarse_of(x, coarse->s)];
        }
}

int main(int argc, char **argv)
{
    struct options o = {.name = "multigrid", .size_help = "side of each rank's finest cube",
                        .n = 16};
    int rank, size;
    const int status = app_begin(&argc, &argv, &o, &rank, &size);
    if (status >= 0)
        return status;
    if (o.n > 2000) { /* 2000 is 190 GB per rank */
        if (rank == 0)
            fprintf(stderr, "multigrid: -n %d is too large (at most 2000)\n", o.n);
        return finish(&o, rank, 2);
    }
    below = rank > 0 ? rank - 1 : MPI_PROC_NULL;
    above = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;

    struct level lv[MAX_LEVELS];
    int levels = 0;
    for (int s = o.n; levels < MAX_LEVELS; s /= 2) {
        const long w = s + 2;
        lv[levels] = (struct level){.s = s, .w = (int)w, .div = (double)(1L << levels)};
        lv[levels].u = app_calloc(w * w * w, sizeof(double));
        lv[levels].f = app_calloc(w * w * w, sizeof(double));
        lv[levels].r = app_calloc(w * w * w, sizeof(double));
        ++levels;
        if (s / 2 < 2)
            break;
    }
    const struct level *top = &lv[0];
    const long w = top->w, p = w * w;
    for (long z = 1; z <= top->s; ++z)
        for (long y = 1; y <= top->s; ++y)
            for (long x = 1; x <= top->s; ++x)
                top->f[z * p + y * w + x] = 1 + 0.1 * ((x + 2 * y + 3 * (rank * o.n + z)) % 10);
    const long centre = (top->s + 1) / 2 * (p + w + 1);

    double norm = 0.0;
    for (int it = 0; it < o.iters; ++it) {
        for (int l = 0; l < levels - 1; ++l) {
            sweep(&lv[l]);
            exchange(&lv[l], lv[l].u);
            residual(&lv[l]);
            restrict_to(&lv[l], &lv[l + 1]);
        }
        sweep(&lv[levels - 1]);
        sweep(&lv[levels - 1]);
        for (int l = levels - 2; l >= 0; --l) {
            prolong(&lv[l + 1], &lv[l]);
            sweep(&lv[l]);
        }
        top->u[centre] = burn(o.work, top->u[centre]);
        exchange(top, top->u);
        const double local = residual(top);
        CALL(MPI_Allreduce, &local, &norm, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        norm = sqrt(norm);
    }

    double local = 0.0, sum = 0.0;
    for (long z = 1; z <= top->s; ++z)
        for (long y = 1; y <= top->s; ++y)
            local += add_up(top->u + z * p + y * w + 1, top->s);
    CALL(MPI_Reduce, &local, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    report(&o, rank, size, sum + norm);

    for (int l = 0; l < levels; ++l) {
        free(lv[l].r);
        free(lv[l].f);
        free(lv[l].u);
    }
    return finish(&o, rank, 0);
}
