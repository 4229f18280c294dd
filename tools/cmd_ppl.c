/* cmd_ppl.c -- `veloxquant ppl --model MODEL --file TEXT --ctx N
 * [--chunks K] [--skip F] [--cache CONFIG]... [--json]`: perplexity of the
 * model on a text file, and the quality of KV-cache configs against fp16.
 *
 * Method: the file is tokenized (no BOS); it is cut into consecutive chunks
 * of N tokens (N-1 text tokens after a BOS when the model uses one). Each
 * chunk starts from an empty context and is scored teacher-forced: every
 * token but the chunk's first input is predicted from the tokens before it
 * in the chunk. PPL = exp(mean negative log-likelihood over all scored
 * tokens). At most K chunks (default: as many as the file holds).
 *
 * --skip F drops the first fraction F of the file's bytes (cut at the next
 * line start) before tokenizing. The report uses --skip 0.25 on WikiText-2:
 * `veloxquant calibrate` (and validate's automatic calibration) read the
 * first quarter of that file, so evaluation never overlaps calibration.
 *
 * Configs: each --cache CONFIG (repeatable), and the config the single
 * cache flags describe (--keys/--values/--residual/--evict/--cross,
 * tools/cache_flags.h). With any config, each chunk runs through the fp16
 * packed cache ("keys=fp16 values=fp16", the reference) and through one
 * context per config on the same tokens, in batches of 32 positions; at
 * every scored position the two next-token distributions are compared:
 * KL(p_fp16 || p_config) in nats (mean and max over positions) and top-1
 * agreement (same argmax); each config's own PPL gives dPPL in the same
 * run. With --json, "configs" holds one object per config: cache, ppl,
 * dppl, kl, kl_max, top1, positions, bits_per_element(_k/_v) (per-token
 * metadata and the slot index included, from the cache's own counters;
 * the packed tokens' cost, without the fp16 residual window),
 * bits_per_element_held (everything the cache held at the end of the last
 * chunk -- pages incl. partly filled ones, residual buffers, index, shared
 * state -- over the elements it held), kv_bytes_8k (K+V held
 * at 8192 tokens, sliding-window layers at their window, shared state
 * included), kv_bytes_per_token_full/_window, window and kv_fixed_bytes
 * (bytes(C) = full*C + window_bpt*min(C, window) + fixed). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache_flags.h"
#include "cli.h"
#include "cli_opts.h"
#include "eval_common.h"
#include "util/json_write.h"
#include "veloxquant.h"

#define MAX_CONFIGS 12
#define BATCH 32

/* One compared config: its context and running sums. */
typedef struct {
    const char *text;
    vq_ctx *ctx;
    vq_cache *cache;
    float *logits; /* BATCH x n_vocab */
    double nll, kl, kl_max;
    long same, n;
    /* bytes */
    double bpe_k, bpe_v;     /* bits per element incl. per-token metadata */
    double kv_bytes_8k;      /* K+V bytes the cache holds at 8192 tokens */
    double bpt_full;         /* K+V bytes per token, full-attention layers */
    double bpt_window;       /* K+V bytes per token, sliding-window layers */
    double window;           /* their window (tokens), 0 if none */
    double fixed_bytes;      /* shared state + extra bytes of the fp16 residual window */
    double shared_bytes;     /* codec shared state (codebooks, rotations) */
    double bpe_held;         /* all bytes held / elements held, end of a chunk */
    int have_bytes;
} ppl_arm;

/* ln sum exp */
static double lse(const float *x, int n)
{
    float mx = x[0];
    for (int i = 1; i < n; i++)
        mx = x[i] > mx ? x[i] : mx;
    double s = 0;
    for (int i = 0; i < n; i++)
        s += exp((double)x[i] - mx);
    return mx + log(s);
}

/* Bytes per token of each layer's codecs, from the cache's own counters
 * after a chunk (accounted bytes of packed slots / packed slots), and the
 * K+V bytes at 8192 tokens: per layer min(8192, window) tokens held, the
 * newest `residual` of them fp16, plus shared state. */
