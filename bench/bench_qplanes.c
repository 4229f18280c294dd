/* bench_qplanes.c -- the time of one prepared query's bit planes and
 * nibble tables (kernels.h qplanes, kernels/qplanes.h) per kernel table,
 * in CPU time of the calling thread (pin it with taskset): the mean over
 * 200,000 calls on a fixed normal-ish query, each call on a slightly
 * changed copy.
 *
 * Usage: bench_qplanes [D [QBITS]]   (default 128 4)
 *   e.g. taskset -c 1 build/bench/bench_qplanes 128 4 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kernels/kernels.h"

static double cpu_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    const int D = argc > 1 ? atoi(argv[1]) : 128, qbits = argc > 2 ? atoi(argv[2]) : 4, n = 200000;
    if (D < 32 || D > 512 || D % 32 || qbits < 1 || qbits > 8) {
        fprintf(stderr, "bench_qplanes: D a multiple of 32 in 32..512, QBITS 1..8\n");
        return 2;
    }
    static const char *const isas[] = { "scalar", "avx2", "avx512" };
    float y[512];
    static uint8_t q[12 + 8 * 64 + 4 * 512];
    for (const char *const *isa = isas; isa < isas + 3; isa++) {
        const vq_kernels *k = vq_kernels_variant(*isa);
        if (!k)
            continue;
        for (int d = 0; d < D; d++)
            y[d] = (float)((d * 37) % 101) / 50.0f - 1.0f;
        unsigned chk = 0;
        double t = cpu_seconds();
        for (int r = 0; r < n; r++) {
            y[r % D] += 1e-7f;
            k->qplanes(y, D, qbits, q);
            chk += q[12 + (size_t)(r % D) / 8];
        }
        t = cpu_seconds() - t;
        printf("%-7s qplanes D=%d qbits=%d: %.1f ns a query (check %u)\n", *isa, D, qbits, t / n * 1e9, chk);
    }
    return 0;
}
