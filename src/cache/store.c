/* store.c -- cache creation, paged storage of packed codes, the fp16
 * residual window, compaction, gather and byte accounting.
 * (Structures and the storage model: cache_internal.h, docs/cache.md.) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache_internal.h"
#include "cache/prerope.h"
#include "cache/sinks.h"
#include "codec/calib_set.h"
#include "core/fp16.h"
#include "core/mem.h"
#include "core/rng.h"

/* ---- small helpers ------------------------------------------------------ */

static size_t gcd_sz(size_t a, size_t b)
{
    while (b) {
        size_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

static size_t bpt(const vq_codec *c) { return vq_codec_bytes_per_token(c); }

/* drop a `calib=...` parameter from a spec (the saved state replaces it) */
void vq_cache_strip_calib(char *spec)
{
    vq_spec sp;
    if (vq_spec_parse(spec, &sp, NULL) != VQ_OK)
        return;
    size_t cap = VQ_SPEC_MAX_LEN;
    size_t o = (size_t)snprintf(spec, cap, "%s", sp.name);
    int first = 1;
    for (int i = 0; i < sp.n && o < cap; i++) {
        if (strcmp(sp.kv[i].key, "calib") == 0)
            continue;
        o += (size_t)snprintf(spec + o, cap - o, "%c%s=%s", first ? ':' : ',', sp.kv[i].key, sp.kv[i].val);
        first = 0;
    }
}

static vq_status check_shape(const vq_cache_shape *s, char *err)
{
    if (!s || !s->layers)
        return vq_fail(err, VQ_ERR_INVALID_ARG, "cache shape: NULL");
    if (s->n_layers < 1 || s->n_layers > VQ_MAX_LAYERS)
        return vq_fail(err, VQ_ERR_INVALID_ARG, "cache shape: n_layers=%d out of range [1, %d]", s->n_layers,
                       VQ_MAX_LAYERS);
    for (int l = 0; l < s->n_layers; l++) {
        const vq_layer_shape *ls = &s->layers[l];
        if (ls->n_kv_heads < 1 || ls->n_kv_heads > 1024)
            return vq_fail(err, VQ_ERR_INVALID_ARG, "cache shape: layer %d: n_kv_heads=%d out of range [1, 1024]", l,
                           ls->n_kv_heads);
        if (ls->n_q_heads < ls->n_kv_heads || ls->n_q_heads % ls->n_kv_heads != 0 ||
            ls->n_q_heads / ls->n_kv_heads > 64)
            return vq_fail(err, VQ_ERR_INVALID_ARG,
                           "cache shape: layer %d: n_q_heads=%d is not a multiple (<= 64x) of n_kv_heads=%d", l,
                           ls->n_q_heads, ls->n_kv_heads);
        if (ls->head_dim < 32 || ls->head_dim > 256 || ls->head_dim % 32)
            return vq_fail(err, VQ_ERR_INVALID_ARG, "cache shape: layer %d: head_dim=%d unsupported", l, ls->head_dim);
        if (!(ls->softcap >= 0.0f && ls->softcap < 1e30f))
            return vq_fail(err, VQ_ERR_INVALID_ARG, "cache shape: layer %d: softcap=%g invalid", l, (double)ls->softcap);
        if (ls->window < 0)
            return vq_fail(err, VQ_ERR_INVALID_ARG, "cache shape: layer %d: window=%d is negative", l, ls->window);
    }
    return VQ_OK;
}

/* ---- create / free ------------------------------------------------------ */

static vq_status make_codec(vq_cache *c, int l, vq_role role, int strip, vq_codec **out)
{
    char spec[VQ_SPEC_MAX_LEN];
    VQ_TRY(vq_cache_config_layer_spec(c->cfg, l, c->n_layers, role, spec, sizeof spec, c->err));
    /* calib=FILE naming a whole-model calibration file: each layer takes
     * its own entry (codec/calib_set.h) */
    char model_calib[VQ_SPEC_MAX_LEN];
    int per_layer = !strip && vq_calib_set_in_spec(spec, model_calib, sizeof model_calib);
    if (strip || per_layer)
        vq_cache_strip_calib(spec);
    int D = c->layers[l].shape.head_dim;
    vq_status st = VQ_OK;
    uint64_t seed = vq_seed_mix(c->seed, (uint64_t)l * 2 + (uint64_t)role);
    if (vq_cross_codec(c, l, role, seed, out, &st))
        return st;
    st = vq_codec_create(spec, D, role, seed, out);
    if (st != VQ_OK)
        return vq_fail(c->err, st, "cache layer %d %s (%s): %s", l, role == VQ_ROLE_KEY ? "keys" : "values", spec,
                       vq_last_error());
    if (per_layer && (st = vq_calib_set_apply(model_calib, l, c->n_layers, c->fingerprint, *out, c->err)) != VQ_OK) {
        vq_fail(NULL, st, "%s", c->err);
        return st; /* *out is freed with the cache */
    }
    return VQ_OK;
}

static vq_status setup_layer(vq_cache *c, int l, int strip)
{
    vq_cache_layer *L = &c->layers[l];
    int D = L->shape.head_dim;
    VQ_TRY(make_codec(c, l, VQ_ROLE_KEY, strip, &L->kc));
    VQ_TRY(make_codec(c, l, VQ_ROLE_VALUE, strip, &L->vc));
    if (vq_codec_create("fp16", D, VQ_ROLE_KEY, 0, &L->fk) != VQ_OK ||
        vq_codec_create("fp16", D, VQ_ROLE_VALUE, 0, &L->fv) != VQ_OK)
        return vq_fail(c->err, VQ_ERR_NOMEM, "cache layer %d: cannot create the residual fp16 codecs", l);
    size_t bk = vq_codec_block_tokens(L->kc), bv = vq_codec_block_tokens(L->vc);
    L->group = bk / gcd_sz(bk, bv) * bv;
    size_t page = (size_t)c->cfg->page;
    if (!page) /* auto (cache_internal.h) */
        page = L->shape.window > 0 || c->ev.kind != VQ_EVICT_NONE || c->cross ? VQ_CACHE_PAGE_SHORT
                                                                             : VQ_CACHE_PAGE_LONG;
    L->page_tokens = (page + L->group - 1) / L->group * L->group;
    L->kpage_bytes = L->page_tokens * bpt(L->kc);
    L->vpage_bytes = L->page_tokens * bpt(L->vc);
    L->res_cap = (size_t)c->cfg->residual + L->group + vq_cache_layer_sinks(c, L);
    L->last_pos = -1;
    L->budget = c->ev.budget;
    if (c->ev.kind == VQ_EVICT_PYRAMIDKV) {
        /* PyramidKV: budgets fall linearly with depth from b_max to
         * b_min = min_ratio * budget, b_max + b_min = 2 * budget (so the
         * mean over layers is `budget`); never below the observation
         * window + 1. */
        double bmin = c->ev.min_ratio * (double)c->ev.budget, bmax = 2.0 * (double)c->ev.budget - bmin;
        double t = c->n_layers > 1 ? (double)l / (double)(c->n_layers - 1) : 0.0;
        long b = lround(bmax + (bmin - bmax) * t);
        L->budget = b < c->ev.window + 1 ? c->ev.window + 1 : b;
    }
    L->heads = calloc((size_t)L->shape.n_kv_heads, sizeof *L->heads);
    if (!L->heads)
        return vq_fail(c->err, VQ_ERR_NOMEM, "cache: out of memory");
    for (int h = 0; h < L->shape.n_kv_heads; h++) {
        vq_cache_head *H = &L->heads[h];
        H->rk = malloc(L->res_cap * 2 * (size_t)D);
        H->rv = malloc(L->res_cap * 2 * (size_t)D);
        H->rpos = malloc(L->res_cap * sizeof *H->rpos);
        H->rscore = vq_cache_uses_scores(c) ? malloc(L->res_cap * sizeof *H->rscore) : NULL;
        if (!H->rk || !H->rv || !H->rpos || (vq_cache_uses_scores(c) && !H->rscore))
            return vq_fail(c->err, VQ_ERR_NOMEM, "cache: out of memory for the residual window");
    }
    return VQ_OK;
}

vq_status vq_cache_create_ex(const vq_cache_config *cfg, const vq_cache_shape *shape,
                             uint64_t seed, int strip, vq_cache **out)
{
    if (!out)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "vq_cache_create: out is NULL");
    *out = NULL;
    if (!cfg)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "vq_cache_create: config is NULL");
    /* cfg->cross is "none" or the canonical spec of a registered method:
     * config.c stores only what vq_cache_cross_parse accepted */
    VQ_TRY(check_shape(shape, NULL));
    vq_cache *c = calloc(1, sizeof *c);
    if (!c)
        return vq_fail(NULL, VQ_ERR_NOMEM, "vq_cache_create: out of memory");
    c->seed = seed;
    c->attn_chunk = VQ_CACHE_ATTN_CHUNK;
    c->attn_items = VQ_CACHE_ATTN_ITEMS;
    c->fingerprint = shape->fingerprint;
    c->n_layers = shape->n_layers;
    vq_status st = vq_cache_config_copy(cfg, &c->cfg);
    if (st == VQ_OK)
        st = vq_cache_evict_parse(c->cfg->evict, &c->ev, c->err);
    if (st == VQ_OK) {
        c->layers = calloc((size_t)c->n_layers, sizeof *c->layers);
        c->shapes = calloc((size_t)c->n_layers, sizeof *c->shapes);
        if (!c->layers || !c->shapes)
            st = vq_fail(c->err, VQ_ERR_NOMEM, "vq_cache_create: out of memory");
    }
    for (int l = 0; st == VQ_OK && l < c->n_layers; l++)
        c->layers[l].shape = c->shapes[l] = shape->layers[l];
    if (st == VQ_OK)
        st = vq_cache_sinks_check(c, c->err);
    if (st == VQ_OK)
        st = vq_cache_prerope_check(c, c->err);
    if (st == VQ_OK)
        st = vq_cross_setup(c, c->err);
    for (int l = 0; st == VQ_OK && l < c->n_layers; l++)
        st = setup_layer(c, l, strip);
    if (st == VQ_OK)
        st = vq_cross_layers_ready(c, c->err);
    if (st == VQ_OK)
        st = vq_cache_set_threads(c, NULL);
    if (st != VQ_OK) {
        vq_fail(NULL, st, "%s", c->err[0] ? c->err : vq_last_error());
        vq_cache_free(c);
        return st;
    }
    *out = c;
    return VQ_OK;
}

