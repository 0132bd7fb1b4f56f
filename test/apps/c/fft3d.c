/* fft3d: the data movement of a 3-D FFT on a complex cube distributed in slabs (NPB FT-like).
 *
 * -n SIZE  side of the global cube (default 16); each rank holds m = ceil(SIZE/ranks) planes of
 *          SIZE x m*ranks complex doubles twice (the data and the exchange buffer): about
 *          32*SIZE^3/ranks bytes per rank (256 on 2 ranks: 270 MB)
 *
 * Rank k holds planes k*m .. k*m+m-1 along the distributed axis; each plane has SIZE lines along
 * the middle axis, of m*ranks complex values along the contiguous axis. Planes and columns at
 * SIZE or beyond are padding (zeros, left alone), so that any number of ranks works. The local
 * work is a radix-2 butterfly pass along an axis, the first stage of a decimation-in-frequency
 * FFT: element k and element k + SIZE/2 become (a + b)/sqrt 2 and (a - b) w^k/sqrt 2, w =
 * exp(-2 pi i/SIZE) (unitary: the values neither grow nor shrink). A pass streams through the
 * whole array with a few flops per element: the local work is bound by memory bandwidth, as a
 * real 3-D FFT's is on big arrays. Each iteration leaves the cube transposed (the distributed
 * and the contiguous axis swapped), so that every iteration does the same:
 *   a pass along the contiguous axis, then along the middle axis, of each local plane;
 *   pack the columns bound for each rank, block after block (m*SIZE*m complex values each);
 *   MPI_Alltoall of the whole local array;
 *   unpack, transposed (the new planes are the old columns); a pass along the contiguous axis;
 *   the compute, on the first element (on a spare value if the rank holds only padding);
 *   MPI_Allreduce of a weighted sum of the local array: the checksum.
 * A SIZE too large for MPI_Alltoall's int count exits with status 2.
 */
#include <math.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "counts.h"
#include "common.h"

enum { TILE = 16 }; /* complex values per row of a tile of the transposition */

/* The butterfly of complex a and b with twiddle (wr, wi), scaled by 1/sqrt 2. */
static inline void butterfly(double *a, double *b, double wr, double wi)
{
    const double h = 0.70710678118654752440;
    const double sr = a[0] + b[0], si = a[1] + b[1], dr = a[0] - b[0], di = a[1] - b[1];
    a[0] = h * sr;
    a[1] = h * si;
    b[0] = h * (wr * dr - wi * di);
    b[1] = h * (wr * di + wi * dr);
}

/* A pass along the contiguous axis of `lines` lines of n complex values, `line` doubles apart. */
static void pass_along_lines(double *a, long lines, long line, int n, const double *tw)
{
    const int half = n / 2;
    for (long y = 0; y < lines; ++y)
        for (int k = 0; k < half; ++k)
            butterfly(a + y * line + 2 * k, a + y * line + 2 * (k + half), tw[2 * k],
                      tw[2 * k + 1]);
}

/* A pass along the middle axis of a plane of n lines: line y with line y + n/2, whole lines. */
static void pass_across_lines(double *plane, long line, int n, const double *tw)
{
    const int half = n / 2;
    for (int y = 0; y < half; ++y)
        for (int k = 0; k < n; ++k)
            butterfly(plane + y * line + 2 * k, plane + (y + half) * line + 2 * k, tw[2 * y],
                      tw[2 * y + 1]);
}

int main(int argc, char **argv)
{
    struct options o = {.name = "fft3d", .size_help = "side of the global cube", .n = 16};
    int rank, size;
    const int status = app_begin(&argc, &argv, &o, &rank, &size);
    if (status >= 0)
        return status;
    const int n = o.n, m = (n + size - 1) / size, wide = m * size; /* wide: padded line */
    if (2.0 * m * m * n > INT_MAX) {
        if (rank == 0)
            fprintf(stderr, "fft3d: -n %d is too large for %d ranks\n", n, size);
        return finish(&o, rank, 2);
    }

    const MPI_Comm comm = MPI_COMM_WORLD;
    const double pi = acos(-1.0);
    double *tw = app_calloc(n, sizeof *tw); /* w^k, k < n/2, as (cos, sin) pairs */
    for (int k = 0; k < n / 2; ++k) {
        tw[2 * k] = cos(2 * pi * k / n);
        tw[2 * k + 1] = -sin(2 * pi * k / n);
    }

    /* Complex (plane, y, x) of a local array is a[2 * ((plane * n + y) * wide + x)]. */
    const long line = 2L * wide, plane = line * n, total = plane * m, block = 2L * m * n * m;
    double *a = app_calloc(total, sizeof *a), *b = app_calloc(total, sizeof *b), spare = 0.0;
    const int real_planes = rank * m >= n ? 0 : rank * m + m <= n ? m : n - rank * m;
    for (int l = 0; l < real_planes; ++l)
        for (long y = 0; y < n; ++y)
            for (long x = 0; x < n; ++x) {
                const long g = ((long)(rank * m + l) * n + y) * n + x;
                a[l * plane + y * line + 2 * x] = (double)(g * 7919 % 1009) / 1009 - 0.5;
                a[l * plane + y * line + 2 * x + 1] = (double)(g * 104729 % 997) / 997 - 0.5;
            }

    double checksum = 0.0;
    for (int it = 0; it < o.iters; ++it) {
        for (int l = 0; l < real_planes; ++l) {
            pass_along_lines(a + l * plane, n, line, n, tw);
            pass_across_lines(a + l * plane, line, n, tw);
        }
        /* Block d of b: columns d*m .. d*m+m-1 of every line, plane after plane. */
        for (int d = 0; d < size; ++d)
            for (long l = 0; l < m; ++l)
                for (long y = 0; y < n; ++y)
                    memcpy(b + d * block + 2 * (l * n + y) * m,
                           a + l * plane + y * line + 2 * d * m, 2 * m * sizeof *b);
        CALL(MPI_Alltoall, b, (int)block, MPI_DOUBLE, a, (int)block, MPI_DOUBLE, comm);
        /* From rank s, column j of its plane l becomes element s*m+l of line y of plane j;
         * in tiles of TILE x TILE, so that reads and writes each go a row at a time. */
        for (int s = 0; s < size; ++s)
            for (long y = 0; y < n; ++y)
                for (long l0 = 0; l0 < m; l0 += TILE)
                    for (long j0 = 0; j0 < m; j0 += TILE)
                        for (long l = l0; l < m && l < l0 + TILE; ++l) {
                            const double *from = a + s * block + 2 * (l * n + y) * m;
                            double *to = b + y * line + 2 * (s * m + l);
                            for (long j = j0; j < m && j < j0 + TILE; ++j) {
                                to[j * plane] = from[2 * j];
                                to[j * plane + 1] = from[2 * j + 1];
                            }
                        }
        double *t = a;
        a = b;
        b = t;
        pass_along_lines(a, (long)real_planes * n, line, n, tw);
        if (real_planes > 0)
            a[0] = burn(o.work, a[0]);
        else
            spare = burn(o.work, spare);

        double local = spare;
        for (long k = 0; k < total; ++k)
            local += (1 + k % 7) * a[k];
        CALL(MPI_Allreduce, &local, &checksum, 1, MPI_DOUBLE, MPI_SUM, comm);
    }
    report(&o, rank, size, checksum);

    free(b);
    free(a);
    free(tw);
    return finish(&o, rank, 0);
}
