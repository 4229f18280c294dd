/* cmd_bench.c -- `veloxquant bench attention|e2e`.
 *
 * bench attention: in one run, a streaming read bandwidth, then for every
 * config and context length one decode step of attention over a cache of
 * that many random tokens (1 layer, the given heads), and apart from it the
 * key-scoring time alone (vq_codec_score over the same number of encoded
 * keys). fp16 keys and values are always measured first, as the reference
 * of the speed-ups, and stay alive: every other config is timed in rounds
 * that alternate it with fp16 (a step of each), the speed-up being the
 * median of the rounds' ratios (a slow spell of a shared machine falls on
 * both sides of a round). GB/s is over the cache's accounted K+V bytes (codes and
 * all metadata); fraction_of_bandwidth compares it with the read bandwidth
 * measured at the start of the run with the same thread count (a buffer
 * larger than the L3 cache), fraction_of_cached_bandwidth with the read rate
 * of a buffer of the fp16 cache's size at that context (the floor when the
 * cache fits in the CPU's caches, as 16k tokens of 4 heads do in a large L3).
 *
 * bench e2e: cmd_bench_e2e.c. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "cli.h"
#include "cli_opts.h"
#include "eval_common.h"
#include "util/json_write.h"
#include "veloxquant.h"

#define MAX_CONFIGS 32
#define MAX_CTX 16
#define MAX_THREADS 64
#define MAX_LAYERS 64
#define FILL_CHUNK 256

int cmd_bench_e2e(int argc, char **argv);

/* ---- key scoring alone ---------------------------------------------------- */

typedef struct {
    vq_codec *codec;
    const uint8_t *codes; /* [heads][ctx] blocks */
    size_t ctx, head_bytes;
    int heads, g, D;
    const float *q;    /* [heads*g][D] */
    uint8_t *qbuf;     /* g * query_bytes */
    float *scores;     /* g * FILL_CHUNK */
    int h0, h1;        /* heads [h0, h1) */
    size_t t0, t1;     /* tokens [t0, t1) of every head */
    int failed;
} score_job;

static void *score_run(void *arg)
{
    score_job *J = arg;
    size_t qb = vq_codec_query_bytes(J->codec), bpt = vq_codec_block_bytes(J->codec) / vq_codec_block_tokens(J->codec);
    for (int h = J->h0; h < J->h1; h++) {
        for (int j = 0; j < J->g; j++)
            if (vq_codec_prepare_query(J->codec, J->q + ((size_t)h * (size_t)J->g + (size_t)j) * (size_t)J->D,
                                       J->qbuf + (size_t)j * qb) != VQ_OK)
                J->failed = 1;
        const uint8_t *base = J->codes + (size_t)h * J->head_bytes;
        for (size_t t = J->t0; t < J->t1; t += FILL_CHUNK) {
            size_t n = J->t1 - t < FILL_CHUNK ? J->t1 - t : FILL_CHUNK;
            if (vq_codec_score(J->codec, J->qbuf, J->g, base + t * bpt, n, J->scores) != VQ_OK)
                J->failed = 1;
        }
    }
    return NULL;
}

/* A codec for `spec` (calibrated on `calib` if it needs it) or NULL with a
 * message on stderr. */
static vq_codec *make_codec(const char *spec, int D, const float *calib, size_t n_calib)
{
    vq_codec *c = NULL;
    if (vq_codec_create(spec, D, VQ_ROLE_KEY, 7, &c) != VQ_OK) {
        cli_error("bench", "codec %s: %s", spec, vq_last_error());
        return NULL;
    }
    if (vq_codec_needs_calibration(c) && !vq_codec_is_ready(c) && vq_codec_calibrate(c, calib, n_calib) != VQ_OK) {
        cli_error("bench", "codec %s: calibration: %s", spec, vq_codec_error(c));
        vq_codec_free(c);
        return NULL;
    }
    return c;
}

/* key scoring of ctx encoded keys per head for every head (g queries
 * each) on n_threads threads, ready to be timed */
typedef struct {
    vq_codec *cs[MAX_THREADS];
    score_job jobs[MAX_THREADS];
    int n_threads;
    uint8_t *codes;
    float *q;
} scorer;

static void scorer_close(scorer *S)
{
    for (int k = 0; k < S->n_threads; k++) {
        vq_codec_free(S->cs[k]);
        free(S->jobs[k].qbuf);
        free(S->jobs[k].scores);
    }
    free(S->codes);
    free(S->q);
    free(S);
}