vq_status vq_cache_create(const vq_cache_config *cfg, const vq_cache_shape *shape,
                          uint64_t seed, vq_cache **out)
{
    return vq_cache_create_ex(cfg, shape, seed, 0, out);
}

static void release_pages(vq_cache *c, vq_cache_layer *L, vq_cache_head *H, size_t keep)
{
    while (H->n_pages > keep) {
        H->n_pages--;
        vq_page_put(&c->pool, H->kpages[H->n_pages], H->klast);
        vq_page_put(&c->pool, H->vpages[H->n_pages], H->vlast);
        H->kpages[H->n_pages] = H->vpages[H->n_pages] = NULL;
        H->klast = L->kpage_bytes, H->vlast = L->vpage_bytes; /* the pages before were whole */
    }
    if (!H->n_pages)
        H->klast = H->vlast = 0;
}

void vq_cache_reset(vq_cache *c)
{
    if (!c || !c->layers)
        return;
    for (int l = 0; l < c->n_layers; l++) {
        vq_cache_layer *L = &c->layers[l];
        for (int h = 0; L->heads && h < L->shape.n_kv_heads; h++) {
            vq_cache_head *H = &L->heads[h];
            release_pages(c, L, H, 0);
            H->n_packed = H->n_res = H->n_dead = H->dead_floor = 0;
            free(H->pos); /* no gaps, nothing dead */
            free(H->alive);
            H->pos = NULL;
            H->alive = NULL;
            H->pos_base = 0;
        }
        L->last_pos = -1;
        L->app_n = 0;
    }
    vq_cross_reset(c);
}

