/* tune_plan.c -- `veloxquant tune --plan LOW,HIGH`: a per-layer bit plan
 * for keys and values (the config's kbits= / vbits= lists) chosen by
 * measured sensitivity under a bit budget (after KVTuner and similar).
 *
 * Codecs: keys kivix:bits=B,group=KG,outliers=64 (per-channel, sparse
 * outliers; KG = 128 unless --groups says), values kivix:bits=B,group=VG
 * (VG = min(D,128) unless --groups says), or any codec with a bits
 * parameter given by --plan-keys / --plan-values (a spec without bits,
 * e.g. turboquant_mse:norm=8,lsq=1; bits=B is appended); every key gets
 * LOW or HIGH bits of --plan, every value those of --vplan (default:
 * --plan's; --vplan B,B: every value at B bits, not measured). --plan-cache
 * sets the cache fields after residual= (default "sinks=4 prerope=1").
 *
 * 1. Sensitivity: for each (layer l, role r), a cache with every layer at
 *    HIGH except (l, r) at LOW runs teacher-forced over the tokens; its mean
 *    KL against the fp16 cache is s(l, r).
 * 2. Plan: start with everything at HIGH; while the nominal bits per
 *    element (the codecs' byte formulas, K and V averaged over layers and
 *    heads) exceed the budget, move to LOW the (l, r) still at HIGH with the
 *    smallest s(l, r) per bit saved (each role at its own LOW and HIGH). If everything at LOW is still over the
 *    budget, there is no plan.
 * 3. The planned config is measured the same way (KL, top-1, measured bits
 *    per element) and printed, ready for `--cache`.
 * The reference logits are kept for all tokens (tokens x vocabulary
 * floats), so each candidate runs alone. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "eval_common.h"
#include "util/json_write.h"
#include "tune.h"

#define BATCH 32

static int value_group(const tune_plan_opts *g, int D) { return g->vgroup ? g->vgroup : (D >= 128 ? 128 : D); }

/* the codec spec of role r (0 keys, 1 values) at `bits` */
static void role_spec(const tune_plan_opts *g, int r, int D, int bits, char *out, size_t cap)
{
    const char *t = r ? g->vspec : g->kspec;
    if (t)
        snprintf(out, cap, "%s%cbits=%d", t, strchr(t, ':') ? ',' : ':', bits);
    else if (r)
        snprintf(out, cap, "kivix:bits=%d,group=%d", bits, value_group(g, D));
    else
        snprintf(out, cap, "kivix:bits=%d,group=%d,outliers=64", bits, g->kgroup ? g->kgroup : 128);
}

static int role_low(const tune_plan_opts *g, int r) { return r ? g->vlow : g->klow; }
static int role_high(const tune_plan_opts *g, int r) { return r ? g->vhigh : g->khigh; }

static double codec_bpt(const char *spec, int D, vq_role role)
{
    vq_codec *c = NULL;
    if (vq_codec_create(spec, D, role, 1, &c) != VQ_OK)
        return NAN;
    double b = (double)vq_codec_bytes_per_token(c);
    vq_codec_free(c);
    return b;
}

/* the config text of a plan: bits[l] keys, bits[L + l] values */
static void plan_text(const int *bits, int L, int D, const tune_plan_opts *g, const char *res, char *out, size_t cap)
{
    char ks[160], vs[160];
    role_spec(g, 0, D, bits[0], ks, sizeof ks);
    role_spec(g, 1, D, bits[L], vs, sizeof vs);
    size_t o = (size_t)snprintf(out, cap, "keys=%s values=%s%s", ks, vs, res);
    for (int r = 0; r < 2 && o < cap; r++) {
        o += (size_t)snprintf(out + o, cap - o, " %s=", r ? "vbits" : "kbits");
        for (int l = 0; l < L && o < cap; l++)
            o += (size_t)snprintf(out + o, cap - o, "%s%d", l ? "," : "", bits[r * L + l]);
    }
}

