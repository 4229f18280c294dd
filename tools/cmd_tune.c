/* cmd_tune.c -- `veloxquant tune --model MODEL --budget B [--file TEXT]
 * [--skip F] [--tokens N] [--candidates K] [--max-kl X] [--json]`: the
 * KV-cache config to use on this model within B bits per element, chosen
 * by measurement on the model's own predictions.
 *
 * Candidates: built-in configs of the per-channel-key families (kivix keys
 * at 2..8 bits with a sparse outlier table, kivix values at 2..8 bits, keys
 * never below the values; kivi; q8_0/q4_0 with rotation, keys centred
 * before RoPE), each with its
 * nominal bits per element from the codecs' byte formulas at the model's
 * head_dim. Those within the budget are ranked by nominal bits (more bits
 * first) and the first K (default 6) are measured: N tokens (default 512,
 * at least 256; the fp16 window of recent tokens is 32, or KIVI's 128 from
 * 1024 tokens on)
 * of the text after --skip (default: WikiText-2 after its calibration
 * quarter) are run teacher-forced through the fp16 cache and through each
 * candidate, and the mean KL(p_fp16 || p_candidate) per token and top-1
 * agreement are computed; the measured bits per element come from the
 * cache's own counters (metadata and slot index included, residual window
 * excluded, as `ppl`). The pick is the lowest KL among candidates whose
 * measured bits fit the budget and whose KL is below --max-kl (default
 * 0.5 nats: beyond it the model is broken -- top-1 agreement collapses).
 * If none qualifies, tune says so and exits 1: it never picks a config
 * that breaks the model. Everything measured is printed with the reason.
 *
 * With --plan LOW,HIGH: instead of fixed candidates, a per-layer bit plan
 * for keys and values by measured sensitivity (tune_plan.c). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_opts.h"
#include "eval_common.h"
#include "util/json_write.h"
#include "tune.h"
#include "veloxquant.h"

#define MAX_CAND 64
#define BATCH 32

typedef struct {
    char cfg[256];
    double nominal, measured, kl, top1;
    int ran, fits;
    vq_ctx *ctx;
    vq_cache *cache;
    float *logits;
} cand;

/* --plan LOW,HIGH: 1 <= LOW < HIGH <= 8 */
static const char *store_plan(void *dst, const char *text)
{
    int *p = dst, lo = 0, hi = 0, used = 0;
    if (sscanf(text, "%d,%d%n", &lo, &hi, &used) != 2 || text[used] || lo < 1 || hi > 8 || lo >= hi)
        return "LOW,HIGH bits with 1 <= LOW < HIGH <= 8, e.g. 2,4";
    p[0] = lo;
    p[1] = hi;
    return NULL;
}

/* --vplan LOW,HIGH: as --plan, and LOW = HIGH keeps every value at one width */
static const char *store_vplan(void *dst, const char *text)
{
    int *p = dst, lo = 0, hi = 0, used = 0;
    if (sscanf(text, "%d,%d%n", &lo, &hi, &used) != 2 || text[used] || lo < 1 || hi > 8 || lo > hi)
        return "LOW,HIGH bits with 1 <= LOW <= HIGH <= 8, e.g. 1,2 (4,4: every value at 4 bits)";
    p[0] = lo;
    p[1] = hi;
    return NULL;
}

/* --groups KG,VG: key tokens per block and value channels per scale */
static const char *store_groups(void *dst, const char *text)
{
    int *p = dst, kg = 0, vg = 0, used = 0;
    if (sscanf(text, "%d,%d%n", &kg, &vg, &used) != 2 || text[used] || kg < 16 || kg > 256 || vg < 16 || vg > 256)
        return "KG,VG with 16 <= KG, VG <= 256, e.g. 256,256 (kivix key and value groups)";
    p[0] = kg;
    p[1] = vg;
    return NULL;
}