void vq_cache_free(vq_cache *c)
{
    if (!c)
        return;
    vq_cache_reset(c);
    vq_cache_free_workers(c);
    vq_pool_free(c->own_pool);
    for (int l = 0; c->layers && l < c->n_layers; l++) {
        vq_cache_layer *L = &c->layers[l];
        for (int h = 0; L->heads && h < L->shape.n_kv_heads; h++) {
            vq_cache_head *H = &L->heads[h];
            free(H->kpages);
            free(H->vpages);
            free(H->pos);
            free(H->alive);
            free(H->score);
            free(H->rk);
            free(H->rv);
            free(H->rpos);
            free(H->rscore);
            free(H->x);
            free(H->rx);
        }
        free(L->heads);
        vq_codec_free(L->kc);
        vq_codec_free(L->vc);
        vq_codec_free(L->fk);
        vq_codec_free(L->fv);
    }
    vq_page_pool_destroy(&c->pool);
    vq_cross_free(c);
    vq_cache_prerope_free(c);
    free(c->layers);
    free(c->shapes);
    vq_cache_config_free(c->cfg);
    free(c->tmp);
    free(c->wbuf);
    free(c->ebuf);
    free(c);
}

const char *vq_cache_error(const vq_cache *c) { return c ? c->err : "cache is NULL"; }

