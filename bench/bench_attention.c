/* bench_attention.c -- decode attention time per token over a long cache,
 * for every registered codec (keys and values with the same spec) against
 * fp16, and the bandwidth it achieves over the cache bytes it reads,
 * compared with a plain streaming read measured in the same run
 * (docs/PERF.md: ratios within one run are what holds on a shared machine).
 *
 * usage: bench_attention [N_TOKENS [REPEATS [THREADS]]]
 *        (default 8192 tokens, 7 repeats, 1 thread; THREADS > 1 runs the
 *        attention on a thread pool through vq_cache_set_threads)
 * Shape: 1 layer, 4 KV heads, 16 query heads (GQA 4), head_dim 128.
 * Reported per codec: bytes/token/head (K+V), cache MB, median ms per
 * decode step (min..max over repeats), GB/s over the cache bytes, that as a
 * fraction of the streaming read, and the time ratio vs fp16. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache_internal.h"
#include "core/pool.h"
#include "core/rng.h"
#include "core/timer.h"
#include "veloxquant.h"

#define NKV 4
#define NQ 16
#define D 128

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* GB/s of summing a 256 MiB buffer of floats, median of 5 */
static double stream_bw(void)
{
    size_t n = (256u << 20) / sizeof(float);
    float *buf = malloc(n * sizeof *buf);
    if (!buf)
        return 0;
    for (size_t i = 0; i < n; i++)
        buf[i] = (float)(i & 1023);
    double t[5];
    volatile float sink = 0;
    for (int r = 0; r < 5; r++) {
        double t0 = vq_now_seconds();
        float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        for (size_t i = 0; i < n; i += 4) {
            s0 += buf[i];
            s1 += buf[i + 1];
            s2 += buf[i + 2];
            s3 += buf[i + 3];
        }
        sink += s0 + s1 + s2 + s3;
        t[r] = vq_now_seconds() - t0;
    }
    (void)sink; /* volatile: the sums are computed; read here so no compiler calls it unused */
    free(buf);
    qsort(t, 5, sizeof *t, cmp_d);
    return (double)n * sizeof(float) / t[2] / 1e9;
}

typedef struct {
    char spec[256];
    double bpt, mb, ms, ms_min, ms_max, gbs;
    int ok;
} result;

static vq_pool *g_threads;

static void bench_one(const char *spec, size_t ntok, int reps, result *res)
{
    memset(res, 0, sizeof *res);
    snprintf(res->spec, sizeof res->spec, "%s", spec);
    char text[600];
    snprintf(text, sizeof text, "keys=%s values=%s", spec, spec);
    vq_cache_config *cfg = NULL;
    vq_cache *c = NULL;
    vq_layer_shape ls = { NKV, NQ, D, 0, 0 };
    vq_cache_shape sh = { 1, &ls, 0 };
    if (vq_cache_config_parse(text, &cfg) != VQ_OK || vq_cache_create(cfg, &sh, 1, &c) != VQ_OK) {
        fprintf(stderr, "%s: %s\n", spec, vq_last_error());
        vq_cache_config_free(cfg);
        return;
    }
    vq_cache_config_free(cfg);
    if (g_threads && vq_cache_set_threads(c, g_threads) != VQ_OK)
        fprintf(stderr, "%s: threads: %s\n", spec, vq_last_error());
    vq_rng g;
    vq_rng_seed(&g, 9);
    size_t chunk = 256;
    float *k = malloc(chunk * NKV * D * sizeof(float)), *v = malloc(chunk * NKV * D * sizeof(float));
    float q[NQ * D], out[NQ * D];
    for (size_t i = 0; i < chunk * NKV * D; i++) {
        k[i] = vq_rng_normal(&g);
        v[i] = vq_rng_normal(&g);
    }
    if (vq_cache_calibrate(c, 0, k, v, chunk) != VQ_OK)
        fprintf(stderr, "%s: calibrate: %s\n", spec, vq_last_error());
    for (size_t t = 0; t < ntok; t += chunk) {
        size_t n = ntok - t < chunk ? ntok - t : chunk;
        if (vq_cache_append(c, 0, k, v, n, (int32_t)t) != VQ_OK) {
            fprintf(stderr, "%s: append: %s\n", spec, vq_last_error());
            goto done;
        }
    }
    /* the decode step: one new token, then attention over all of them */
    if (vq_cache_append(c, 0, k, v, 1, (int32_t)ntok) != VQ_OK)
        goto done;
    for (int i = 0; i < NQ * D; i++)
        q[i] = vq_rng_normal(&g);
    vq_cache_usage u;
    vq_cache_stats(c, -1, &u);
    double bytes = (double)(u.keys.accounted_bytes + u.values.accounted_bytes);
    double *t = malloc((size_t)reps * sizeof *t);
    vq_cache_attend(c, 0, q, 1, NQ, 0.088f, out); /* warm-up */
    for (int r = 0; r < reps; r++) {
        double t0 = vq_now_seconds();
        vq_cache_attend(c, 0, q, 1, NQ, 0.088f, out);
        t[r] = vq_now_seconds() - t0;
    }
    qsort(t, (size_t)reps, sizeof *t, cmp_d);
    res->bpt = bytes / (double)(ntok + 1) / NKV;
    res->mb = bytes / 1e6;
    res->ms = t[reps / 2] * 1e3;
    res->ms_min = t[0] * 1e3;
    res->ms_max = t[reps - 1] * 1e3;
    res->gbs = bytes / t[reps / 2] / 1e9;
    res->ok = 1;
    free(t);
done:
    free(k), free(v);
    vq_cache_free(c);
}

