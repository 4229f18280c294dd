/* cmd_bench_e2e.c -- `veloxquant bench e2e`: prefill and decode speed of a
 * model after a prompt of each length, per cache config, with the plain
 * float K/V buffer and the fp16 cache in the same run, against the floor
 * that the machine's read bandwidth sets.
 *
 * For each context length L: per config a fresh context, its cache's
 * memory for the whole run reserved (vq_ctx_reserve) and a prompt of L
 * tokens of real text (vq_ctx_forward, batched), both timed as prefill; then
 * --decode greedy tokens per config in rounds: each config in turn decodes
 * one untimed token (its cache and the weights back in the CPU's caches
 * after the other configs' rounds, as in a single stream) and then up to
 * E2E_ROUND timed tokens, summed per config as decode (a slow spell of a
 * shared machine falls on every config alike, so the ratios hold). A
 * decode step reads every weight once and the cache's K+V once, so
 *   bytes_per_step = weight bytes + K+V bytes held after the prompt
 *   floor_tok_s    = bandwidth / bytes_per_step
 * with the bandwidth a streaming read measured at the start of the run on
 * the same threads. speedup_vs_fp16 compares decode tok/s with the fp16
 * cache's at the same L; decode_step_max_ms is the slowest timed decode
 * step (a stall, e.g. fresh memory or a residual flush, shows there beside
 * the mean 1000 / decode_tok_s). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_common.h"
#include "cli.h"
#include "cli_opts.h"
#include "eval_common.h"
#include "util/json_write.h"
#include "veloxquant.h"

#define MAX_CONFIGS 16
#define MAX_CTX 8
#define E2E_ROUND 16 /* timed decode tokens per config and round */

int cmd_bench_e2e(int argc, char **argv);

typedef struct {
    const char *cache; /* NULL = float K/V */
    long ctx;
    double prefill_tok_s, decode_tok_s, kv_bytes;
    double step_max_ms; /* the slowest timed decode step */
    int ok;
} e2e_result;

/* prompt of n tokens from text (repeated), starting at BOS when the model
 * has one */
static int32_t *make_prompt(const vq_model *m, const char *text, size_t len, size_t n)
{
    int32_t *toks = NULL, *out = malloc(n * sizeof *out);
    size_t nt = 0;
    if (!out || vq_model_tokenize(m, text, len, 0, 0, &toks, &nt) != VQ_OK || nt == 0) {
        free(out);
        free(toks);
        return NULL;
    }
    size_t i = 0;
    if (vq_model_bos(m) >= 0)
        out[i++] = vq_model_bos(m);
    for (size_t k = 0; i < n; i++, k++)
        out[i] = toks[k % nt];
    free(toks);
    return out;
}

static int argmax(const float *x, int n)
{
    int b = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[b])
            b = i;
    return b;
}

/* one config's context during a run */
typedef struct {
    vq_ctx *ctx;
    vq_cache *cache;
    float *logits;
    double decode_s;   /* summed decode step times */
    double step_max_s; /* the slowest of them */
} e2e_live;

/* opens r's context and runs the prompt (timed as prefill); r->ok = 0 and
 * nothing held on failure */
static void open_prefill(const vq_model *m, int n_vocab, e2e_result *r, const int32_t *prompt, int n_decode,
                         int threads, e2e_live *lv)
{
    memset(lv, 0, sizeof *lv);
    r->ok = 0;
    if (!(lv->logits = malloc((size_t)n_vocab * sizeof *lv->logits)))
        return;
    /* the prompt, the timed tokens and one untimed token per round */
    const int room = (int)r->ctx + n_decode + (n_decode + E2E_ROUND - 1) / E2E_ROUND + 1;
    if (eval_ctx_open(m, r->cache, room, threads, &lv->ctx, &lv->cache) != VQ_OK) {
        cli_error("bench", "%s: %s", r->cache ? r->cache : "float", vq_last_error());
        free(lv->logits), lv->logits = NULL;
        return;
    }
    /* the cache's memory for every token of the run made first, as
     * vq_generate does (counted in prefill): no timed step waits for pages */
    double t0 = bench_now();
    if (vq_ctx_reserve(lv->ctx, room) != VQ_OK ||
        vq_ctx_forward(lv->ctx, prompt, (int)r->ctx, lv->logits, VQ_LOGITS_LAST) != VQ_OK) {
        cli_error("bench", "%s: prefill: %s", r->cache ? r->cache : "float", vq_ctx_error(lv->ctx));
        eval_ctx_close(lv->ctx, lv->cache);
        free(lv->logits);
        memset(lv, 0, sizeof *lv);
        return;
    }
    r->prefill_tok_s = (double)r->ctx / (bench_now() - t0);
    /* the bytes a decode step reads: the tokens held (the float buffer's
     * allocation may be larger) */
    r->kv_bytes = (double)vq_ctx_kv_bytes_per_token(lv->ctx) * (double)vq_ctx_n_tokens(lv->ctx);
    if (lv->cache) {
        vq_cache_usage u;
        if (vq_cache_stats(lv->cache, -1, &u) == VQ_OK)
            r->kv_bytes = (double)(u.keys.accounted_bytes + u.values.accounted_bytes);
    }
    r->ok = 1;
}