/* KL and top-1 of one config over the tokens, against the kept reference */
static vq_status measure(const vq_model *m, const char *cfg, const int32_t *toks, size_t n, const float *ref, int nv,
                         double *kl, double *top1, double *bpe)
{
    vq_ctx *ctx = NULL;
    vq_cache *cache = NULL;
    float *lg = malloc((size_t)BATCH * (size_t)nv * sizeof *lg);
    vq_status st = lg ? eval_ctx_open(m, cfg, (int)n, 0, &ctx, &cache) : VQ_ERR_NOMEM;
    double k = 0, t1 = 0;
    for (size_t p0 = 0; st == VQ_OK && p0 < n; p0 += BATCH) {
        int cnt = (int)(n - p0 < BATCH ? n - p0 : BATCH);
        st = vq_ctx_forward(ctx, toks + p0, cnt, lg, VQ_LOGITS_ALL);
        for (int t = 0; st == VQ_OK && t < cnt; t++) {
            int same = 0;
            k += eval_kl(ref + (p0 + (size_t)t) * (size_t)nv, lg + (size_t)t * (size_t)nv, nv, &same);
            t1 += same;
        }
    }
    if (st == VQ_OK) {
        *kl = k / (double)n;
        *top1 = t1 / (double)n;
        *bpe = tune_measured_bpe(cache);
    } else if (ctx) {
        cli_error("tune", "%s: %s", cfg, vq_ctx_error(ctx));
    } else {
        cli_error("tune", "%s: %s", cfg, vq_last_error());
    }
    eval_ctx_close(ctx, cache);
    free(lg);
    return st;
}

