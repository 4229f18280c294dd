/* bench_attend_loop.c -- one cache config's decode attention in a loop, for
 * profilers (perf record, uprobes): L layers (default 32), each of KV
 * key / value heads (default 4) and QH query heads (default 16) at
 * head_dim D, hold 16,385 tokens each (a fixed pseudo-random fill), then
 * every layer attends one query token, R rounds. Prints the best and the mean milliseconds per
 * layer (wall time; use `bench attention` for figures, which pairs every
 * config with fp16).
 *
 * Usage: bench_attend_loop CONFIG ROUNDS [THREADS [D [KV QH [L]]]]
 *   (default 2 threads, D 128; smollm2-135m's shape: D 64, KV 3, QH 9, L 30)
 *   e.g. perf record -F 4000 build/bench/bench_attend_loop \
 *          "keys=turboquant_rvq:bits=1,qbits=4 values=kivi:bits=2,qbits=8" 400 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "veloxquant.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: bench_attend_loop CONFIG ROUNDS [THREADS [D [KV QH [L]]]]\n");
        return 2;
    }
    const char *cfgt = argv[1];
    const int R = atoi(argv[2]), T = argc > 3 ? atoi(argv[3]) : 2, D = argc > 4 ? atoi(argv[4]) : 128;
    const int KV = argc > 6 ? atoi(argv[5]) : 4, QH = argc > 6 ? atoi(argv[6]) : 16, L = argc > 7 ? atoi(argv[7]) : 32;
    const size_t ctx = 16384, n = 1024;
    if (R < 1 || T < 1 || D < 32 || D > 256 || D % 32 || KV < 1 || KV > 64 || QH < KV || QH % KV || L < 1 ||
        L > 64) {
        fprintf(stderr, "bench_attend_loop: bad ROUNDS, THREADS, D, KV, QH or L\n");
        return 2;
    }
    vq_layer_shape ls[64];
    for (int l = 0; l < L; l++)
        ls[l] = (vq_layer_shape){ KV, QH, D, 0, 0.0f };
    vq_cache_shape sh = { L, ls, 0 };
    vq_cache_config *cfg = NULL;
    vq_cache *c = NULL;
    if (vq_cache_config_parse(cfgt, &cfg) != VQ_OK || vq_cache_create(cfg, &sh, 1, &c) != VQ_OK ||
        (T > 1 && vq_cache_set_n_threads(c, T) != VQ_OK)) {
        fprintf(stderr, "bench_attend_loop: %s\n", c ? vq_cache_error(c) : vq_last_error());
        return 1;
    }
    float *k = malloc(n * KV * (size_t)D * sizeof *k), *v = malloc(n * KV * (size_t)D * sizeof *v);
    float *q = malloc((size_t)QH * (size_t)D * sizeof *q), *out = malloc((size_t)QH * (size_t)D * sizeof *out);
    if (!k || !v || !q || !out) {
        fprintf(stderr, "bench_attend_loop: out of memory\n");
        return 1;
    }
    unsigned s = 1;
    for (int l = 0; l < L; l++)
        for (size_t p = 0; p <= ctx; p += n) {
            const size_t m = ctx + 1 - p < n ? ctx + 1 - p : n;
            for (size_t i = 0; i < m * KV * (size_t)D; i++) {
                s = s * 1103515245u + 12345u;
                const float u = (float)((s >> 8) & 0xffff) / 65536.0f;
                s = s * 1103515245u + 12345u;
                const float u2 = (float)((s >> 8) & 0xffff) / 65536.0f;
                k[i] = sqrtf(-2.0f * logf(u + 1e-6f)) * cosf(6.2831853f * u2);
                v[i] = k[i] * 0.7f + u2;
            }
            if (vq_cache_append(c, l, k, v, m, (int32_t)p) != VQ_OK) {
                fprintf(stderr, "bench_attend_loop: append: %s\n", vq_cache_error(c));
                return 1;
            }
        }
    for (int i = 0; i < QH * D; i++)
        q[i] = k[i];
    double best = 1e30, t0 = now();
    for (int r = 0; r < R; r++) {
        const double a = now();
        for (int l = 0; l < L; l++)
            if (vq_cache_attend(c, l, q, 1, QH, 1.0f / sqrtf((float)D), out) != VQ_OK) {
                fprintf(stderr, "bench_attend_loop: attend: %s\n", vq_cache_error(c));
                return 1;
            }
        const double b = (now() - a) / L;
        best = b < best ? b : best;
    }
    printf("%s: best %.3f ms/layer, mean %.3f\n", cfgt, best * 1e3, (now() - t0) / R / L * 1e3);
    vq_cache_free(c);
    vq_cache_config_free(cfg);
    free(k), free(v), free(q), free(out);
    return 0;
}
