/* eval_common.c -- see eval_common.h. */
#include "eval_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

vq_status eval_ctx_open(const vq_model *m, const char *cfg_text, int max_tokens, int n_threads,
                        vq_ctx **ctx, vq_cache **cache)
{
    *ctx = NULL;
    *cache = NULL;
if (!cfg_text)
        return vq_ctx_create(m, max_tokens, n_threads, ctx);
    vq_cache_config *cfg = NULL;
    vq_status st = vq_cache_config_parse(cfg_text, &cfg);
    if (st != VQ_OK)
        return st;
    st = vq_cache_for_model(m, cfg, cache);
    vq_cache_config_free(cfg);
    if (st != VQ_OK)
        return st;
    st = vq_ctx_create_cached(m, *cache, max_tokens, n_threads, ctx);
    if (st != VQ_OK) {
        vq_cache_free(*cache);
        *cache = NULL;
    }
    return st;
}

void eval_ctx_close(vq_ctx *ctx, vq_cache *cache)
{
    vq_ctx_free(ctx);
    vq_cache_free(cache);
}

int eval_argmax(const float *x, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best])
            best = i;
    return best;
}

/* log-sum-exp of n logits, in double */
static double lse(const float *x, int n, double mx)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += exp((double)x[i] - mx);
    return mx + log(s);
}

double eval_kl(const float *ref, const float *x, int n, int *top1_same)
{
    int ar = eval_argmax(ref, n), ax = eval_argmax(x, n);
    if (top1_same)
        *top1_same = ar == ax;
    double lp = lse(ref, n, ref[ar]), lq = lse(x, n, x[ax]);
    double kl = 0;
    for (int i = 0; i < n; i++) {
        double a = (double)ref[i] - lp, b = (double)x[i] - lq;
        kl += exp(a) * (a - b);
    }
    return kl > 0 ? kl : 0;
}

void eval_progress_start(eval_progress *p, const char *label, const char *unit)
{
    p->label = label;
    p->unit = unit;
    p->t0 = p->last = now_s();
    p->printed = 0;
}

void eval_progress_update(eval_progress *p, double done, double total)
{
    double t = now_s(), el = t - p->t0;
    int final = done >= total;
    if (el < 2.0 && !(final && p->printed))
        return;
    if (!final && t - p->last < 1.0)
        return;
    p->last = t;
    p->printed = 1;
    double rate = el > 0 ? done / el : 0;
    double eta = rate > 0 ? (total - done) / rate : 0;
    fprintf(stderr, "%s: %.0f/%.0f (%.0f%%) %.1f %s/s, %s %.0fs\n", p->label, done, total,
            total > 0 ? 100.0 * done / total : 100.0, rate, p->unit, final ? "took" : "ETA",
            final ? el : eta);
}

char *eval_read_text(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        size_t k = fread(buf + n, 1, cap - n, f);
        n += k;
        if (n < cap)
            break;
        char *nb = realloc(buf, cap * 2 + 1);
        if (!nb) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = nb;
        cap *= 2;
    }
    fclose(f);
    if (buf) {
        buf[n] = 0;
        *len = n;
    }
    return buf;
}
