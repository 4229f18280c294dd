/* evict.c -- eviction policies and the sliding window.
 *
 * Policies (METHODS.md; parameters in veloxquant.h):
 *   streaming_llm  keep the `sinks` oldest and the `window` newest tokens
 *                  (StreamingLLM, Xiao et al. 2023).
 *   h2o            per KV head, each token's attention weights summed over
 *                  every query token and the query heads of that KV head
 *                  (the real queries of vq_cache_attend); over budget, the
 *                  lowest-scoring tokens outside the `sinks` oldest and the
 *                  `recent` newest go (Zhang et al. 2023, "Heavy-Hitter").
 *   tova           over budget, drop the tokens with the lowest weight of
 *                  the current (last) query, summed over the KV head's query
 *                  heads (Oren et al. 2024).
 *   snapkv         after a multi-token attend (the prompt), the last
 *                  `window` queries vote (summed weights); if more than
 *                  `budget` tokens are held, the observation window is kept
 *                  plus the budget-window best-voted older tokens (Li et al.
 *                  2024; no pooling of the votes here). Decode then grows.
 *   pyramidkv      snapkv with a per-layer budget falling linearly with
 *                  depth (mean = budget, last layer = min_ratio * budget).
 * Ties are broken towards evicting the older token. Each KV head evicts on
 * its own. Enforcement points: at the start of vq_cache_append (on the
 * tokens already held, with the new tokens' first position as reference
 * for the sliding window) and at the end of vq_cache_attend. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache_internal.h"

vq_status vq_cache_evict_parse(const char *text, vq_evict_params *ev, char *err)
{
    memset(ev, 0, sizeof *ev);
    if (!text)
        return vq_fail(err, VQ_ERR_INVALID_ARG, "evict: NULL");
    if (strcmp(text, "none") == 0)
        return VQ_OK;
    vq_spec sp;
    VQ_TRY(vq_spec_parse(text, &sp, err));
    const long BIG = 1L << 24;
    if (strcmp(sp.name, "streaming_llm") == 0) {
        ev->kind = VQ_EVICT_STREAMING;
        VQ_TRY(vq_spec_int(&sp, "sinks", 4, 0, BIG, &ev->sinks, err));
        VQ_TRY(vq_spec_int(&sp, "window", 1024, 1, BIG, &ev->window, err));
        ev->budget = ev->sinks + ev->window;
    } else if (strcmp(sp.name, "h2o") == 0) {
        ev->kind = VQ_EVICT_H2O;
        VQ_TRY(vq_spec_int(&sp, "budget", 1024, 1, BIG, &ev->budget, err));
        VQ_TRY(vq_spec_int(&sp, "sinks", 0, 0, BIG, &ev->sinks, err));
        VQ_TRY(vq_spec_int(&sp, "recent", ev->budget / 2, 0, BIG, &ev->recent, err));
        if (ev->sinks + ev->recent >= ev->budget)
            return vq_fail(err, VQ_ERR_INVALID_ARG, "h2o: sinks=%ld + recent=%ld must be below budget=%ld",
                           ev->sinks, ev->recent, ev->budget);
    } else if (strcmp(sp.name, "snapkv") == 0 || strcmp(sp.name, "pyramidkv") == 0) {
        int pyr = sp.name[0] == 'p';
        ev->kind = pyr ? VQ_EVICT_PYRAMIDKV : VQ_EVICT_SNAPKV;
        VQ_TRY(vq_spec_int(&sp, "budget", 1024, 2, BIG, &ev->budget, err));
        VQ_TRY(vq_spec_int(&sp, "window", 32, 1, BIG, &ev->window, err));
        if (pyr)
            VQ_TRY(vq_spec_float(&sp, "min_ratio", 0.5, 0.05, 1.0, &ev->min_ratio, err));
        if (ev->window >= ev->budget)
            return vq_fail(err, VQ_ERR_INVALID_ARG, "%s: window=%ld must be below budget=%ld", sp.name, ev->window,
                           ev->budget);
    } else if (strcmp(sp.name, "tova") == 0) {
        ev->kind = VQ_EVICT_TOVA;
        VQ_TRY(vq_spec_int(&sp, "budget", 1024, 1, BIG, &ev->budget, err));
    } else {
        return vq_fail(err, VQ_ERR_INVALID_ARG,
                       "evict: unknown policy '%s' (none, streaming_llm, h2o, snapkv, tova, pyramidkv)", sp.name);
    }
    return vq_spec_check_unused(&sp, err);
}

void vq_cache_evict_str(const vq_evict_params *ev, char *buf, size_t cap)
{
    switch (ev->kind) {
    case VQ_EVICT_STREAMING:
        snprintf(buf, cap, "streaming_llm:sinks=%ld,window=%ld", ev->sinks, ev->window);
        break;
    case VQ_EVICT_H2O:
        snprintf(buf, cap, "h2o:budget=%ld,sinks=%ld,recent=%ld", ev->budget, ev->sinks, ev->recent);
        break;
    case VQ_EVICT_SNAPKV:
        snprintf(buf, cap, "snapkv:budget=%ld,window=%ld", ev->budget, ev->window);
        break;
    case VQ_EVICT_PYRAMIDKV:
        snprintf(buf, cap, "pyramidkv:budget=%ld,window=%ld,min_ratio=%g", ev->budget, ev->window, ev->min_ratio);
        break;
    case VQ_EVICT_TOVA:
        snprintf(buf, cap, "tova:budget=%ld", ev->budget);
        break;
    default:
        snprintf(buf, cap, "none");
    }
}

/* ---- enforcement ---------------------------------------------------------- */

