/* sampler.c -- token sampling (semantics: veloxquant.h, "Sampling").
 * All scratch (candidates, penalty stamps) is allocated at creation, so
 * sampling a token allocates nothing. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/rng.h"
#include "veloxquant.h"

typedef struct {
    float logit;
    int32_t id;
} cand;

struct vq_sampler {
    vq_sampler_params p;
    int n_vocab;
    vq_rng rng;
    cand *c;          /* [n_vocab] */
    float *prob;      /* [n_vocab] */
    uint32_t *stamp;  /* [n_vocab] penalty de-duplication */
    uint32_t epoch;
};

vq_sampler_params vq_sampler_defaults(void)
{
    vq_sampler_params p = { 0.8f, 40, 0.95f, 0.05f, 1.0f, 64, 42 };
    return p;
}

vq_status vq_sampler_create(const vq_sampler_params *p, int n_vocab, vq_sampler **out)
{
    if (!p || !out)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "sampler: NULL argument");
    *out = NULL;
    if (n_vocab < 1)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "sampler: n_vocab %d < 1", n_vocab);
    if (!(p->temperature >= 0 || p->temperature < 0) || isinf(p->temperature))
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "sampler: temperature is not finite");
    if (p->top_k < 0)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "sampler: top_k %d < 0", p->top_k);
    if (!(p->top_p > 0 && p->top_p <= 1))
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "sampler: top_p %g out of range (0, 1]", p->top_p);
    if (!(p->min_p >= 0 && p->min_p <= 1))
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "sampler: min_p %g out of range [0, 1]", p->min_p);
    if (!(p->repeat_penalty > 0 && p->repeat_penalty < 1e6f))
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "sampler: repeat_penalty %g must be > 0",
                       p->repeat_penalty);
    if (p->repeat_last_n < 0)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "sampler: repeat_last_n %d < 0", p->repeat_last_n);
    vq_sampler *s = calloc(1, sizeof *s);
    if (!s)
        return vq_fail(NULL, VQ_ERR_NOMEM, "sampler: out of memory");
    s->p = *p;
    s->n_vocab = n_vocab;
    s->c = malloc((size_t)n_vocab * sizeof *s->c);
    s->prob = malloc((size_t)n_vocab * sizeof *s->prob);
    s->stamp = calloc((size_t)n_vocab, sizeof *s->stamp);
    if (!s->c || !s->prob || !s->stamp) {
        vq_sampler_free(s);
        return vq_fail(NULL, VQ_ERR_NOMEM, "sampler: out of memory for %d candidates", n_vocab);
    }
    vq_rng_seed(&s->rng, p->seed);
    *out = s;
    return VQ_OK;
}

void vq_sampler_free(vq_sampler *s)
{
    if (!s)
        return;
    free(s->c);
    free(s->prob);
    free(s->stamp);
    free(s);
}

void vq_sampler_reseed(vq_sampler *s, uint64_t seed)
{
    if (s)
        vq_rng_seed(&s->rng, seed);
}

/* larger logit first; equal logits: lower id first (deterministic) */
static int cand_before(const cand *a, const cand *b)
{
    return a->logit > b->logit || (a->logit == b->logit && a->id < b->id);
}

static int cand_cmp(const void *x, const void *y)
{
    const cand *a = x, *b = y;
    return cand_before(a, b) ? -1 : cand_before(b, a) ? 1 : 0;
}

static void cand_swap(cand *a, cand *b)
{
    cand t = *a;
    *a = *b;
    *b = t;
}

/* Move the k best candidates of c[0..n) to c[0..k), in any order
 * (quickselect, Lomuto partition around the middle element). Every round
 * shrinks [lo, hi) by at least the pivot, so it always terminates; the
 * order is strict (ties broken by id), so duplicates cannot stall it. */