/* NULL with a message on stderr on failure */
static scorer *scorer_open(const char *spec, int D, int heads, int g, size_t ctx, int n_threads, const float *data,
                           size_t n_data)
{
    scorer *S = calloc(1, sizeof *S);
    if (!S)
        return NULL;
    S->n_threads = n_threads;
    S->q = malloc((size_t)heads * (size_t)g * (size_t)D * sizeof *S->q);
    for (int k = 0; k < n_threads; k++)
        if (!(S->cs[k] = make_codec(spec, D, data, n_data)))
            goto fail;
    size_t bt = vq_codec_block_tokens(S->cs[0]), bb = vq_codec_block_bytes(S->cs[0]);
    size_t n = ctx / bt * bt, head_bytes = n / bt * bb;
    S->codes = bench_alloc_huge((size_t)heads * head_bytes + 64); /* (the cache's pages are huge ones too) */
    if (!S->codes || !S->q || n == 0) {
        cli_error("bench", "out of memory for %zu scoring tokens", ctx);
        goto fail;
    }
    /* encode the data cyclically: every head gets n tokens */
    for (int h = 0; h < heads; h++)
        for (size_t i = 0; i < n; i += bt) {
            size_t src = (i + (size_t)h * 977) % (n_data / bt * bt);
            if (vq_codec_encode(S->cs[0], data + src * (size_t)D, bt, S->codes + (size_t)h * head_bytes + i / bt * bb) !=
                VQ_OK) {
                cli_error("bench", "codec %s: encode: %s", spec, vq_codec_error(S->cs[0]));
                goto fail;
            }
        }
    for (size_t i = 0; i < (size_t)heads * (size_t)g * (size_t)D; i++)
        S->q[i] = data[(i * 7919) % (n_data * (size_t)D)];
    for (int k = 0; k < n_threads; k++) {
        score_job *J = &S->jobs[k];
        *J = (score_job){ S->cs[k], S->codes, n, head_bytes, heads, g, D, S->q, NULL, NULL, 0, 0, 0, 0, 0 };
        J->qbuf = malloc((size_t)g * vq_codec_query_bytes(S->cs[k]) + 64);
        J->scores = malloc((size_t)g * FILL_CHUNK * sizeof(float));
        if (!J->qbuf || !J->scores) {
            cli_error("bench", "out of memory");
            goto fail;
        }
        /* threads split heads when there are enough, else the context */
        if (heads >= n_threads) {
            J->h0 = heads * k / n_threads, J->h1 = heads * (k + 1) / n_threads;
            J->t0 = 0, J->t1 = n;
        } else {
            J->h0 = 0, J->h1 = heads;
            J->t0 = n / bt * (size_t)k / (size_t)n_threads * bt;
            J->t1 = n / bt * (size_t)(k + 1) / (size_t)n_threads * bt;
        }
    }
    return S;
fail:
    scorer_close(S);
    return NULL;
}

/* seconds of one scoring pass over every head; < 0 on failure */
static double scorer_once(scorer *S)
{
    pthread_t th[MAX_THREADS];
    int started[MAX_THREADS] = { 0 };
    double t0 = bench_now();
    for (int k = 1; k < S->n_threads; k++)
        started[k] = pthread_create(&th[k], NULL, score_run, &S->jobs[k]) == 0;
    score_run(&S->jobs[0]);
    for (int k = 1; k < S->n_threads; k++) {
        if (started[k])
            pthread_join(th[k], NULL);
        else
            score_run(&S->jobs[k]);
    }
    double t = bench_now() - t0;
    for (int k = 0; k < S->n_threads; k++)
        if (S->jobs[k].failed)
            return -1.0;
    return t;
}

/* ---- whole decode attention ----------------------------------------------- */

/* a cache of ctx random tokens per layer for config cfg_text, ready for one
 * decode step of attention (its accounted K+V bytes per layer in *bytes);
 * NULL with a message on stderr on failure */
