/* bench_attn_ab.c -- two caches of the smollm2 attention shape (30 layers,
 * 3 KV heads, 9 query heads, head_dim 64) holding the same tokens, 2
 * threads each, timed against each other in one process: one decode query
 * per layer through the 30 layers, the caches alternated round by round
 * (order swapped every round). Prints the median wall time of each and the
 * median (quartiles) of the per-round ratio B / A: a paired reading that
 * the host's drift cancels out of (two runs of separate binaries on this
 * 2-core machine differ by 10-25%).
 *
 * Cache B may take CHUNK, its attention chunk in tokens (cache_internal.h
 * VQ_CACHE_ATTN_CHUNK); then both caches have attend.c's halving of chunks
 * for layers with few items switched off (attn_items = 0), so the sizes
 * are the ones given (A: 2048).
 *
 * Usage: bench_attn_ab CONFIG_A CONFIG_B [TOKENS [ROUNDS [CHUNK]]]
 *   e.g. build/bench/bench_attn_ab "keys=kivi:bits=2 page=256" "keys=kivi:bits=2 page=1024" 16384 60
 *        build/bench/bench_attn_ab "$C" "$C" 4096 60 1024   (chunks of 1024 against 2048) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cache/cache_internal.h"
#include "cache/prerope.h"
#include "veloxquant.h"

enum { NL = 30, NKV = 3, NQ = 9, D = 64, STEP = 256, MAXR = 400 };

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static float uniform(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (float)(*s >> 40) / (float)(1 << 24) * 2.0f - 1.0f;
}

/* a cache of config text holding n tokens (keys with one outlier channel) */
static vq_cache *make(const char *text, size_t n, size_t chunk)
{
    vq_layer_shape ls[NL];
    for (int l = 0; l < NL; l++)
        ls[l] = (vq_layer_shape){ NKV, NQ, D, 0, 0.0f };
    vq_cache_shape sh = { NL, ls, 7 };
    vq_cache_config *cfg = NULL;
    vq_cache *c = NULL;
    if (vq_cache_config_parse(text, &cfg) != VQ_OK || vq_cache_create(cfg, &sh, 11, &c) != VQ_OK) {
        fprintf(stderr, "bench_attn_ab: %s\n", vq_last_error());
        exit(1);
    }
    vq_cache_config_free(cfg);
    for (int l = 0; vq_cache_prerope_on(c) && l < NL; l++) {
        float f[D / 2];
        for (int i = 0; i < D / 2; i++)
            f[i] = (float)pow(10000.0, -2.0 * i / D);
        vq_cache_set_rope(c, l, f, 0);
    }
    static float k[NKV * D * STEP], v[NKV * D * STEP];
    uint64_t s = 5;
    for (size_t t0 = 0; t0 < n; t0 += STEP) {
        for (size_t i = 0; i < NKV * D * STEP; i++)
            k[i] = uniform(&s) + (i % D == 3 ? 5.0f : 0.0f), v[i] = uniform(&s);
        for (int l = 0; l < NL; l++)
            if (vq_cache_append(c, l, k, v, STEP, (int32_t)t0) != VQ_OK) {
                fprintf(stderr, "bench_attn_ab: append: %s\n", vq_last_error());
                exit(1);
            }
    }
    vq_cache_set_n_threads(c, 2);
    if (chunk) {
        c->attn_chunk = chunk;
        c->attn_items = 0;
    }
    return c;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: bench_attn_ab CONFIG_A CONFIG_B [TOKENS [ROUNDS [CHUNK]]]\n");
        return 2;
    }
    const size_t n = argc > 3 ? (size_t)atoi(argv[3]) : 4096, chunk = argc > 5 ? (size_t)atoi(argv[5]) : 0;
    int R = argc > 4 ? atoi(argv[4]) : 40;
    R = R < 4 ? 4 : R > MAXR ? MAXR : R;
    vq_cache *c[2] = { make(argv[1], n, chunk ? 2048 : 0), make(argv[2], n, chunk) };
    float q[NQ * D], out[NQ * D];
    uint64_t s = 9;
    for (int i = 0; i < NQ * D; i++)
        q[i] = uniform(&s);
    double ta[MAXR], tb[MAXR], ratio[MAXR];
    for (int r = 0; r < R + 2; r++) { /* two rounds of warm-up */
        double t[2];
        for (int w = 0; w < 2; w++) {
            const int x = (r & 1) ? 1 - w : w;
            const double t0 = now();
            for (int l = 0; l < NL; l++)
                vq_cache_attend(c[x], l, q, 1, NQ, 0.125f, out);
            t[x] = now() - t0;
        }
        if (r >= 2)
            ta[r - 2] = t[0], tb[r - 2] = t[1], ratio[r - 2] = t[1] / t[0];
    }
    qsort(ta, (size_t)R, sizeof *ta, cmp);
    qsort(tb, (size_t)R, sizeof *tb, cmp);
    qsort(ratio, (size_t)R, sizeof *ratio, cmp);
    printf("%zu tokens: A %.3f ms, B %.3f ms (medians); per-round ratio B/A %.3f (quartiles %.3f %.3f)\n  A: %s\n  B: %s%s\n",
           n, ta[R / 2] * 1e3, tb[R / 2] * 1e3, ratio[R / 2], ratio[R / 4], ratio[3 * R / 4], argv[1], argv[2],
           chunk ? " (its own chunk size)" : "");
    vq_cache_free(c[0]);
    vq_cache_free(c[1]);
    return 0;
}