/* bytes per token of one codec spec at head_dim D, 0 if refused */
static double spec_bytes(const char *spec, int D, vq_role role)
{
    vq_codec *c = NULL;
    if (vq_codec_create(spec, D, role, 1, &c) != VQ_OK)
        return 0;
    double b = (double)vq_codec_bytes_per_token(c);
    vq_codec_free(c);
    return b;
}

static int add(cand *cs, int n, int D, const char *keys, const char *values, const char *extra)
{
    if (n >= MAX_CAND)
        return n;
    double bk = spec_bytes(keys, D, VQ_ROLE_KEY), bv = spec_bytes(values, D, VQ_ROLE_VALUE);
    if (bk <= 0 || bv <= 0)
        return n;
    cand *c = &cs[n];
    memset(c, 0, sizeof *c);
    snprintf(c->cfg, sizeof c->cfg, "keys=%s values=%s%s", keys, values, extra);
    c->nominal = 8.0 * (bk + bv) / (2.0 * D);
    return n + 1;
}

static int build_candidates(cand *cs, int D, long tokens)
{
    int n = 0;
    char k[96], v[96];
    /* the fp16 window of recent tokens: KIVI's 128 when the measurement is
     * long enough to pack most tokens anyway, else 32 */
    /* + 4 attention-sink tokens kept fp16 and keys packed before RoPE
     * (docs/quality.md: both cut KL 2-4x at 2-3 bits on the default models) */
    const char *res = tokens >= 1024 ? " residual=128 sinks=4 prerope=1" : " residual=32 sinks=4 prerope=1";
    int vg = D >= 128 ? 128 : D; /* value scales per 64/128 channels */
    for (int kb = 2; kb <= 8; kb++)
        for (int vb = 2; vb <= kb; vb++) {
            snprintf(k, sizeof k, "kivix:bits=%d,group=128,outliers=64", kb);
            snprintf(v, sizeof v, "kivix:bits=%d,group=%d", vb, vg);
            n = add(cs, n, D, k, v, res);
        }
    n = add(cs, n, D, "kivi:bits=4,group=32", "kivi:bits=4,group=32", res);
    /* per-token codecs: the same window and sinks, keys centred before RoPE
     * (prerope=2). Their block scales follow a key's largest channel, so a
     * model whose keys share a large per-channel offset (Qwen2-style key
     * biases) breaks them uncentred: SmolLM2 with such a bias, q4_0:rot=1
     * multiplies PPL by ~160, q8_0 +37%; centred +0.4% and +0.03%
     * (docs/quality.md, key outliers). */
    const char *res_tok = tokens >= 1024 ? " residual=128 sinks=4 prerope=2" : " residual=32 sinks=4 prerope=2";
    n = add(cs, n, D, "q8_0", "q8_0", res_tok);
    n = add(cs, n, D, "q4_0:rot=1", "q4_0:rot=1", res_tok);
    return n;
}

static int by_nominal_desc(const void *a, const void *b)
{
    const cand *x = a, *y = b;
    return x->nominal < y->nominal ? 1 : x->nominal > y->nominal ? -1 : strcmp(x->cfg, y->cfg);
}

/* measured bits per element: packed bytes per token per layer (residual
 * window excluded) plus the slot index, K and V averaged over layers */
double tune_measured_bpe(vq_cache *cache)
{
    vq_cache_shape sh;
    if (vq_cache_get_shape(cache, &sh) != VQ_OK)
        return NAN;
    double bits = 0, elems = 0;
    for (int l = 0; l < sh.n_layers; l++) {
        vq_cache_usage u;
        if (vq_cache_stats(cache, l, &u) != VQ_OK)
            return NAN;
        double D = sh.layers[l].head_dim, H = sh.layers[l].n_kv_heads;
        /* index per token, without the residual window's position table (a
         * fixed cost of the window, as in `ppl`) */
        double win_pos = (double)u.keys.residual_bytes / (2 * D) * 4;
        double idx = u.keys.stored_slots ? ((double)u.index_bytes - win_pos) / (double)u.keys.stored_slots : 0;
        const vq_cache_role_stats *rs[2] = { &u.keys, &u.values };
        double bpt = idx;
        for (int r = 0; r < 2; r++) {
            double packed = (double)(rs[r]->stored_slots - rs[r]->residual_tokens);
            if (packed <= 0)
                return NAN; /* nothing packed yet: not measurable */
            bpt += ((double)rs[r]->accounted_bytes - (double)rs[r]->residual_tokens * 2 * D) / packed;
        }
        bits += 8 * bpt * H;
        elems += 2 * D * H;
    }
    return elems > 0 ? bits / elems : NAN;
}