vq_status vq_cache_get_shape(const vq_cache *c, vq_cache_shape *out)
{
    if (!c || !out)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "vq_cache_get_shape: NULL argument");
    out->n_layers = c->n_layers;
    out->layers = c->shapes;
    out->fingerprint = c->fingerprint;
    return VQ_OK;
}

const char *vq_cache_codec_spec(const vq_cache *c, int layer, vq_role role)
{
    if (!c || layer < 0 || layer >= c->n_layers)
        return "";
    return vq_codec_spec(role == VQ_ROLE_KEY ? c->layers[layer].kc : c->layers[layer].vc);
}

vq_status vq_cache_calibrate(vq_cache *c, int layer, const float *k, const float *v, size_t n)
{
    if (!c)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "vq_cache_calibrate: cache is NULL");
    if (layer < 0 || layer >= c->n_layers)
        return vq_fail(c->err, VQ_ERR_INVALID_ARG, "vq_cache_calibrate: layer %d out of range", layer);
    vq_cache_layer *L = &c->layers[layer];
    size_t rows = n * (size_t)L->shape.n_kv_heads;
    vq_codec *codecs[2] = { L->kc, L->vc };
    const float *x[2] = { k, v };
    for (int r = 0; r < 2; r++) {
        if (!x[r] || !vq_codec_needs_calibration(codecs[r]))
            continue;
        vq_status st = vq_codec_calibrate(codecs[r], x[r], rows);
        if (st != VQ_OK)
            return vq_fail(c->err, st, "cache layer %d %s: %s", layer, r ? "values" : "keys",
                           vq_codec_error(codecs[r]));
    }
    /* the workers' codec clones must carry the new calibration */
    return c->n_workers > 1 ? vq_cache_set_threads(c, c->threads) : VQ_OK;
}

/* ---- packed storage ----------------------------------------------------- */

size_t vq_cache_page_step(const vq_cache_layer *L, size_t need)
{
    const size_t P = L->page_tokens, G = L->group;
    const size_t step = ((P + 3) / 4 + G - 1) / G * G;
    const size_t t = (need + step - 1) / step * step;
    return t < P ? t : P;
}

/* page p of H (p = n_pages: a new last page; p = n_pages - 1: the last
 * page) made to hold `need` slots: a larger page from the pool and the old
 * bytes copied over when it holds fewer */
static vq_status page_fit(vq_cache *c, vq_cache_layer *L, vq_cache_head *H, size_t p, size_t need)
{
    const int fresh = p == H->n_pages;
    const size_t t = vq_cache_page_step(L, need), bk = t * bpt(L->kc), bv = t * bpt(L->vc);
    if (!fresh && bk <= H->klast && bv <= H->vlast)
        return VQ_OK;
    uint8_t *k = vq_page_get(&c->pool, bk);
    uint8_t *v = k ? vq_page_get(&c->pool, bv) : NULL;
    if (!v) {
        vq_page_put(&c->pool, k, bk);
        return vq_fail(c->err, VQ_ERR_NOMEM, "cache: out of memory for a page");
    }
    if (!fresh) {
        memcpy(k, H->kpages[p], H->klast);
        memcpy(v, H->vpages[p], H->vlast);
        vq_page_put(&c->pool, H->kpages[p], H->klast);
        vq_page_put(&c->pool, H->vpages[p], H->vlast);
    }
    H->kpages[p] = k;
    H->vpages[p] = v;
    H->klast = bk, H->vlast = bv;
    H->n_pages += fresh;
    return VQ_OK;
}

vq_status vq_cache_reserve_slots(vq_cache *c, vq_cache_layer *L, vq_cache_head *H, size_t n)
{
    if (n > H->cap_slots) {
        size_t nc = H->cap_slots ? H->cap_slots : L->page_tokens;
        while (nc < n)
            nc *= 2;
        /* only the tables this head holds (cache_internal.h); the shared
         * slot records where the head lends its slots (vq_xslot) */
        int ok = 1;
        if (H->pos)
            ok &= vq_resize(&H->pos, nc * sizeof *H->pos);
        if (H->alive)
            ok &= vq_resize(&H->alive, nc);
        if (vq_cache_uses_scores(c))
            ok &= vq_resize(&H->score, nc * sizeof *H->score);
        if (ok && H->rx)
            ok &= vq_resize(&H->x, nc * sizeof *H->x);
        if (!ok)
            return vq_fail(c->err, VQ_ERR_NOMEM, "cache: out of memory for slot tables");
        H->cap_slots = nc;
    }
    size_t pages = (n + L->page_tokens - 1) / L->page_tokens;
    if (pages > H->cap_pages) {
        size_t nc = H->cap_pages ? 2 * H->cap_pages : 4;
        while (nc < pages)
            nc *= 2;
        int ok = vq_resize(&H->kpages, nc * sizeof *H->kpages);
        ok &= vq_resize(&H->vpages, nc * sizeof *H->vpages);
        if (!ok)
            return vq_fail(c->err, VQ_ERR_NOMEM, "cache: out of memory for page tables");
        H->cap_pages = nc;
    }
    /* the last page grows to what it must hold (all of a page when more
     * follow), then new pages, the last one a step at a time */
    const size_t P = L->page_tokens;
    if (H->n_pages && H->n_pages <= pages)
        VQ_TRY(page_fit(c, L, H, H->n_pages - 1, H->n_pages == pages ? n - (pages - 1) * P : P));
    while (H->n_pages < pages)
        VQ_TRY(page_fit(c, L, H, H->n_pages, H->n_pages + 1 == pages ? n - (pages - 1) * P : P));
    return VQ_OK;
}