static vq_cache *att_open(const char *cfg_text, int D, int kv, int qh, int layers, size_t ctx, int n_threads,
                          const float *data, size_t n_data, double *bytes)
{
    vq_cache_config *cfg = NULL;
    vq_cache *c = NULL;
    int ok = 0;
    float *kbuf = malloc((size_t)FILL_CHUNK * (size_t)kv * (size_t)D * sizeof(float));
    float *vbuf = malloc((size_t)FILL_CHUNK * (size_t)kv * (size_t)D * sizeof(float));
    vq_layer_shape ls[MAX_LAYERS];
    for (int l = 0; l < layers; l++)
        ls[l] = (vq_layer_shape){ kv, qh, D, 0, 0.0f };
    vq_cache_shape sh = { layers, ls, 0 };
    if (!kbuf || !vbuf) {
        cli_error("bench", "out of memory");
        goto done;
    }
    if (vq_cache_config_parse(cfg_text, &cfg) != VQ_OK || vq_cache_create(cfg, &sh, 1, &c) != VQ_OK) {
        cli_error("bench", "config \"%s\": %s", cfg_text, vq_last_error());
        goto done;
    }
    if (n_threads != 1 && vq_cache_set_n_threads(c, n_threads) != VQ_OK) {
        cli_error("bench", "threads: %s", vq_cache_error(c));
        goto done;
    }
    /* prerope=1|2 configs: llama's RoPE (base 10000, adjacent pairs) on
     * every layer; the others refuse it (VQ_ERR_STATE) and need none */
    float inv[128]; /* head_dim <= 256 (the option's range) */
    for (int i = 0; i < D / 2; i++)
        inv[i] = (float)pow(10000.0, -2.0 * i / D);
    for (int l = 0; l < layers; l++) {
        vq_status st = vq_cache_set_rope(c, l, inv, 0);
        if (st == VQ_ERR_STATE)
            break;
        if (st != VQ_OK) {
            cli_error("bench", "config \"%s\": RoPE: %s", cfg_text, vq_cache_error(c));
            goto done;
        }
    }
    /* calibration (methods that need it) on the first tokens of the data;
     * then every layer filled with its own stretch of the data */
    size_t nc = n_data / (size_t)kv < 1024 ? n_data / (size_t)kv : 1024;
    for (int l = 0; l < layers; l++)
        if (vq_cache_calibrate(c, l, data, data, nc) != VQ_OK) {
            cli_error("bench", "config \"%s\": calibration: %s", cfg_text, vq_cache_error(c));
            goto done;
        }
    for (int l = 0; l < layers; l++)
        for (size_t p = 0; p <= ctx; p += FILL_CHUNK) {
            size_t n = ctx + 1 - p < FILL_CHUNK ? ctx + 1 - p : FILL_CHUNK;
            for (size_t i = 0; i < n * (size_t)kv * (size_t)D; i++) {
                size_t off = ((p * (size_t)kv * (size_t)D) + i + (size_t)l * 977 * (size_t)D) % (n_data * (size_t)D);
                kbuf[i] = data[off];
                vbuf[i] = data[(off + 131 * (size_t)D) % (n_data * (size_t)D)];
            }
            if (vq_cache_append(c, l, kbuf, vbuf, n, (int32_t)p) != VQ_OK) {
                cli_error("bench", "config \"%s\": append: %s", cfg_text, vq_cache_error(c));
                goto done;
            }
        }
    vq_cache_usage u;
    if (vq_cache_stats(c, -1, &u) != VQ_OK)
        goto done;
    *bytes = (double)(u.keys.accounted_bytes + u.values.accounted_bytes) / layers; /* per layer */
    ok = 1;
done:
    vq_cache_config_free(cfg);
    free(kbuf), free(vbuf);
    if (!ok) {
        vq_cache_free(c);
        return NULL;
    }
    return c;
}

/* seconds per layer of one decode step (the last appended token's query,
 * q: qh*D floats, attending in every layer in turn); < 0 on failure */
static double att_once(vq_cache *c, int D, int qh, int layers, const float *q, float *out)
{
    double t0 = bench_now();
    for (int l = 0; l < layers; l++)
        if (vq_cache_attend(c, l, q, 1, qh, 1.0f / sqrtf((float)D), out) != VQ_OK) {
            cli_error("bench", "attend: %s", vq_cache_error(c));
            return -1.0;
        }
    return (bench_now() - t0) / layers;
}

/* One timed pair: the fp16 reference (a) and a config (b) measured in turn,
 * one untimed round first, then `repeats` rounds: the median time of b and
 * the median of the rounds' ratios a / b (a slow spell of a shared machine
 * falls on both of a round). b NULL: a alone, ratio 1. */
typedef double (*once_fn)(void *arg);
typedef struct {
    double median_s, median_ratio; /* < 0 on failure */
} paired_time;