static void select_top(cand *c, size_t n, size_t k)
{
    size_t lo = 0, hi = n;
    while (hi - lo > 1) {
        cand_swap(&c[lo + (hi - lo) / 2], &c[hi - 1]);
        const cand pivot = c[hi - 1];
        size_t store = lo;
        for (size_t i = lo; i < hi - 1; i++)
            if (cand_before(&c[i], &pivot))
                cand_swap(&c[i], &c[store++]);
        cand_swap(&c[store], &c[hi - 1]);
        /* c[lo..store) beat the pivot, c[store] is it, c(store..hi) lose */
        if (k == store || k == store + 1)
            return;
        if (k < store)
            hi = store;
        else
            lo = store + 1;
    }
}

int32_t vq_sampler_sample(vq_sampler *s, const float *logits, const int32_t *history,
                          size_t n_hist)
{
    size_t n = (size_t)s->n_vocab;
    const int penalize = s->p.repeat_penalty != 1.0f && history && n_hist && s->p.repeat_last_n > 0;
    if (!(s->p.temperature > 0) && !penalize) { /* greedy, nothing to change: the logits as they are */
        size_t best = 0;
        for (size_t i = 1; i < n; i++)
            if (logits[i] > logits[best])
                best = i;
        return (int32_t)best;
    }
    for (size_t i = 0; i < n; i++) {
        s->c[i].logit = logits[i];
        s->c[i].id = (int32_t)i;
    }
    /* 1. repetition penalty, each distinct recent token once */
    if (penalize) {
        if (++s->epoch == 0) { /* stamp wrap-around: clear */
            memset(s->stamp, 0, n * sizeof *s->stamp);
            s->epoch = 1;
        }
        size_t from = n_hist > (size_t)s->p.repeat_last_n ? n_hist - (size_t)s->p.repeat_last_n : 0;
        for (size_t i = from; i < n_hist; i++) {
            int32_t t = history[i];
            if (t < 0 || (size_t)t >= n || s->stamp[t] == s->epoch)
                continue;
            s->stamp[t] = s->epoch;
            float l = s->c[t].logit;
            s->c[t].logit = l > 0 ? l / s->p.repeat_penalty : l * s->p.repeat_penalty;
        }
    }
    /* 2. greedy */
    if (!(s->p.temperature > 0)) {
        size_t best = 0;
        for (size_t i = 1; i < n; i++)
            if (s->c[i].logit > s->c[best].logit)
                best = i;
        return s->c[best].id;
    }
    /* 3. top-k */
    if (s->p.top_k > 0 && (size_t)s->p.top_k < n) {
        select_top(s->c, n, (size_t)s->p.top_k);
        n = (size_t)s->p.top_k;
    }
    /* order the survivors (needed by top-p; cheap after top-k) */
    qsort(s->c, n, sizeof *s->c, cand_cmp);
    /* probabilities at temperature 1 */
    float mx = s->c[0].logit;
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        s->prob[i] = expf(s->c[i].logit - mx);
        sum += s->prob[i];
    }
    /* 4. top-p */
    if (s->p.top_p < 1.0f) {
        double acc = 0;
        size_t keep = n;
        for (size_t i = 0; i < n; i++) {
            acc += s->prob[i] / sum;
            if (acc >= s->p.top_p) {
                keep = i + 1;
                break;
            }
        }
        n = keep;
    }
    /* 5. min-p (prob[0] is the top probability, unnormalised = 1) */
    if (s->p.min_p > 0) {
        size_t keep = 1;
        while (keep < n && s->prob[keep] >= s->p.min_p * s->prob[0])
            keep++;
        n = keep;
    }
    /* 6. temperature and the draw */
    float inv_t = 1.0f / s->p.temperature;
    sum = 0;
    for (size_t i = 0; i < n; i++) {
        s->prob[i] = expf((s->c[i].logit - mx) * inv_t);
        sum += s->prob[i];
    }
    double u = (double)vq_rng_uniform(&s->rng) * sum, acc = 0;
    for (size_t i = 0; i < n; i++) {
        acc += s->prob[i];
        if (u < acc)
            return s->c[i].id;
    }
    return s->c[n - 1].id;
}