static void arm_bytes(const vq_model *m, ppl_arm *a)
{
    vq_cache_shape sh;
    vq_cache_usage all;
    if (!a->cache || vq_cache_get_shape(a->cache, &sh) != VQ_OK || vq_cache_stats(a->cache, -1, &all) != VQ_OK)
        return;
    long residual = 0, sinks = 0;
    const char *r = strstr(a->text, "residual=");
    if (r)
        residual = strtol(r + 9, NULL, 10);
    if ((r = strstr(a->text, "sinks=")) != NULL && (r == a->text || r[-1] == ' '))
        sinks = strtol(r + 6, NULL, 10); /* fp16 sink tokens: a fixed cost like the window (full layers) */
    double bits_k = 0, bits_v = 0, elems = 0, total = 0;
    for (int l = 0; l < sh.n_layers; l++) {
        vq_cache_usage u;
        vq_layer_shape li;
        if (vq_cache_stats(a->cache, l, &u) != VQ_OK || vq_model_layer_info(m, l, &li) != VQ_OK)
            return;
        double D = sh.layers[l].head_dim, H = sh.layers[l].n_kv_heads;
        double bpt[2];
        const vq_cache_role_stats *rs[2] = { &u.keys, &u.values };
        /* the slot index (bytes per held token and head, half to each
         * role) is part of every token's cost; the residual window's own
         * position table (4 bytes per window slot) is a fixed cost of the
         * window, like the window itself (in kv_fixed_bytes and
         * bits_per_element_held) */
        double held_slots = (double)u.keys.stored_slots;
        double win_pos = (double)u.keys.residual_bytes / (2 * D) * 4;
        double idx = held_slots > 0 ? ((double)u.index_bytes - win_pos) / held_slots / 2 : 0;
        for (int k = 0; k < 2; k++) {
            double packed = (double)(rs[k]->stored_slots - rs[k]->residual_tokens);
            bpt[k] = (packed > 0 ? ((double)rs[k]->accounted_bytes - (double)rs[k]->residual_tokens * 2 * D) / packed
                                 : 2 * D) + idx;
        }
        double held = li.window > 0 && li.window < 8192 ? li.window : 8192;
        double res_l = (double)residual + (li.window > 0 ? 0.0 : (double)sinks);
        double res = res_l < held ? res_l : held;
        total += H * ((held - res) * (bpt[0] + bpt[1]) + res * 4 * D);
        if (li.window > 0) {
            a->bpt_window += H * (bpt[0] + bpt[1]);
            a->window = li.window;
        } else {
            a->bpt_full += H * (bpt[0] + bpt[1]);
        }
        a->fixed_bytes += H * res_l * (4 * D - bpt[0] - bpt[1]) + win_pos;
        total += win_pos;
        bits_k += 8 * bpt[0] * H;
        bits_v += 8 * bpt[1] * H;
        elems += D * H;
    }
    a->shared_bytes = (double)(all.keys.shared_bytes + all.values.shared_bytes);
    double elems_held = (double)(all.keys.fp16_bytes + all.values.fp16_bytes) / 2;
    a->bpe_held = elems_held > 0 ? 8.0 * ((double)all.keys.resident_bytes + (double)all.values.resident_bytes +
                                          (double)all.index_bytes + a->shared_bytes) / elems_held
                                 : 0;
    a->kv_bytes_8k = total + a->shared_bytes;
    a->fixed_bytes += a->shared_bytes;
    a->bpe_k = bits_k / elems;
    a->bpe_v = bits_v / elems;
    a->have_bytes = 1;
}