/* one greedy decode step of a live context, its time added to decode_s
 * when timed; r->ok = 0 on failure */
static void decode_step(int n_vocab, e2e_result *r, e2e_live *lv, int timed)
{
    int32_t tok = argmax(lv->logits, n_vocab);
    double t0 = bench_now();
    if (vq_ctx_forward(lv->ctx, &tok, 1, lv->logits, VQ_LOGITS_LAST) != VQ_OK) {
        cli_error("bench", "%s: decode: %s", r->cache ? r->cache : "float", vq_ctx_error(lv->ctx));
        r->ok = 0;
        return;
    }
    if (timed) {
        const double dt = bench_now() - t0;
        lv->decode_s += dt;
        lv->step_max_s = dt > lv->step_max_s ? dt : lv->step_max_s;
    }
}

int cmd_bench_e2e(int argc, char **argv)
{
    const char *model = NULL, *file = "../shared/data/wikitext-2-test.txt";
    int n_decode = 32, threads = 0, json = 0;
    bench_ctx_list cl = { { 4096 }, 1, MAX_CTX, 1L << 20 };
    /* the float K/V buffer (NULL) and fp16 run first */
    bench_config_list cfl = { { NULL, "keys=fp16 values=fp16" }, 2, MAX_CONFIGS + 2 };
    const cli_opt opts[] = {
        { "model", CLI_STR, &model, "MODEL", "GGUF path or installed name", 0, 0, NULL, CLI_REQUIRED },
        CLI_OPT_CALL("ctx", bench_store_ctx_list, &cl, "LIST", "prompt lengths in tokens (default 4096)"),
        CLI_OPT_CALL("cache", bench_store_config, &cfl, "CONFIG",
                     "a cache config (repeatable); the float K/V buffer and\n"
                     "keys=fp16 values=fp16 always run first"),
        CLI_OPT_INT("decode", &n_decode, "N", 1, 4096, "greedy tokens timed after each prompt (default 32)"),
        CLI_OPT_INT("threads", &threads, "N", 1, 64, "(default: all cores)"),
        CLI_OPT_STR("file", &file, "TEXT",
                    "prompt text (default ../shared/data/wikitext-2-test.txt,\n"
                    "from its second quarter on; repeated when too short)"),
        CLI_OPT_FLAG("json", &json, "one JSON object on stdout"),
        CLI_OPT_END,
    };
    const cli_command cmd = { "bench e2e", "--model MODEL [options]",
                              "Prefill and decode speed of a model per cache config.", opts, NULL, NULL, 0, NULL };
    int prc = cli_parse(&cmd, argc, argv);
    if (prc >= 0)
        return prc;
    for (int i = 2; i < cfl.n; i++) {
        vq_cache_config *cfg = NULL;
        if (vq_cache_config_parse(cfl.text[i], &cfg) != VQ_OK)
            return cli_usage_error(&cmd, "--cache \"%s\": %s", cfl.text[i], vq_last_error());
        vq_cache_config_free(cfg);
    }
    const char *const *configs = cfl.text;
    const int n_cfg = cfl.n, n_ctx = cl.n;
    const long *ctxs = cl.v;
    size_t len = 0;
    char *text = eval_read_text(file, &len);
    if (!text) {
        cli_error("bench", "cannot read %s", file);
        return 1;
    }
    vq_model *m = NULL;
    if (vq_model_load(model, &m) != VQ_OK) {
        cli_error("bench", "%s", vq_last_error());
        free(text);
        return 1;
    }
    vq_model_info info;
    vq_model_info_get(m, &info);
    long max_ctx = 0;
    for (int i = 0; i < n_ctx; i++)
        max_ctx = ctxs[i] > max_ctx ? ctxs[i] : max_ctx;
    /* the text after its first quarter (the calibration part) */
    int32_t *prompt = make_prompt(m, text + len / 4, len - len / 4, (size_t)max_ctx);
    free(text);
    e2e_result *res = calloc((size_t)(n_cfg * n_ctx), sizeof *res);
    if (!prompt || !res) {
        cli_error("bench", "cannot build the prompt: %s", vq_last_error());
        free(prompt), free(res);
        vq_model_free(m);
        return 1;
    }
    int bw_threads = threads > 0 ? threads : 0;
    if (bw_threads == 0) {
        const char *e = getenv("VQ_THREADS");
        bw_threads = e && atoi(e) > 0 ? atoi(e) : (int)sysconf(_SC_NPROCESSORS_ONLN);
    }
    char cpu[256];
    bench_cpu_name(cpu, sizeof cpu);
    double bw = bench_read_bandwidth(bw_threads);
    const double scaling = bench_thread_scaling(bw_threads);
    double wbytes = (double)info.weight_bytes;
    if (!json) {
        printf("%s: %d layers, weights %.1f MB; %d thread(s); CPU %s\n", model, info.n_layers, wbytes / 1e6,
               bw_threads, cpu);
        printf("streaming read bandwidth (this run): %.1f GB/s; thread scaling %.2fx of %d (an arithmetic loop; 1.0:\n"
               "the threads share one core); decode %d greedy tokens after each prompt\n\n",
               bw, scaling, bw_threads, n_decode);
        printf("%-58s %6s %10s %10s %9s %10s %8s %8s %9s\n", "cache", "ctx", "prefill/s", "decode/s", "KV MB",
               "floor/s", "of floor", "vs fp16", "max ms");
    }
    eval_progress pr;
    eval_progress_start(&pr, "bench e2e", "prompts");
    int rc = 0, done = 0;
    e2e_live *live = calloc((size_t)n_cfg, sizeof *live);
    if (!live) {
        cli_error("bench", "out of memory");
        rc = 1;
    }
    for (int ci = 0; live && ci < n_ctx; ci++) {
        e2e_result *row = &res[ci * n_cfg];
        for (int k = 0; k < n_cfg; k++) {
            row[k].cache = configs[k];
            row[k].ctx = ctxs[ci];
            open_prefill(m, info.n_vocab, &row[k], prompt, n_decode, threads, &live[k]);
            eval_progress_update(&pr, ++done, n_ctx * n_cfg);
        }
        for (int i0 = 0; i0 < n_decode; i0 += E2E_ROUND) /* rounds */
            for (int k = 0; k < n_cfg; k++)
                for (int i = i0 - 1; i < i0 + E2E_ROUND && i < n_decode && row[k].ok; i++)
                    decode_step(info.n_vocab, &row[k], &live[k], i >= i0);
        for (int k = 0; k < n_cfg; k++) {
            e2e_result *r = &row[k];
            if (r->ok) {
                r->decode_tok_s = n_decode / live[k].decode_s;
                r->step_max_ms = 1e3 * live[k].step_max_s;
            } else
                rc = 1;
            if (live[k].ctx)
                eval_ctx_close(live[k].ctx, live[k].cache);
            free(live[k].logits);
            const e2e_result *f = &row[1];
            if (!json && r->ok) {
                double floor = bw * 1e9 / (wbytes + r->kv_bytes);
                printf("%-58s %6ld %10.1f %10.2f %9.2f %10.2f %7.1f%% %7.2fx %9.2f\n",
                       r->cache ? r->cache : "float (no cache)", r->ctx, r->prefill_tok_s, r->decode_tok_s,
                       r->kv_bytes / 1e6, floor, 100.0 * r->decode_tok_s / floor,
                       f->ok && k >= 1 ? r->decode_tok_s / f->decode_tok_s : 0.0, r->step_max_ms);
                fflush(stdout);
            }
        }
    }
    free(live);
    if (json) {
        printf("{\n  \"schema\": \"veloxquant.bench-e2e/1\",\n  \"model\": ");
        cli_json_print_str(stdout, model);
        printf(",\n  \"cpu\": ");
        cli_json_print_str(stdout, cpu);
        printf(",\n  \"threads\": %d,\n  \"decode_tokens\": %d,\n  \"weight_bytes\": %.0f,\n", bw_threads, n_decode,
               wbytes);
        printf("  \"bandwidth_gbs\": %.3f,\n  \"thread_scaling\": %.3f,\n  \"results\": [", bw, scaling);
        int first = 1;
        for (int i = 0; i < n_cfg * n_ctx; i++) {
            const e2e_result *r = &res[i], *f = &res[i / n_cfg * n_cfg + 1];
            if (!r->ok)
                continue;
            double step = wbytes + r->kv_bytes, floor = bw * 1e9 / step;
            printf("%s\n    {\"cache\": ", first ? "" : ",");
            cli_json_print_str(stdout, r->cache ? r->cache : "float");
            printf(", \"ctx\": %ld, \"prefill_tok_s\": %.3f, \"decode_tok_s\": %.3f, \"kv_bytes\": %.0f, "
                   "\"bytes_per_step\": %.0f, \"floor_tok_s\": %.3f, \"fraction_of_floor\": %.4f, "
                   "\"speedup_vs_fp16\": %.4f, \"decode_step_max_ms\": %.3f}",
                   r->ctx, r->prefill_tok_s, r->decode_tok_s, r->kv_bytes, step, floor, r->decode_tok_s / floor,
                   f->ok ? r->decode_tok_s / f->decode_tok_s : 0.0, r->step_max_ms);
            first = 0;
        }
        printf("\n  ]\n}\n");
    }
    free(prompt);
    free(res);
    vq_model_free(m);
    return rc;
}