int tune_plan(const vq_model *m, const char *model, const int32_t *toks, size_t n, double budget,
              const tune_plan_opts *opts, int json)
{
    const tune_plan_opts g = *opts;
    vq_model_info info;
    vq_model_info_get(m, &info);
    const int L = info.n_layers, nv = info.n_vocab;
    int D = 0;
    double *share = calloc((size_t)L, sizeof *share), *sens = calloc(2 * (size_t)L, sizeof *sens);
    double *save = calloc(2 * (size_t)L, sizeof *save), *bpt_hi = calloc(2 * (size_t)L, sizeof *bpt_hi);
    int *bits = malloc(2 * (size_t)L * sizeof *bits);
    float *ref = malloc(n * (size_t)nv * sizeof *ref);
    char *cfg = malloc(16384);
    char res[256];
    snprintf(res, sizeof res, " residual=%d %s", n >= 1024 ? 128 : 32, g.cache ? g.cache : "sinks=4 prerope=1");
    int rc = 1;
    if (!share || !sens || !save || !bpt_hi || !bits || !ref || !cfg) {
        cli_error("tune", "out of memory (reference logits: %zu x %d floats)", n, nv);
        goto out;
    }
    /* per-layer element shares and bytes at each width */
    double elems = 0;
    for (int l = 0; l < L; l++) {
        vq_layer_shape li;
        if (vq_model_layer_info(m, l, &li) != VQ_OK)
            goto out;
        D = li.head_dim;
        share[l] = (double)li.n_kv_heads * li.head_dim;
        elems += 2 * share[l];
        char sp[2][160];
        for (int r = 0; r < 2; r++) {
            double b[2];
            for (int w = 0; w < 2; w++) {
                role_spec(&g, r, li.head_dim, w ? role_high(&g, r) : role_low(&g, r), sp[w], sizeof sp[w]);
                b[w] = codec_bpt(sp[w], li.head_dim, r ? VQ_ROLE_VALUE : VQ_ROLE_KEY);
            }
            if (!isfinite(b[0]) || !isfinite(b[1])) {
                cli_error("tune", "layer %d: %s or %s refused for head_dim %d", l, sp[0], sp[1], li.head_dim);
                goto out;
            }
            bpt_hi[r * L + l] = 8 * b[1] * li.n_kv_heads;
            save[r * L + l] = 8 * (b[1] - b[0]) * li.n_kv_heads; /* bits per token saved */
        }
    }
    /* reference logits of every token (fp16 cache) */
    {
        vq_ctx *rc_ = NULL;
        vq_cache *rcache = NULL;
        vq_status st = eval_ctx_open(m, "keys=fp16 values=fp16", (int)n, 0, &rc_, &rcache);
        for (size_t p0 = 0; st == VQ_OK && p0 < n; p0 += BATCH) {
            int cnt = (int)(n - p0 < BATCH ? n - p0 : BATCH);
            st = vq_ctx_forward(rc_, toks + p0, cnt, ref + p0 * (size_t)nv, VQ_LOGITS_ALL);
        }
        eval_ctx_close(rc_, rcache);
        if (st != VQ_OK) {
            cli_error("tune", "fp16 reference: %s", vq_last_error());
            goto out;
        }
    }
    eval_progress pr;
    eval_progress_start(&pr, "tune plan", "runs");
    for (int i = 0; i < 2 * L; i++) {
        if (role_low(&g, i >= L) == role_high(&g, i >= L)) { /* one width: nothing to measure */
            sens[i] = 0;
            eval_progress_update(&pr, i + 1, 2 * L);
            continue;
        }
        for (int j = 0; j < 2 * L; j++)
            bits[j] = j == i ? role_low(&g, j >= L) : role_high(&g, j >= L);
        plan_text(bits, L, D, &g, res, cfg, 16384);
        double t1, bpe;
        if (measure(m, cfg, toks, n, ref, nv, &sens[i], &t1, &bpe) != VQ_OK)
            goto out;
        eval_progress_update(&pr, i + 1, 2 * L);
    }
    /* greedy: cheapest harm per bit saved goes to LOW first */
    double total = 0;
    for (int i = 0; i < 2 * L; i++) {
        bits[i] = role_high(&g, i >= L);
        total += bpt_hi[i];
    }
    while (total / elems > budget + 1e-12) {
        int best = -1;
        for (int i = 0; i < 2 * L; i++)
            if (bits[i] == role_high(&g, i >= L) && save[i] > 0 &&
                (best < 0 || sens[i] / save[i] < sens[best] / save[best]))
                best = i;
        if (best < 0)
            break;
        bits[best] = role_low(&g, best >= L);
        total -= save[best];
    }
    if (total / elems > budget + 1e-12) {
        cli_error("tune", "no plan: every layer at %d/%d bits (K/V) is still %.3f bits/element > %.2f", g.klow,
                  g.vlow, total / elems, budget);
        goto out;
    }
    plan_text(bits, L, D, &g, res, cfg, 16384);
    double kl, t1, bpe;
    if (measure(m, cfg, toks, n, ref, nv, &kl, &t1, &bpe) != VQ_OK)
        goto out;
    if (json) {
        printf("{\"model\": ");
        cli_json_print_str(stdout, model);
        printf(", \"budget\": %.4f, \"tokens\": %zu, \"low\": %d, \"high\": %d, \"vlow\": %d, \"vhigh\": %d, "
               "\"plan\": \"%s\", \"nominal_bits_per_element\": %.4f, \"bits_per_element\": %.4f, \"kl\": %.6g, "
               "\"top1\": %.4f, \"sensitivity\": [",
               budget, n, g.klow, g.khigh, g.vlow, g.vhigh, cfg, total / elems, bpe, kl, t1);
        for (int i = 0; i < 2 * L; i++)
            printf("%s{\"layer\": %d, \"role\": \"%s\", \"kl_at_low\": %.6g, \"bits\": %d}", i ? ", " : "", i % L,
                   i < L ? "keys" : "values", sens[i], bits[i]);
        printf("]}\n");
    } else {
        printf("tune --plan %d,%d --vplan %d,%d: %s, %zu tokens; KL vs fp16 with one layer's keys or values at "
               "LOW bits (the rest at HIGH):\n",
               g.klow, g.khigh, g.vlow, g.vhigh, model, n);
        printf("layer  keys KL    values KL   plan K/V\n");
        for (int l = 0; l < L; l++)
            printf("%5d  %9.4g  %9.4g   %d/%d\n", l, sens[l], sens[L + l], bits[l], bits[L + l]);
        printf("plan: %s\n  nominal %.3f bits/element (budget %.2f), measured %.3f; KL %.4g nats/token, top-1 "
               "%.1f%%\n",
               cfg, total / elems, budget, bpe, kl, 100 * t1);
        printf("  why: layers and roles whose LOW-bit version harmed the model least per bit saved were lowered "
               "first, until the budget held\n");
    }
    rc = kl <= TUNE_BREAKS_KL ? 0 : 1;
    if (rc)
        fprintf(stderr, "veloxquant tune: the plan's KL %.3g exceeds %.3g: it would break the model; not "
                        "recommended (raise --budget or the bit levels)\n", kl, TUNE_BREAKS_KL);
out:
    free(share), free(sens), free(save), free(bpt_hi), free(bits), free(ref), free(cfg);
    return rc;
}