/* Drop the groups whose slots are all dead, moving later groups down, and
 * return emptied pages to the pool. Unless forced, runs only once the dead
 * slots have grown by max(group, page_tokens/4) since the last run, so the
 * cost of moving codes is amortized over many evictions. */
void vq_cache_compact(vq_cache *c, vq_cache_layer *L, vq_cache_head *H, int force)
{
    const size_t G = L->group;
    size_t thresh = L->page_tokens / 4 > G ? L->page_tokens / 4 : G;
    if (H->n_dead == 0 || (!force && H->n_dead < H->dead_floor + thresh))
        return;
    size_t kb = G * bpt(L->kc), vb = G * bpt(L->vc), w = 0, dead = 0, removed = 0;
    if (!H->alive)
        return; /* n_dead > 0 implies the table exists */
    if (!H->pos) {
        /* dropping only leading groups keeps the positions consecutive
         * (pos_base moves); a dropped group after a kept one makes a gap */
        int kept = 0, gap = 0;
        for (size_t s = 0; s < H->n_packed && !gap; s += G) {
            size_t live = 0;
            for (size_t i = 0; i < G; i++)
                live += H->alive[s + i];
            if (live)
                kept = 1;
            else if (kept)
                gap = 1;
        }
        if (gap && vq_cache_head_materialize_pos(c, H) != VQ_OK)
            return; /* out of memory: leave the dead slots masked, uncompacted */
    }
    for (size_t s = 0; s < H->n_packed; s += G) {
        size_t live = 0;
        for (size_t i = 0; i < G; i++)
            live += H->alive[s + i];
        if (live == 0) {
            removed += w == 0 ? G : 0;
            continue;
        }
        dead += G - live;
        if (w != s) {
            memmove(vq_cache_kslot(L, H, w), vq_cache_kslot(L, H, s), kb);
            memmove(vq_cache_vslot(L, H, w), vq_cache_vslot(L, H, s), vb);
            if (H->pos)
                memmove(H->pos + w, H->pos + s, G * sizeof *H->pos);
            memmove(H->alive + w, H->alive + s, G);
            if (H->score)
                memmove(H->score + w, H->score + s, G * sizeof *H->score);
            if (H->x)
                memmove(H->x + w, H->x + s, G * sizeof *H->x);
        }
        w += G;
    }
    if (!H->pos)
        H->pos_base += (int32_t)removed;
    H->n_packed = w;
    H->n_dead = H->dead_floor = dead;
    if (dead == 0) { /* nothing masked any more: drop the liveness table */
        free(H->alive);
        H->alive = NULL;
    }
    if (H->pos && (w == 0 || H->pos[w - 1] - H->pos[0] == (int32_t)(w - 1))) {
        /* consecutive again (positions increase strictly) */
        H->pos_base = w ? H->pos[0] : 0;
        free(H->pos);
        H->pos = NULL;
    }
    release_pages(c, L, H, (w + L->page_tokens - 1) / L->page_tokens);
}

vq_status vq_cache_head_materialize_pos(vq_cache *c, vq_cache_head *H)
{
    if (H->pos)
        return VQ_OK;
    H->pos = malloc((H->cap_slots ? H->cap_slots : 1) * sizeof *H->pos);
    if (!H->pos)
        return vq_fail(c->err, VQ_ERR_NOMEM, "cache: out of memory for the position table");
    for (size_t i = 0; i < H->n_packed; i++)
        H->pos[i] = H->pos_base + (int32_t)i;
    return VQ_OK;
}