static paired_time time_paired(once_fn fa, void *a, once_fn fb, void *b, int repeats)
{
    paired_time pt = { -1.0, -1.0 };
    double *t = calloc((size_t)repeats, sizeof *t), *ratio = calloc((size_t)repeats, sizeof *ratio);
    if (!t || !ratio)
        goto done;
    for (int r = -1; r < repeats; r++) {
        double ta = fa(a), tb = fb ? fb(b) : ta;
        if (ta < 0 || tb < 0)
            goto done;
        if (r >= 0)
            t[r] = tb, ratio[r] = ta / tb;
    }
    pt.median_s = bench_median(t, repeats);
    pt.median_ratio = bench_median(ratio, repeats);
done:
    free(t), free(ratio);
    return pt;
}

typedef struct {
    vq_cache *c;
    int D, qh, layers;
    const float *q;
    float *out;
} att_arg;

static double att_once_fn(void *arg)
{
    att_arg *A = arg;
    return att_once(A->c, A->D, A->qh, A->layers, A->q, A->out);
}

static double scorer_once_fn(void *arg) { return scorer_once(arg); }

/* the keys= and values= specs of a config text (defaults fp16) */
static void config_specs(const char *text, char *keys, char *values, size_t cap)
{
    snprintf(keys, cap, "fp16");
    snprintf(values, cap, "fp16");
    vq_cache_config *cfg = NULL;
    if (vq_cache_config_parse(text, &cfg) != VQ_OK)
        return;
    const char *s = vq_cache_config_str(cfg);
    const char *k = strstr(s, "keys="), *v = strstr(s, "values=");
    if (k)
        snprintf(keys, cap, "%.*s", (int)strcspn(k + 5, " "), k + 5);
    if (v)
        snprintf(values, cap, "%.*s", (int)strcspn(v + 7, " "), v + 7);
    vq_cache_config_free(cfg);
}

typedef struct {
    const char *cfg;
    char keys[256], values[256];
    long ctx;
    double ms, score_ms, bytes;
    double speedup, score_speedup; /* medians of the rounds' fp16 / config time ratios */
    double cached_bw;              /* read rate of a buffer of the fp16 cache's size */
} att_result;