static size_t live_count(const vq_cache_head *H) { return H->n_packed - H->n_dead + H->n_res; }

static int cand_cmp_score(const void *a, const void *b)
{
    const vq_evict_cand *x = a, *y = b;
    if (x->score != y->score)
        return x->score < y->score ? -1 : 1;
    return x->slot < y->slot ? -1 : x->slot > y->slot; /* older first */
}

static int cand_cmp_slot_desc(const void *a, const void *b)
{
    const vq_evict_cand *x = a, *y = b;
    return x->slot < y->slot ? 1 : x->slot > y->slot ? -1 : 0;
}

static vq_status grow_ebuf(vq_cache *c, size_t n)
{
    if (n <= c->ebuf_cap)
        return VQ_OK;
    size_t nc = c->ebuf_cap ? c->ebuf_cap : 1024;
    while (nc < n)
        nc *= 2;
    vq_evict_cand *e = realloc(c->ebuf, nc * sizeof *e);
    if (!e)
        return vq_fail(c->err, VQ_ERR_NOMEM, "cache: out of memory for eviction");
    c->ebuf = e;
    c->ebuf_cap = nc;
    return VQ_OK;
}

/* Evict `k` live tokens with the lowest scores among live ranks
 * [protect_old, live - protect_new). */
static vq_status evict_lowest(vq_cache *c, vq_cache_layer *L, vq_cache_head *H, size_t k,
                              size_t protect_old, size_t protect_new)
{
    size_t live = live_count(H), n = vq_head_slots(H);
    if (k == 0 || protect_old + protect_new >= live)
        return VQ_OK;
    VQ_TRY(grow_ebuf(c, live));
    size_t nc = 0, rank = 0;
    for (size_t i = 0; i < n; i++) {
        if (!vq_head_alive(H, i))
            continue;
        if (rank >= protect_old && rank < live - protect_new) {
            c->ebuf[nc].score = *vq_head_score(H, i);
            c->ebuf[nc].slot = i;
            nc++;
        }
        rank++;
    }
    if (k > nc)
        k = nc;
    if (k == 1) {
        size_t best = 0;
        for (size_t j = 1; j < nc; j++)
            if (cand_cmp_score(&c->ebuf[j], &c->ebuf[best]) < 0)
                best = j;
        c->ebuf[0] = c->ebuf[best];
    } else {
        qsort(c->ebuf, nc, sizeof *c->ebuf, cand_cmp_score);
        qsort(c->ebuf, k, sizeof *c->ebuf, cand_cmp_slot_desc); /* residual slots shift */
    }
    for (size_t j = 0; j < k; j++)
        VQ_TRY(vq_cache_kill_slot(c, H, c->ebuf[j].slot, (size_t)L->shape.head_dim));
    return VQ_OK;
}

vq_status vq_cache_enforce(vq_cache *c, int l, int32_t ref_pos, int after_attend)
{
    vq_cache_layer *L = &c->layers[l];
    const vq_evict_params *ev = &c->ev;
    const size_t D = (size_t)L->shape.head_dim;
    for (int h = 0; h < L->shape.n_kv_heads; h++) {
        vq_cache_head *H = &L->heads[h];
        /* sliding window: a token at pos <= ref - window is visible to no
         * query at ref or later */
        if (L->shape.window > 0 && ref_pos >= L->shape.window) {
            int32_t lim = ref_pos - L->shape.window;
            for (size_t i = vq_head_slots(H); i-- > 0;)
                if (vq_head_alive(H, i) && vq_head_pos(H, i) <= lim)
                    VQ_TRY(vq_cache_kill_slot(c, H, i, D));
        }
        size_t live = live_count(H);
        size_t budget = (size_t)L->budget;
        switch (ev->kind) {
        case VQ_EVICT_STREAMING:
            if (live > budget) {
                /* kill live ranks [sinks, live - window), newest first */
                size_t rank = live;
                for (size_t i = vq_head_slots(H); i-- > 0;) {
                    if (!vq_head_alive(H, i))
                        continue;
                    rank--;
                    if (rank >= (size_t)ev->sinks && rank < live - (size_t)ev->window)
                        VQ_TRY(vq_cache_kill_slot(c, H, i, D));
                }
            }
            break;
        case VQ_EVICT_H2O:
            if (live > budget)
                VQ_TRY(evict_lowest(c, L, H, live - budget, (size_t)ev->sinks, (size_t)ev->recent));
            break;
        case VQ_EVICT_TOVA:
            if (live > budget)
                VQ_TRY(evict_lowest(c, L, H, live - budget, 0, 0));
            break;
        case VQ_EVICT_SNAPKV:
        case VQ_EVICT_PYRAMIDKV:
            if (after_attend == 2 && live > budget)
                VQ_TRY(evict_lowest(c, L, H, live - budget, 0, (size_t)ev->window));
            break;
        default:
            break;
        }
        vq_cache_compact(c, L, H, 0);
    }
    return VQ_OK;
}