size_t vq_cache_head_index_bytes(const vq_cache_head *H, size_t res_cap)
{
    return (H->pos ? H->cap_slots * sizeof(int32_t) : 0) + (H->alive ? H->cap_slots : 0) +
           (H->score ? H->cap_slots * sizeof(float) : 0) + res_cap * sizeof(int32_t) +
           (H->rscore ? res_cap * sizeof(float) : 0) + H->cap_pages * 2 * sizeof(void *);
}

vq_status vq_cache_kill_slot(vq_cache *c, vq_cache_head *H, size_t i, size_t head_dim)
{
    if (i < H->n_packed) {
        if (!H->alive) {
            H->alive = malloc(H->cap_slots);
            if (!H->alive)
                return vq_fail(c->err, VQ_ERR_NOMEM, "cache: out of memory for the liveness table");
            memset(H->alive, 1, H->cap_slots);
        }
        if (H->alive[i]) {
            H->alive[i] = 0;
            H->n_dead++;
        }
        return VQ_OK;
    }
    size_t r = i - H->n_packed, rest = H->n_res - r - 1, rb = 2 * head_dim;
    memmove(H->rk + r * rb, H->rk + (r + 1) * rb, rest * rb);
    memmove(H->rv + r * rb, H->rv + (r + 1) * rb, rest * rb);
    memmove(H->rpos + r, H->rpos + r + 1, rest * sizeof *H->rpos);
    if (H->rscore)
        memmove(H->rscore + r, H->rscore + r + 1, rest * sizeof *H->rscore);
    if (H->rx)
        memmove(H->rx + r, H->rx + r + 1, rest * sizeof *H->rx);
    H->n_res--;
    return VQ_OK;
}

vq_status vq_cache_grow_floats(vq_cache *c, float **buf, size_t *cap, size_t need, size_t unit, size_t first,
                               const char *what)
{
    if (need <= *cap)
        return VQ_OK;
    size_t nc = *cap ? *cap : first;
    while (nc < need)
        nc *= 2;
    float *b = realloc(*buf, nc * unit * sizeof *b);
    if (!b)
        return vq_fail(c->err, VQ_ERR_NOMEM, "cache: out of memory for %s", what);
    *buf = b;
    *cap = nc;
    return VQ_OK;
}

vq_status vq_cache_grow_wbuf(vq_cache *c, size_t n)
{
    return vq_cache_grow_floats(c, &c->wbuf, &c->wbuf_cap, n, 1, 4096, "attention weights");
}

/* ---- append --------------------------------------------------------------- */

/* the window of H is full: grow it (a cross method that keeps every token
 * fp16 for now) or move its oldest groups into pages */
static vq_status make_room(vq_cache *c, vq_cache_layer *L, vq_cache_head *H, size_t keep)
{
    int grown;
    VQ_TRY(vq_cross_grow(c, L, L->res_cap + 1, &grown));
    return grown ? VQ_OK : vq_cache_flush_residual(c, L, H, keep);
}