int main(int argc, char **argv)
{
    size_t ntok = argc > 1 ? (size_t)strtoul(argv[1], NULL, 10) : 8192;
    int reps = argc > 2 ? atoi(argv[2]) : 7;
    int threads = argc > 3 ? atoi(argv[3]) : 1;
    if (threads > 1 && vq_pool_create(threads, &g_threads) != VQ_OK) {
        fprintf(stderr, "thread pool: %s\n", vq_last_error());
        return 1;
    }
    if (ntok < 256 || reps < 1) {
        fprintf(stderr, "usage: bench_attention [N_TOKENS>=256 [REPEATS>=1]]\n");
        return 2;
    }
    double bw = stream_bw();
    printf("decode attention over %zu cached tokens, 1 layer, %d KV heads, %d q heads, D=%d, %d thread(s)\n", ntok,
           NKV, NQ, D, threads > 1 ? threads : 1);
    printf("streaming read bandwidth (this run): %.1f GB/s\n\n", bw);
    printf("%-34s %9s %9s %21s %8s %7s %8s\n", "codec (keys = values)", "B/tok/hd", "cache MB", "ms/token (min..max)",
           "GB/s", "of BW", "vs fp16");
    const char *extra[] = { "q4_0:rot=1", "turboquant_rvq:bits=4", "kivi:bits=4" };
    int nm = 0;
    while (vq_codec_method(nm, NULL))
        nm++;
    int total = nm + 3;
    double fp16_ms = 0;
    for (int i = 0; i < total; i++) {
        const char *spec = NULL;
        if (i < nm)
            vq_codec_method(i, &spec);
        else
            spec = extra[i - nm];
        result r;
        bench_one(spec, ntok, reps, &r);
        if (!r.ok) {
            printf("%-34s (skipped)\n", spec);
            continue;
        }
        if (strcmp(spec, "fp16") == 0)
            fp16_ms = r.ms;
        char range[64];
        snprintf(range, sizeof range, "%.3f (%.3f..%.3f)", r.ms, r.ms_min, r.ms_max);
        printf("%-34s %9.1f %9.2f %21s %8.2f %6.1f%% %7.2fx\n", spec, r.bpt, r.mb, range, r.gbs, 100.0 * r.gbs / bw,
               fp16_ms > 0 ? r.ms / fp16_ms : 0.0);
        fflush(stdout);
    }
    vq_pool_free(g_threads);
    return 0;
}