int cmd_ppl(int argc, char **argv)
{
    const char *model = NULL, *file = NULL;
    int ctx_arg = 0, chunks_arg = 0, threads_arg = 0;
    double skip = 0;
    int json = 0;
    ppl_arm arms[MAX_CONFIGS];
    memset(arms, 0, sizeof arms);
    cli_config_list cl = { { NULL }, 0, MAX_CONFIGS, "" };
    cli_cache_flags cf = { 0 };
    const cli_opt opts[] = {
        { "model", CLI_STR, &model, "MODEL", "GGUF path or installed name", 0, 0, NULL, CLI_REQUIRED },
        { "file", CLI_STR, &file, "TEXT", "the text file", 0, 0, NULL, CLI_REQUIRED },
        { "ctx", CLI_INT, &ctx_arg, "N", "tokens per chunk (2..65536)", 2, 65536, NULL, CLI_REQUIRED },
        CLI_OPT_INT("chunks", &chunks_arg, "K", 1, 1000000, "score at most K chunks (default: all)"),
        CLI_OPT_NUM("skip", &skip, "F", 0, 0.9,
                    "skip the first fraction F (0..0.9) of the file (default 0;\n"
                    "0.25 = WikiText evaluation part, after the calibration part)"),
        CLI_OPT_CALL("cache", cli_config_add, &cl, "CONFIG",
                     "also score this KV-cache config against fp16: ppl, dPPL, KL,\n"
                     "top-1 agreement (repeatable, up to 12); the single cache\n"
                     "flags below describe one more config"),
        CLI_OPT_INT("threads", &threads_arg, "N", 1, 64, "(default: all cores)"),
        CLI_OPT_FLAG("json", &json, "one JSON object on stdout"),
        CLI_CACHE_SECTION,
        CLI_CACHE_FIELD_OPTS(&cf),
        CLI_OPT_END,
    };
    const cli_command cmd = { "ppl", "--model MODEL --file TEXT --ctx N [options]",
                              "Perplexity on a text file; with configs, their KL and top-1 agreement against fp16.",
                              opts, NULL, NULL, 0, NULL };
    int prc = cli_parse(&cmd, argc, argv);
    if (prc >= 0)
        return prc;
    if (!cli_config_add_flags(&cl, &cf, "ppl"))
        return 2;
    long ctx = ctx_arg, chunks = chunks_arg, threads = threads_arg;
    int n_arms = cl.n;
    for (int k = 0; k < n_arms; k++)
        arms[k].text = cl.text[k];
    size_t len = 0;
    char *text = eval_read_text(file, &len);
    if (!text) {
        cli_error("ppl", "cannot read %s", file);
        return 1;
    }
    vq_model *m = NULL;
    vq_ctx *c = NULL;
    vq_cache *c_cache = NULL;
    int32_t *toks = NULL, *inp = NULL;
    float *ref_logits = NULL;
    size_t n_tok = 0;
    int rc = 1;
    if (vq_model_load(model, &m) != VQ_OK) {
        cli_error("ppl", "%s", vq_last_error());
        goto out;
    }
    /* the reference: plain context without configs (the original
     * behaviour), fp16 packed cache when comparing */
    if (eval_ctx_open(m, n_arms ? "keys=fp16 values=fp16" : NULL, (int)ctx, (int)threads, &c, &c_cache) != VQ_OK) {
        cli_error("ppl", "%s", vq_last_error());
        goto out;
    }
    for (int k = 0; k < n_arms; k++)
        if (eval_ctx_open(m, arms[k].text, (int)ctx, (int)threads, &arms[k].ctx, &arms[k].cache) != VQ_OK) {
            cli_error("ppl", "cache config '%s': %s", arms[k].text, vq_last_error());
            goto out;
        }
    /* skip: start at the line after the cut */
    size_t start = 0;
    if (skip > 0) {
        start = (size_t)(skip * (double)len);
        while (start < len && text[start] != '\n')
            start++;
        if (start < len)
            start++;
    }
    /* tokenize only what the chunks need when K is given (about 16 bytes
     * per token is generous for English text) */
    size_t use = len - start;
    if (chunks && (size_t)(chunks * ctx) * 16 < use)
        use = (size_t)(chunks * ctx) * 16;
    if (vq_model_tokenize(m, text + start, use, 0, 0, &toks, &n_tok) != VQ_OK) {
        cli_error("ppl", "%s", vq_last_error());
        goto out;
    }
    int32_t bos = -1;
    {
        int32_t *t1 = NULL;
        size_t n1 = 0;
        if (vq_model_tokenize(m, "", 0, 1, 0, &t1, &n1) == VQ_OK && n1 == 1)
            bos = t1[0];
        free(t1);
    }
    size_t per = (size_t)ctx - (bos >= 0 ? 1 : 0);
    size_t avail = n_tok / per;
    size_t n_chunks = chunks && (size_t)chunks < avail ? (size_t)chunks : avail;
    if (n_chunks == 0) {
        cli_error("ppl", "%s has %zu tokens, fewer than one chunk of %ld", file, n_tok, ctx);
        goto out;
    }
    inp = malloc((size_t)ctx * sizeof *inp);
    if (!inp) {
        cli_error("ppl", "out of memory");
        goto out;
    }
    double nll = 0;
    int scored = 0;
    vq_model_info info;
    vq_model_info_get(m, &info);
    const int nv = info.n_vocab;
    if (n_arms) {
        ref_logits = malloc((size_t)BATCH * (size_t)nv * sizeof *ref_logits);
        if (!ref_logits)
            goto oom;
        for (int k = 0; k < n_arms; k++)
            if (!(arms[k].logits = malloc((size_t)BATCH * (size_t)nv * sizeof(float))))
                goto oom;
    }
    eval_progress pr;
    eval_progress_start(&pr, "ppl", "tok");
    const double total_work = (double)n_chunks * (double)ctx * (n_arms + 1);
    for (size_t k = 0; k < n_chunks; k++) {
        size_t n = 0;
        if (bos >= 0)
            inp[n++] = bos;
        memcpy(inp + n, toks + k * per, per * sizeof *inp);
        n += per;
        vq_ctx_reset(c);
        if (!n_arms) {
            if (vq_ctx_score(c, inp, (int)n, &nll, &scored) != VQ_OK) {
                cli_error("ppl", "%s", vq_ctx_error(c));
                goto out;
            }
        } else {
            for (int a = 0; a < n_arms; a++)
                vq_ctx_reset(arms[a].ctx);
            for (size_t p0 = 0; p0 < n; p0 += BATCH) {
                int cnt = (int)(n - p0 < BATCH ? n - p0 : BATCH);
                if (vq_ctx_forward(c, inp + p0, cnt, ref_logits, VQ_LOGITS_ALL) != VQ_OK) {
                    cli_error("ppl", "%s", vq_ctx_error(c));
                    goto out;
                }
                for (int a = 0; a < n_arms; a++)
                    if (vq_ctx_forward(arms[a].ctx, inp + p0, cnt, arms[a].logits, VQ_LOGITS_ALL) != VQ_OK) {
                        cli_error("ppl", "%s: %s", arms[a].text, vq_ctx_error(arms[a].ctx));
                        goto out;
                    }
                for (int t = 0; t < cnt && p0 + (size_t)t + 1 < n; t++) {
                    int32_t target = inp[p0 + (size_t)t + 1];
                    const float *lr = ref_logits + (size_t)t * (size_t)nv;
                    nll += lse(lr, nv) - lr[target];
                    scored++;
                    for (int a = 0; a < n_arms; a++) {
                        const float *la = arms[a].logits + (size_t)t * (size_t)nv;
                        int same = 0;
                        double kl = eval_kl(lr, la, nv, &same);
                        arms[a].nll += lse(la, nv) - la[target];
                        arms[a].kl += kl;
                        arms[a].kl_max = kl > arms[a].kl_max ? kl : arms[a].kl_max;
                        arms[a].same += same;
                        arms[a].n++;
                    }
                }
                eval_progress_update(&pr, ((double)k * (double)ctx + (double)(p0 + (size_t)cnt)) * (n_arms + 1),
                                     total_work);
            }
            if (k == 0)
                for (int a = 0; a < n_arms; a++)
                    arm_bytes(m, &arms[a]);
        }
        if (!json)
            fprintf(stderr, "[%zu/%zu] running ppl %.4f\n", k + 1, n_chunks, exp(nll / scored));
    }
    double ppl = exp(nll / scored);
    if (json) {
        printf("{\"model\": ");
        cli_json_print_str(stdout, model);
        printf(", \"arch\": ");
        cli_json_print_str(stdout, info.arch);
        printf(", \"file\": ");
        cli_json_print_str(stdout, file);
        printf(", \"ctx\": %ld, \"chunks\": %zu, \"tokens_scored\": %d, \"nll\": %.6f, \"ppl\": %.4f", ctx, n_chunks,
               scored, nll / scored, ppl);
        printf(", \"skip\": %.4f, \"n_layers\": %d, \"n_kv_heads\": %d, \"head_dim\": %d", skip, info.n_layers,
               info.n_kv_heads, info.head_dim);
        if (n_arms) {
            printf(", \"reference\": \"%s\", \"configs\": [", c_cache ? "keys=fp16 values=fp16" : "float");
            for (int a = 0; a < n_arms; a++) {
                const ppl_arm *A = &arms[a];
                double p = exp(A->nll / (double)A->n);
                printf("%s{\"cache\": ", a ? ", " : "");
                cli_json_print_str(stdout, A->text);
                printf(", \"ppl\": %.6f, \"dppl\": %.6f, \"kl\": %.6g, \"kl_max\": %.6g, \"top1\": %.6f, "
                       "\"positions\": %ld",
                       p, p - ppl, A->kl / (double)A->n, A->kl_max, (double)A->same / (double)A->n, A->n);
                if (A->have_bytes)
                    printf(", \"bits_per_element_k\": %.4f, \"bits_per_element_v\": %.4f, "
                           "\"bits_per_element\": %.4f, \"kv_bytes_8k\": %.0f, \"shared_bytes\": %.0f, "
                           "\"kv_bytes_per_token_full\": %.2f, \"kv_bytes_per_token_window\": %.2f, "
                           "\"window\": %.0f, \"kv_fixed_bytes\": %.0f, \"bits_per_element_held\": %.4f",
                           A->bpe_k, A->bpe_v, (A->bpe_k + A->bpe_v) / 2, A->kv_bytes_8k, A->shared_bytes,
                           A->bpt_full, A->bpt_window, A->window, A->fixed_bytes, A->bpe_held);
                printf("}");
            }
            printf("]");
        }
        printf("}\n");
    } else {
        printf("perplexity: %.4f over %d tokens (%zu chunks of %ld)\n", ppl, scored, n_chunks, ctx);
        for (int a = 0; a < n_arms; a++) {
            const ppl_arm *A = &arms[a];
            double p = exp(A->nll / (double)A->n);
            printf("%s: ppl %.4f (dPPL %+.4f), KL vs fp16 %.3e nats (max %.3e), top-1 agreement %.4f", A->text,
                   p, p - ppl, A->kl / (double)A->n, A->kl_max, (double)A->same / (double)A->n);
            if (A->have_bytes)
                printf(", %.3f bits/element (K %.3f, V %.3f), %.1f MB K+V at 8k tokens", (A->bpe_k + A->bpe_v) / 2,
                       A->bpe_k, A->bpe_v, A->kv_bytes_8k / 1048576.0);
            printf("\n");
        }
    }
    rc = 0;
    goto out;
oom:
    cli_error("ppl", "out of memory");
out:
    for (int a = 0; a < n_arms; a++) {
        free(arms[a].logits);
        eval_ctx_close(arms[a].ctx, arms[a].cache);
    }
    free(ref_logits);
    free(inp);
    free(toks);
    eval_ctx_close(c, c_cache);
    vq_model_free(m);
    free(text);
    return rc;
}