vq_status vq_cache_append(vq_cache *c, int layer, const float *k, const float *v,
                          size_t n, int32_t pos0)
{
    if (!c)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "vq_cache_append: cache is NULL");
    if (layer < 0 || layer >= c->n_layers)
        return vq_fail(c->err, VQ_ERR_INVALID_ARG, "vq_cache_append: layer %d out of range [0, %d)", layer,
                       c->n_layers);
    if (n == 0)
        return VQ_OK;
    if (!k || !v)
        return vq_fail(c->err, VQ_ERR_INVALID_ARG, "vq_cache_append: k or v is NULL");
    vq_cache_layer *L = &c->layers[layer];
    if (pos0 < 0 || pos0 <= L->last_pos || n > (size_t)(INT32_MAX - pos0))
        return vq_fail(c->err, VQ_ERR_INVALID_ARG,
                       "vq_cache_append: layer %d: pos0=%d must be >= 0 and after the last position %d", layer,
                       (int)pos0, (int)L->last_pos);
    if (!vq_codec_is_ready(L->kc) || !vq_codec_is_ready(L->vc))
        return vq_fail(c->err, VQ_ERR_NEEDS_CALIBRATION,
                       "cache layer %d: the %s codec needs calibration (vq_cache_calibrate or calib=FILE)", layer,
                       vq_codec_is_ready(L->kc) ? "values" : "keys");
    VQ_TRY(vq_cache_prerope_ready(c, L));
    int done;
    VQ_TRY(vq_cross_append(c, layer, k, v, n, pos0, &done));
    if (done)
        return VQ_OK;
    VQ_TRY(vq_cache_enforce(c, layer, pos0, 0));
    const size_t D = (size_t)L->shape.head_dim, nh = (size_t)L->shape.n_kv_heads, rb = 2 * D;
    const size_t keep = (size_t)c->cfg->residual;
    for (size_t t = 0; t < n; t++) {
        int full = 0;
        for (size_t h = 0; h < nh; h++) {
            vq_cache_head *H = &L->heads[h];
            const float *kt = k + (t * nh + h) * D, *vt = v + (t * nh + h) * D;
            if (H->n_res >= L->res_cap) {
                /* a flush (or a window growth) failed in an earlier call,
                 * out of memory: redo it before writing, never past the
                 * window */
                VQ_TRY(make_room(c, L, H, keep));
                if (H->n_res >= L->res_cap)
                    return vq_fail(c->err, VQ_ERR_STATE, "cache layer %d: residual window full", layer);
            }
            VQ_TRY(vq_codec_encode(L->fk, kt, 1, H->rk + H->n_res * rb));
            VQ_TRY(vq_codec_encode(L->fv, vt, 1, H->rv + H->n_res * rb));
            H->rpos[H->n_res] = pos0 + (int32_t)t;
            if (H->rscore)
                H->rscore[H->n_res] = 0.0f;
            if (H->rx)
                H->rx[H->n_res] = (vq_xslot){ 0, 0, 0 };
            H->n_res++;
            if (H->n_res == L->res_cap && c->cross) /* it may grow the window (vq_cross_grow) */
                VQ_TRY(make_room(c, L, H, keep));
            full |= H->n_res == L->res_cap;
        }
        /* the layer's heads fill together: their flushes at once, on the
         * pool (flush.c) */
        if (full && !c->cross)
            VQ_TRY(vq_cache_flush_full(c, L, keep));
    }
    L->last_pos = pos0 + (int32_t)(n - 1);
    L->app_pos0 = pos0;
    L->app_n = n;
    return vq_cross_after_append(c, layer);
}

/* ---- gather ------------------------------------------------------------- */

/* residual tokens [r0, r1) of H out at *o (advanced) */
static vq_status gather_res(vq_cache *c, vq_cache_layer *L, vq_cache_head *H, size_t r0, size_t r1, int32_t *pos,
                            float *k, float *v, size_t *o)
{
    const size_t D = (size_t)L->shape.head_dim;
    (void)c;
    for (size_t r = r0; r < r1; r++, (*o)++) {
        if (pos)
            pos[*o] = H->rpos[r];
        if (k)
            VQ_TRY(vq_codec_decode(L->fk, H->rk + r * 2 * D, 1, k + *o * D));
        if (v)
            VQ_TRY(vq_codec_decode(L->fv, H->rv + r * 2 * D, 1, v + *o * D));
    }
    return VQ_OK;
}

vq_status vq_cache_gather_own(vq_cache *c, int layer, int kv_head, size_t cap, int32_t *pos, float *k, float *v,
                              size_t *n)
{
    if (!c || !n)
        return vq_fail(c ? c->err : NULL, VQ_ERR_INVALID_ARG, "vq_cache_gather: NULL argument");
    if (layer < 0 || layer >= c->n_layers || kv_head < 0 || kv_head >= c->layers[layer].shape.n_kv_heads)
        return vq_fail(c->err, VQ_ERR_INVALID_ARG, "vq_cache_gather: layer %d head %d out of range", layer, kv_head);
    vq_cache_layer *L = &c->layers[layer];
    vq_cache_head *H = &L->heads[kv_head];
    const size_t D = (size_t)L->shape.head_dim, G = L->group;
    size_t live = H->n_packed - H->n_dead + H->n_res;
    *n = live;
    if (!pos && !k && !v)
        return VQ_OK;
    if (live > cap)
        return vq_fail(c->err, VQ_ERR_INVALID_ARG, "vq_cache_gather: %zu tokens held, capacity %zu", live, cap);
    size_t o = 0, ns = vq_cache_head_sinks(c, L, H);
    /* position order: the window's sink tokens, packed slots, the rest */
    VQ_TRY(gather_res(c, L, H, 0, ns, pos, k, v, &o));
    for (size_t s = 0; s < H->n_packed; s += G) {
        VQ_TRY(vq_cross_bind(c, L, (size_t)kv_head, s, L->kc, L->vc));
        if (k)
            VQ_TRY(vq_codec_decode(L->kc, vq_cache_kslot(L, H, s), G, c->tmp));
        if (k)
            vq_cache_prerope_rerope(c, L, H, s, G, c->tmp);
        for (size_t i = 0, oo = o; i < G; i++)
            if (vq_head_alive(H, s + i)) {
                if (k)
                    memcpy(k + oo * D, c->tmp + i * D, D * sizeof(float));
                if (pos)
                    pos[oo] = vq_head_pos(H, s + i);
                oo++;
            }
        if (v)
            VQ_TRY(vq_codec_decode(L->vc, vq_cache_vslot(L, H, s), G, c->tmp));
        for (size_t i = 0; i < G; i++)
            if (vq_head_alive(H, s + i)) {
                if (v)
                    memcpy(v + o * D, c->tmp + i * D, D * sizeof(float));
                o++;
            }
    }
    return gather_res(c, L, H, ns, H->n_res, pos, k, v, &o);
}