int cmd_tune(int argc, char **argv)
{
    const char *model = NULL, *file = NULL;
    double budget = 0, skip = 0.25, max_kl = TUNE_BREAKS_KL;
    int plan[2] = { 0, 0 }, vplan[2] = { 0, 0 }, groups[2] = { 0, 0 };
    const char *plan_keys = NULL, *plan_values = NULL, *plan_cache = NULL;
    int tokens_arg = 512, n_meas_arg = 6;
    int json = 0;
    char def_file[512];
    const char *d = getenv("VQ_SHARED_DATA");
    snprintf(def_file, sizeof def_file, "%s/wikitext-2-test.txt", d ? d : "../shared/data");
    const cli_opt opts[] = {
        { "model", CLI_STR, &model, "MODEL", "GGUF path or installed name", 0, 0, NULL, CLI_REQUIRED },
        { "budget", CLI_NUM, &budget, "B", "bits per element, 1..16 (K and V averaged, metadata and index included)",
          1, 16, NULL, CLI_REQUIRED },
        CLI_OPT_STR("file", &file, "TEXT", "text to measure on (default ../shared/data/wikitext-2-test.txt)"),
        CLI_OPT_NUM("skip", &skip, "F", 0, 0.9, "skip this fraction of the file first (default 0.25)"),
        CLI_OPT_INT("tokens", &tokens_arg, "N", 256, 8192, "tokens measured (default 512, at least 256)"),
        CLI_OPT_INT("candidates", &n_meas_arg, "K", 1, 16, "candidates measured (default 6)"),
        { "max-kl", CLI_NUM, &max_kl, "X", "KL (nats/token) beyond which a config breaks the model (default 0.5)", 0,
          10, NULL, CLI_ABOVE_LO },
        CLI_OPT_CALL("plan", store_plan, plan, "LOW,HIGH",
                     "a per-layer bit plan (kbits=/vbits=) by measured sensitivity,\n"
                     "each layer's keys and values at LOW or HIGH bits (kivix\n"
                     "unless --plan-keys / --plan-values say)"),
        CLI_OPT_CALL("vplan", store_vplan, vplan, "LOW,HIGH",
                     "with --plan: the values' two widths (default: --plan's;\n"
                     "LOW = HIGH: every value at that width)"),
        CLI_OPT_CALL("groups", store_groups, groups, "KG,VG",
                     "with --plan: kivix key tokens per block and value channels\n"
                     "per scale (default 128 and min(head_dim, 128))"),
        CLI_OPT_STR("plan-keys", &plan_keys, "SPEC",
                    "with --plan: the key codec without bits (default\n"
                    "kivix:group=KG,outliers=64)"),
        CLI_OPT_STR("plan-values", &plan_values, "SPEC",
                    "with --plan: the value codec without bits, e.g.\n"
                    "turboquant_mse:norm=8,lsq=1 (default kivix:group=VG)"),
        CLI_OPT_STR("plan-cache", &plan_cache, "FIELDS",
                    "with --plan: the cache fields after residual= (default\n"
                    "\"sinks=4 prerope=1\"; e.g. \"sinks=4 prerope=2\")"),
        CLI_OPT_FLAG("json", &json, "one JSON object on stdout"),
        CLI_OPT_END,
    };
    const cli_command cmd = { "tune", "--model MODEL --budget BITS [options]",
                              "Measures candidate cache configs on the model and picks the best within the budget.",
                              opts, NULL, NULL, 0, NULL };
    int prc = cli_parse(&cmd, argc, argv);
    if (prc >= 0)
        return prc;
    long tokens = tokens_arg, n_meas = n_meas_arg;
    int plan_lo = plan[0], plan_hi = plan[1];
    if (!file)
        file = def_file;
    size_t len = 0;
    char *text = eval_read_text(file, &len);
    if (!text) {
        cli_error("tune", "cannot read %s (--file TEXT)", file);
        return 1;
    }
    static cand cs[MAX_CAND];
    vq_model *m = NULL;
    vq_ctx *ref = NULL;
    vq_cache *ref_cache = NULL;
    int32_t *toks = NULL;
    float *ref_logits = NULL;
    int rc = 1, n_c = 0, n_run = 0;
    if (vq_model_load(model, &m) != VQ_OK) {
        cli_error("tune", "%s", vq_last_error());
        goto out;
    }
    vq_model_info info;
    vq_layer_shape li;
    vq_model_info_get(m, &info);
    if (vq_model_layer_info(m, 0, &li) != VQ_OK) {
        cli_error("tune", "%s", vq_last_error());
        goto out;
    }
    n_c = build_candidates(cs, li.head_dim, tokens);
    qsort(cs, (size_t)n_c, sizeof *cs, by_nominal_desc);
    size_t start = (size_t)(skip * (double)len);
    while (start < len && text[start] != '\n')
        start++;
    start += start < len;
    size_t n_tok = 0, use = len - start < (size_t)tokens * 16 ? len - start : (size_t)tokens * 16;
    if (vq_model_tokenize(m, text + start, use, 1, 0, &toks, &n_tok) != VQ_OK) {
        cli_error("tune", "%s", vq_last_error());
        goto out;
    }
    if (n_tok > (size_t)tokens)
        n_tok = (size_t)tokens;
    if (n_tok < 16) {
        cli_error("tune", "%s: too little text", file);
        goto out;
    }
    if (plan_lo) {
        const tune_plan_opts po = { plan_lo, plan_hi, vplan[0] ? vplan[0] : plan_lo, vplan[0] ? vplan[1] : plan_hi,
                                    groups[0], groups[1], plan_keys, plan_values, plan_cache };
        rc = tune_plan(m, model, toks, n_tok, budget, &po, json);
        goto out;
    }
    const int nv = info.n_vocab;
    if (eval_ctx_open(m, "keys=fp16 values=fp16", (int)n_tok, 0, &ref, &ref_cache) != VQ_OK ||
        !(ref_logits = malloc((size_t)BATCH * (size_t)nv * sizeof *ref_logits))) {
        cli_error("tune", "fp16 reference: %s", vq_last_error());
        goto out;
    }
    for (int i = 0; i < n_c && n_run < n_meas; i++) {
        if (cs[i].nominal > budget)
            continue;
        if (eval_ctx_open(m, cs[i].cfg, (int)n_tok, 0, &cs[i].ctx, &cs[i].cache) != VQ_OK ||
            !(cs[i].logits = malloc((size_t)BATCH * (size_t)nv * sizeof(float)))) {
            cli_error("tune", "candidate '%s': %s", cs[i].cfg, vq_last_error());
            goto out;
        }
        cs[i].ran = 1;
        n_run++;
    }
    if (!n_run) {
        cli_error("tune", "no candidate has %.2f bits per element or fewer (the smallest: %.2f)", budget,
                  n_c ? cs[n_c - 1].nominal : 0.0);
        goto out;
    }
    eval_progress pr;
    eval_progress_start(&pr, "tune", "tok");
    long scored = 0;
    for (size_t p0 = 0; p0 < n_tok; p0 += BATCH) {
        int cnt = (int)(n_tok - p0 < BATCH ? n_tok - p0 : BATCH);
        if (vq_ctx_forward(ref, toks + p0, cnt, ref_logits, VQ_LOGITS_ALL) != VQ_OK) {
            cli_error("tune", "%s", vq_ctx_error(ref));
            goto out;
        }
        for (int i = 0; i < n_c; i++) {
            if (!cs[i].ran)
                continue;
            if (vq_ctx_forward(cs[i].ctx, toks + p0, cnt, cs[i].logits, VQ_LOGITS_ALL) != VQ_OK) {
                cli_error("tune", "%s: %s", cs[i].cfg, vq_ctx_error(cs[i].ctx));
                goto out;
            }
            for (int t = 0; t < cnt; t++) {
                int same = 0;
                cs[i].kl += eval_kl(ref_logits + (size_t)t * (size_t)nv, cs[i].logits + (size_t)t * (size_t)nv, nv,
                                    &same);
                cs[i].top1 += same;
            }
        }
        scored += cnt;
        eval_progress_update(&pr, (double)(p0 + (size_t)cnt), (double)n_tok);
    }
    int best = -1;
    for (int i = 0; i < n_c; i++) {
        if (!cs[i].ran)
            continue;
        cs[i].kl /= (double)scored;
        cs[i].top1 /= (double)scored;
        cs[i].measured = tune_measured_bpe(cs[i].cache);
        if (!isfinite(cs[i].measured))
            cs[i].measured = cs[i].nominal; /* (cannot happen at >= 256 tokens) */
        cs[i].fits = cs[i].measured <= budget + 1e-9 && cs[i].kl <= max_kl;
        if (cs[i].fits && (best < 0 || cs[i].kl < cs[best].kl))
            best = i;
    }
    if (json) {
        printf("{\"model\": ");
        cli_json_print_str(stdout, model);
        printf(", \"budget\": %.4f, \"tokens\": %ld, \"max_kl\": %.4g, \"pick\": ", budget, scored, max_kl);
        if (best >= 0)
            printf("\"%s\"", cs[best].cfg);
        else
            printf("null");
        printf(", \"candidates\": [");
        for (int i = 0, k = 0; i < n_c; i++)
            if (cs[i].ran)
                printf("%s{\"cache\": \"%s\", \"bits_per_element\": %.4f, \"nominal_bits_per_element\": %.4f, "
                       "\"kl\": %.6g, \"top1\": %.4f, \"eligible\": %s}",
                       k++ ? ", " : "", cs[i].cfg, cs[i].measured, cs[i].nominal, cs[i].kl, cs[i].top1,
                       cs[i].fits ? "true" : "false");
        printf("]}\n");
    } else {
        printf("tune: %s, budget %.2f bits/element, %ld tokens of %s (after --skip %.2f), KL vs the fp16 cache\n",
               model, budget, scored, file, skip);
        printf("%-78s %8s %10s %7s  %s\n", "config", "bits/el", "KL (nats)", "top-1", "");
        for (int i = 0; i < n_c; i++)
            if (cs[i].ran)
                printf("%-78s %8.3f %10.4g %7.3f  %s\n", cs[i].cfg, cs[i].measured, cs[i].kl, cs[i].top1,
                       i == best ? "<- pick"
                       : cs[i].measured > budget + 1e-9 ? "over budget (measured)"
                       : cs[i].kl > max_kl              ? "breaks the model"
                                                        : "");
        if (best >= 0)
            printf("pick: %s\n  why: the lowest KL (%.4g nats/token, top-1 %.1f%%) of the %d measured candidates "
                   "within %.2f bits/element (measured %.3f, index and metadata included)\n",
                   cs[best].cfg, cs[best].kl, 100 * cs[best].top1, n_run, budget, cs[best].measured);
    }
    if (best < 0) {
        fprintf(stderr, "veloxquant tune: no measured candidate fits %.2f bits/element with KL <= %.3g: none is "
                        "picked (raise --budget)\n", budget, max_kl);
        goto out;
    }
    rc = 0;
out:
    for (int i = 0; i < n_c; i++) {
        eval_ctx_close(cs[i].ctx, cs[i].cache);
        free(cs[i].logits);
    }
    eval_ctx_close(ref, ref_cache);
    free(ref_logits);
    free(toks);
    vq_model_free(m);
    free(text);
    return rc;
}
