/* bench_prerope.c -- what packing keys before RoPE (cache config
 * prerope=1, cache/prerope.h) costs a decode step: per key spec, the
 * attention of one query group over a cache of N tokens with the keys
 * packed before RoPE (scored with each key turned at its position), beside
 * the same keys packed after RoPE and fp16 keys; values fp16, one layer,
 * one KV head, residual 0. Time is the calling thread's CPU time (robust to
 * other jobs; pin it with taskset), the best of 15 steps, per token.
 *
 * Usage: bench_prerope HEAD_DIM N_Q N_TOKENS NEOX SPEC [SPEC ...]
 *   e.g. taskset -c 1 build/bench/bench_prerope 64 3 4096 0 kivix:bits=4,group=256,outliers=64 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cache/prerope.h"
#include "veloxquant.h"

static double cpu_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* ns per cached token of one decode step under config text; < 0 on failure */
static double step_ns(const char *text, int D, int nq, size_t n, int neox, const float *k, const float *q)
{
    vq_cache_config *cfg = NULL;
    vq_cache *c = NULL;
    vq_layer_shape ls = { 1, nq, D, 0, 0.0f };
    vq_cache_shape sh = { 1, &ls, 0 };
    double best = -1.0;
    float *inv = malloc((size_t)D / 2 * sizeof *inv), *out = malloc((size_t)nq * D * sizeof *out);
    if (!inv || !out || vq_cache_config_parse(text, &cfg) != VQ_OK || vq_cache_create(cfg, &sh, 1, &c) != VQ_OK)
        goto done;
    for (int i = 0; i < D / 2; i++)
        inv[i] = (float)pow(10000.0, -2.0 * i / D);
    if (strstr(text, "prerope=1") && vq_cache_set_rope(c, 0, inv, neox) != VQ_OK)
        goto done;
    if (vq_cache_append(c, 0, k, k, n, 0) != VQ_OK)
        goto done;
    for (int rep = 0; rep < 15; rep++) {
        double t0 = cpu_seconds();
        if (vq_cache_attend(c, 0, q, 1, nq, 1.0f / sqrtf((float)D), out) != VQ_OK)
            goto done;
        double t = cpu_seconds() - t0;
        best = rep == 0 || t < best ? t : best;
    }
    best = best * 1e9 / (double)n;
done:
    if (best < 0)
        fprintf(stderr, "%s: %s\n", text, c ? vq_cache_error(c) : vq_last_error());
    vq_cache_free(c);
    vq_cache_config_free(cfg);
    free(inv), free(out);
    return best;
}

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: bench_prerope HEAD_DIM N_Q N_TOKENS NEOX SPEC [SPEC ...]\n");
        return 2;
    }
    const int D = atoi(argv[1]), nq = atoi(argv[2]), neox = atoi(argv[4]);
    const size_t n = (size_t)strtoul(argv[3], NULL, 10);
    if (D < 32 || D % 32 || nq < 1 || nq > 64 || n < 256 || n > (1u << 20)) {
        fprintf(stderr, "bench_prerope: bad HEAD_DIM, N_Q or N_TOKENS\n");
        return 2;
    }
    float *k = malloc(sizeof(float) * (size_t)D * n), *q = malloc(sizeof(float) * (size_t)D * (size_t)nq);
    if (!k || !q)
        return 1;
    for (size_t i = 0; i < (size_t)D * n; i++) /* channels with their own offsets and scales, as keys have */
        k[i] = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f + (float)(i % (size_t)D % 7) * 0.5f;
    for (size_t i = 0; i < (size_t)D * (size_t)nq; i++)
        q[i] = (float)((i * 40503u) % 1000) / 500.0f - 1.0f;
    char text[512];
    const double fp16 = step_ns("keys=fp16 values=fp16 residual=0", D, nq, n, neox, k, q);
    printf("D=%d n_q=%d tokens=%zu neox=%d: fp16 keys %.1f ns/token\n", D, nq, n, neox, fp16);
    for (int a = 5; a < argc; a++) {
        snprintf(text, sizeof text, "keys=%s values=fp16 residual=0", argv[a]);
        const double post = step_ns(text, D, nq, n, neox, k, q);
        snprintf(text, sizeof text, "keys=%s values=fp16 residual=0 prerope=1", argv[a]);
        const double pre = step_ns(text, D, nq, n, neox, k, q);
        printf("%-40s after RoPE %.1f ns/token, before RoPE (prerope=1) %.1f ns/token (%.2fx fp16)\n", argv[a], post,
               pre, pre / fp16);
    }
    free(k), free(q);
    return 0;
}