vq_status vq_cache_gather(vq_cache *c, int layer, int kv_head, size_t cap,
                          int32_t *pos, float *k, float *v, size_t *n)
{
    if (!c || !n)
        return vq_fail(c ? c->err : NULL, VQ_ERR_INVALID_ARG, "vq_cache_gather: NULL argument");
    if (layer < 0 || layer >= c->n_layers || kv_head < 0 || kv_head >= c->layers[layer].shape.n_kv_heads)
        return vq_fail(c->err, VQ_ERR_INVALID_ARG, "vq_cache_gather: layer %d head %d out of range", layer, kv_head);
    int done;
    vq_status st = vq_cross_gather(c, layer, kv_head, cap, pos, k, v, n, &done);
    if (st != VQ_OK || done)
        return st;
    return vq_cache_gather_own(c, layer, kv_head, cap, pos, k, v, n);
}

/* ---- stats -------------------------------------------------------------- */

static void layer_stats(const vq_cache *c, const vq_cache_layer *L, vq_cache_usage *u)
{
    const uint64_t D = (uint64_t)L->shape.head_dim;
    vq_cache_role_stats *rs[2] = { &u->keys, &u->values };
    const vq_codec *cd[2] = { L->kc, L->vc };
    const size_t pb[2] = { L->kpage_bytes, L->vpage_bytes };
    for (int r = 0; r < 2; r++) {
        rs[r]->shared_bytes += vq_codec_shared_bytes(cd[r]);
        for (int h = 0; h < L->shape.n_kv_heads; h++) {
            const vq_cache_head *H = &L->heads[h];
            uint64_t live = H->n_packed - H->n_dead + H->n_res;
            rs[r]->tokens += live;
            rs[r]->stored_slots += H->n_packed + H->n_res;
            rs[r]->fp16_bytes += live * 2 * D;
            rs[r]->accounted_bytes += (uint64_t)H->n_packed * bpt(cd[r]) + (uint64_t)H->n_res * 2 * D;
            rs[r]->residual_bytes += (uint64_t)L->res_cap * 2 * D;
            rs[r]->residual_tokens += H->n_res;
            const uint64_t last = r ? H->vlast : H->klast; /* the last page grows (page_fit) */
            rs[r]->resident_bytes += (H->n_pages ? (uint64_t)(H->n_pages - 1) * pb[r] + last : 0) +
                                     (uint64_t)L->res_cap * 2 * D;
        }
    }
    vq_cross_stats(c, L, u);
    for (int h = 0; h < L->shape.n_kv_heads; h++) {
        const vq_cache_head *H = &L->heads[h];
        u->index_bytes += vq_cache_head_index_bytes(H, L->res_cap);
    }
    (void)c;
}

vq_status vq_cache_stats(const vq_cache *c, int layer, vq_cache_usage *out)
{
    if (!c || !out)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "vq_cache_stats: NULL argument");
    if (layer < -1 || layer >= c->n_layers)
        return vq_fail((char *)c->err, VQ_ERR_INVALID_ARG, "vq_cache_stats: layer %d out of range", layer);
    memset(out, 0, sizeof *out);
    for (int l = 0; l < c->n_layers; l++)
        if (layer == -1 || layer == l)
            layer_stats(c, &c->layers[l], out);
    if (layer == -1) {
        out->pool_free_bytes = vq_page_pool_free_bytes(&c->pool);
        out->buffer_bytes = c->scratch_bytes + c->wbuf_cap * sizeof *c->wbuf + c->ebuf_cap * sizeof *c->ebuf +
                            vq_cache_prerope_bytes(c);
        out->buffer_bytes += vq_cross_buffer_bytes(c);
        out->total_bytes = out->keys.resident_bytes + out->values.resident_bytes + out->keys.shared_bytes +
                           out->values.shared_bytes + out->index_bytes + out->pool_free_bytes + out->buffer_bytes;
    }
    return VQ_OK;
}
