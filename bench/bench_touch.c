/* bench_touch.c -- what the first touch of fresh memory costs on this
 * machine: the page faults a cache pays when its page pool opens a new
 * slab (cache/page_pool.c: 2 MB slabs on transparent huge pages). No
 * library code; wall time.
 *
 * MB megabytes, 2 MB-aligned, one byte written per 4 KB page, timed; then
 * freed and allocated again, three rounds in all. Round 0 meets memory
 * the process has not used; rounds 1-2 usually get the pages round 0 gave
 * back. HUGE 1 advises transparent huge pages (as vq_huge_alloc does), 0
 * advises against them. Prints ms per 2 MB.
 *
 * Usage: bench_touch HUGE MB    e.g. build/bench/bench_touch 1 256 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#define SLAB ((size_t)2 << 20)

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: bench_touch HUGE MB\n");
        return 2;
    }
    const int huge = atoi(argv[1]);
    const long mb = atol(argv[2]);
    if (mb < 2 || mb > (1L << 20)) {
        fprintf(stderr, "bench_touch: MB %ld out of [2, 1048576]\n", mb);
        return 2;
    }
    const size_t n = ((size_t)mb << 20) & ~(SLAB - 1);
    for (int round = 0; round < 3; round++) {
        volatile char *p = aligned_alloc(SLAB, n);
        if (!p) {
            fprintf(stderr, "bench_touch: out of memory for %zu bytes\n", n);
            return 1;
        }
#if defined(MADV_HUGEPAGE) && defined(MADV_NOHUGEPAGE)
        (void)madvise((void *)p, n, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
#endif
        const double t0 = now();
        for (size_t i = 0; i < n; i += 4096)
            p[i] = 1;
        const double ms = 1e3 * (now() - t0);
        printf("huge=%d round %d: %zu MB in %.1f ms, %.2f ms per 2 MB\n", huge, round, n >> 20, ms,
               ms / (double)(n / SLAB));
        free((void *)p);
    }
    return 0;
}