static int cmd_bench_attention(int argc, char **argv)
{
    int D = 128, kv = 4, qh = 0, layers = 1, threads = 1, repeats = 9, json = 0;
    bench_ctx_list cl = { { 16384 }, 1, MAX_CTX, 1L << 22 };
    bench_config_list cfl = { { "keys=fp16 values=fp16" }, 1, MAX_CONFIGS + 1 };
    const cli_opt opts[] = {
        CLI_OPT_CALL("ctx", bench_store_ctx_list, &cl, "LIST", "context lengths, e.g. 4096,16384 (default 16384)"),
        CLI_OPT_INT("head-dim", &D, "D", 32, 256, "a multiple of 32 (default 128)"),
        CLI_OPT_INT("kv-heads", &kv, "H", 1, 64, "(default 4)"),
        CLI_OPT_INT("q-heads", &qh, "Q", 1, 256, "a multiple of H (default 4*H)"),
        CLI_OPT_INT("layers", &layers, "L", 1, MAX_LAYERS,
                    "layers of that shape attended in turn per step, as in a\n"
                    "model (default 1); times and bytes are per layer. With\n"
                    "L x the cache larger than the L3 cache, the caches are\n"
                    "read from memory, as in long-context decode"),
        CLI_OPT_CALL("config", bench_store_config, &cfl, "\"keys=SPEC values=SPEC ...\"",
                     "a cache config (repeatable);\n"
                     "fp16 keys and values always run first; prerope=1|2\n"
                     "configs get llama's RoPE (base 10000, adjacent pairs)"),
        CLI_OPT_INT("threads", &threads, "N", 1, MAX_THREADS, "threads for attention and the bandwidth (default 1)"),
        CLI_OPT_INT("repeats", &repeats, "R", 1, 1000, "timed repetitions, median reported (default 9)"),
        CLI_OPT_FLAG("json", &json, "one JSON object on stdout"),
        CLI_OPT_END,
    };
    const cli_command cmd = { "bench attention", "[options]", "Decode attention speed per cache config.", opts, NULL,
                              NULL, 0, NULL };
    int prc = cli_parse(&cmd, argc, argv);
    if (prc >= 0)
        return prc;
    if (D % 32 != 0)
        return cli_usage_error(&cmd, "bad value for --head-dim: '%d' (want a multiple of 32 in 32..256)", D);
    const char *const *configs = cfl.text;
    const int n_cfg = cfl.n, n_ctx = cl.n;
    const long *ctxs = cl.v;
    if (qh == 0)
        qh = 4 * kv;
    if (qh % kv != 0)
        return cli_usage_error(&cmd, "--q-heads %d is not a multiple of --kv-heads %d", qh, kv);
    for (int i = 1; i < n_cfg; i++) {
        vq_cache_config *cfg = NULL;
        if (vq_cache_config_parse(configs[i], &cfg) != VQ_OK)
            return cli_usage_error(&cmd, "--config \"%s\": %s", configs[i], vq_last_error());
        vq_cache_config_free(cfg);
    }

    /* random data: normal keys/values (Box-Muller on a fixed LCG) */
    size_t n_data = 4096 * (size_t)kv;
    float *data = malloc(n_data * (size_t)D * sizeof *data);
    att_result *res = calloc((size_t)(n_cfg * n_ctx), sizeof *res);
    if (!data || !res) {
        cli_error("bench", "out of memory");
        free(data), free(res);
        return 1;
    }
    uint64_t s = 0x1234567ull;
    for (size_t i = 0; i < n_data * (size_t)D; i += 2) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        double u1 = ((double)(s >> 11) + 0.5) / 9007199254740992.0;
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        double u2 = (double)(s >> 11) / 9007199254740992.0;
        double r = sqrt(-2.0 * log(u1));
        data[i] = (float)(r * cos(6.283185307179586 * u2));
        data[i + 1] = (float)(r * sin(6.283185307179586 * u2));
    }

    char cpu[256];
    bench_cpu_name(cpu, sizeof cpu);
    double bw = bench_read_bandwidth(threads);
    const double scaling = bench_thread_scaling(threads);
    if (!json) {
        printf("decode attention, %d layer(s) per step (times per layer): %d KV heads, %d query heads, head_dim %d, "
               "%d thread(s); CPU %s\n",
               layers, kv, qh, D, threads, cpu);
        printf("streaming read bandwidth (this run, %d thread(s), buffer larger than the L3 cache): %.1f GB/s; thread\n"
               "scaling %.2fx (an arithmetic loop; 1.0: the threads share one core)\n",
               threads, bw, scaling);
        printf("(\"of BW\": of that bandwidth; \"of cached\": of the read rate of a buffer the size of the fp16\n"
               " cache at that context (all layers), measured in this run -- the floor when the cache fits in the CPU's\n"
               " caches)\n\n");
        printf("%-58s %7s %9s %9s %8s %7s %7s %8s %9s %8s\n", "config", "ctx", "cache MB", "ms/token", "GB/s", "of BW",
               "of cached", "vs fp16", "score ms", "vs fp16");
    }
    eval_progress pr;
    eval_progress_start(&pr, "bench attention", "runs");
    int rc = 0, done = 0;
    float *q = malloc((size_t)qh * (size_t)D * sizeof *q), *out = malloc((size_t)qh * (size_t)D * sizeof *out);
    if (!q || !out) {
        cli_error("bench", "out of memory");
        free(q), free(out), free(data), free(res);
        return 1;
    }
    for (size_t i = 0; i < (size_t)qh * (size_t)D; i++)
        q[i] = data[(i * 31 + 5) % (n_data * (size_t)D)];
    for (int ci = 0; ci < n_ctx; ci++) {
        /* the fp16 reference, alive through the context's configs: each
         * config is timed in rounds alternating with it */
        const size_t ctx = (size_t)ctxs[ci];
        att_result *f = &res[ci * n_cfg];
        config_specs(configs[0], f->keys, f->values, sizeof f->keys);
        att_arg fa = { att_open(configs[0], D, kv, qh, layers, ctx, threads, data, n_data, &f->bytes), D, qh, layers, q,
                       out };
        /* scoring: the layers' heads as more heads, per layer */
        scorer *fs = fa.c ? scorer_open(f->keys, D, kv * layers, qh / kv, ctx, threads, data, n_data) : NULL;
        for (int k = 0; k < n_cfg; k++) {
            att_result *r = &res[ci * n_cfg + k];
            r->cfg = configs[k];
            r->ctx = ctxs[ci];
            r->ms = r->score_ms = -1.0;
            if (k > 0)
                config_specs(configs[k], r->keys, r->values, sizeof r->keys);
            att_arg ca = fa;
            scorer *cs = NULL;
            if (fa.c && fs && k > 0) {
                ca.c = att_open(configs[k], D, kv, qh, layers, ctx, threads, data, n_data, &r->bytes);
                cs = ca.c ? scorer_open(r->keys, D, kv * layers, qh / kv, ctx, threads, data, n_data) : NULL;
            }
            if (fa.c && fs && ca.c && (k == 0 || cs)) {
                paired_time pa = time_paired(att_once_fn, &fa, k ? att_once_fn : NULL, k ? &ca : NULL, repeats);
                paired_time ps = time_paired(scorer_once_fn, fs, k ? scorer_once_fn : NULL, cs, repeats);
                if (pa.median_s >= 0 && ps.median_s >= 0) {
                    r->ms = 1e3 * pa.median_s, r->speedup = pa.median_ratio;
                    r->score_ms = 1e3 * ps.median_s / layers, r->score_speedup = ps.median_ratio;
                }
            }
            if (k > 0) {
                vq_cache_free(ca.c);
                if (cs)
                    scorer_close(cs);
            }
            if (r->ms < 0 || r->score_ms < 0)
                rc = 1;
            r->cached_bw = k == 0 ? (f->bytes > 0 ? bench_read_bandwidth_cached(threads, (size_t)(f->bytes * layers))
                                                  : 0.0)
                                  : f->cached_bw;
            eval_progress_update(&pr, ++done, n_ctx * n_cfg);
            if (!json && r->ms >= 0) {
                double gbs = r->bytes / (r->ms * 1e-3) / 1e9;
                printf("%-58s %7ld %9.2f %9.3f %8.2f %6.1f%% %6.1f%% %7.2fx %9.3f %7.2fx\n", r->cfg, r->ctx,
                       r->bytes / 1e6, r->ms, gbs, 100.0 * gbs / bw, r->cached_bw > 0 ? 100.0 * gbs / r->cached_bw : 0.0,
                       r->speedup, r->score_ms, r->score_speedup);
                fflush(stdout);
            }
        }
        vq_cache_free(fa.c);
        if (fs)
            scorer_close(fs);
    }
    free(q), free(out);
    if (json) {
        printf("{\n  \"schema\": \"veloxquant.bench-attention/1\",\n  \"cpu\": ");
        cli_json_print_str(stdout, cpu);
        printf(",\n  \"threads\": %d,\n  \"head_dim\": %d,\n  \"kv_heads\": %d,\n  \"q_heads\": %d,\n  \"layers\": %d,\n",
               threads, D, kv, qh, layers);
        printf("  \"bandwidth_gbs\": %.3f,\n  \"thread_scaling\": %.3f,\n  \"results\": [", bw, scaling);
        int first = 1;
        for (int i = 0; i < n_cfg * n_ctx; i++) {
            const att_result *r = &res[i];
            if (r->ms < 0 || r->score_ms < 0)
                continue;
            double gbs = r->bytes / (r->ms * 1e-3) / 1e9;
            printf("%s\n    {\"config\": ", first ? "" : ",");
            cli_json_print_str(stdout, r->cfg);
            printf(", \"keys\": ");
            cli_json_print_str(stdout, r->keys);
            printf(", \"values\": ");
            cli_json_print_str(stdout, r->values);
            printf(", \"ctx\": %ld, \"kv_bytes\": %.0f, \"ms_per_token\": %.5f, \"score_ms_per_token\": %.5f, "
                   "\"gbs\": %.3f, \"fraction_of_bandwidth\": %.4f, \"cached_bandwidth_gbs\": %.3f, "
                   "\"fraction_of_cached_bandwidth\": %.4f, \"speedup_vs_fp16\": %.4f, "
                   "\"score_speedup_vs_fp16\": %.4f}",
                   r->ctx, r->bytes, r->ms, r->score_ms, gbs, gbs / bw, r->cached_bw,
                   r->cached_bw > 0 ? gbs / r->cached_bw : 0.0, r->speedup, r->score_speedup);
            first = 0;
        }
        printf("\n  ]\n}\n");
    }
    free(data);
    free(res);
    return rc;
}

int cmd_bench(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "attention") == 0)
        return cmd_bench_attention(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "e2e") == 0)
        return cmd_bench_e2e(argc - 1, argv + 1);
    FILE *f = argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) ? stdout : stderr;
    if (f == stderr)
    {
        if (argc >= 2)
            cli_error("bench", "unknown subcommand '%s' (want attention or e2e)", argv[1]);
        else
            cli_error("bench", "missing subcommand (want attention or e2e)");
    }
    fprintf(f, "usage: veloxquant bench attention [options]   decode attention speed per cache config\n"
               "       veloxquant bench e2e --model M [options]  prefill/decode speed of a model per cache config\n"
               "       (--help after the subcommand lists its options)\n");
    return f == stderr ? 2 : 0;
}
