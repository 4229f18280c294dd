/* threads.c -- per-worker attention and flush scratch and codec clones.
 *
 * Attention work items (KV head x context chunk) and the encodes of a
 * residual flush (flush.c) run on a borrowed thread pool (core/pool.h).
 * Each worker has its own scratch and its own codec handles: codec
 * kernels keep scratch in their handle, so one handle must not be used by
 * two threads. The handles are vq_codec_clone's
 * (codec.h): they encode and score exactly as the layer's own. */
#include <stdlib.h>

#include "cache/cache_internal.h"
#include "cache/cache_peek.h"

void vq_cache_free_workers(vq_cache *c)
{
    for (int l = 0; c->layers && l < c->n_layers; l++) {
        vq_cache_layer *L = &c->layers[l];
        vq_codec **sets[4] = { L->kcw, L->vcw, L->fkw, L->fvw };
        for (int s = 0; s < 4; s++) {
            for (int w = 1; sets[s] && w < c->n_workers; w++)
                vq_codec_free(sets[s][w]);
            free(sets[s]);
        }
        L->kcw = L->vcw = L->fkw = L->fvw = NULL;
    }
    for (int w = 0; c->workers && w < c->n_workers; w++) {
        free(c->workers[w].qbuf);
        free(c->workers[w].qbuf2);
        free(c->workers[w].qf);
        free(c->workers[w].sc);
        free(c->workers[w].pk);
        free(c->workers[w].pqh);
        free(c->workers[w].prows);
        free(c->workers[w].wkeep);
        free(c->workers[w].enc);
    }
    free(c->workers);
    free(c->part);
    c->workers = NULL;
    c->part = NULL;
    c->n_workers = 0;
}

static vq_status clone_codec(vq_cache *c, const vq_codec *src, vq_codec **out)
{
    vq_status st = vq_codec_clone(src, out);
    if (st != VQ_OK)
        return vq_fail(c->err, st, "cache threads: %s", vq_last_error());
    return VQ_OK;
}

static vq_status setup(vq_cache *c, struct vq_pool *pool)
{
    int T = pool ? vq_pool_size(pool) : 1;
    if (T < 1)
        T = 1;
    vq_cache_free_workers(c);
    c->threads = T > 1 ? pool : NULL;
    size_t nq = 0, qb = 0, D = 0, asz = 0, sc = 0, grp = 0, nkv = 0, pmax = 0;
    for (int l = 0; l < c->n_layers; l++) {
        vq_cache_layer *L = &c->layers[l];
        size_t g = (size_t)(L->shape.n_q_heads / L->shape.n_kv_heads);
        nq = g * VQ_CACHE_QUERY_TILE > nq ? g * VQ_CACHE_QUERY_TILE : nq;
        size_t x = vq_codec_query_bytes(L->kc);
        qb = x > qb ? x : qb;
        x = vq_codec_query_bytes(L->fk);
        qb = x > qb ? x : qb;
        D = (size_t)L->shape.head_dim > D ? (size_t)L->shape.head_dim : D;
        x = vq_codec_accum_size(L->vc);
        asz = x > asz ? x : asz;
        x = L->page_tokens > L->res_cap ? L->page_tokens : L->res_cap;
        sc = x > sc ? x : sc;
        pmax = L->page_tokens > pmax ? L->page_tokens : pmax;
        grp = L->group > grp ? L->group : grp;
        nkv = (size_t)L->shape.n_kv_heads > nkv ? (size_t)L->shape.n_kv_heads : nkv;
    }
    c->nq_max = nq;
    c->asz_max = asz;
    c->d_max = D;
    c->sc_floats = nq * sc;
    if (!c->tmp) {
        c->tmp = malloc((grp > 2 ? grp : 2) * D * sizeof(float));
        if (!c->tmp)
            return vq_fail(c->err, VQ_ERR_NOMEM, "cache: out of memory for scratch");
    }
    c->workers = calloc((size_t)T, sizeof *c->workers);
    c->n_workers = T;
    if (!c->workers) {
        c->n_workers = 0;
        return vq_fail(c->err, VQ_ERR_NOMEM, "cache: out of memory for workers");
    }
    for (int w = 0; w < T; w++) {
        vq_attn_worker *W = &c->workers[w];
        W->qbuf = malloc(nq * qb + 64);
        W->qbuf2 = malloc(nq * qb + 64);
        W->qf = malloc(nq * D * sizeof(float));
        W->sc = malloc(c->sc_floats * sizeof(float));
        if (!W->qbuf || !W->qbuf2 || !W->qf || !W->sc)
            return vq_fail(c->err, VQ_ERR_NOMEM, "cache: out of memory for attention scratch");
        if (c->cfg->prerope) {
            W->pk = malloc(grp * D * sizeof(float));
            W->pqh = malloc(nq * D * sizeof(float));
            W->prows = malloc(grp * sizeof(int32_t));
            if (!W->pk || !W->pqh || !W->prows)
                return vq_fail(c->err, VQ_ERR_NOMEM, "cache: out of memory for attention scratch");
        }
        if (c->cfg->vdrop > 0.0 && !(W->wkeep = malloc(nq * pmax * sizeof(float))))
            return vq_fail(c->err, VQ_ERR_NOMEM, "cache: out of memory for attention scratch");
        if (w > 0 && !(W->enc = malloc((grp > 2 ? grp : 2) * D * sizeof(float))))
            return vq_fail(c->err, VQ_ERR_NOMEM, "cache: out of memory for flush scratch");
    }
    /* items per tile: n_kv heads x context chunks (attend.c); room for
     * one chunk per head here, vq_cache_grow_parts adds more with context */
    c->part_items = nkv;
    c->part_stride = nq * (2 * asz + D + 2); /* m, l, acc, acc_res, acc_anchor */
    c->part = malloc(c->part_items * c->part_stride * sizeof(float));
    if (!c->part)
        return vq_fail(c->err, VQ_ERR_NOMEM, "cache: out of memory for attention partials");
    c->scratch_bytes = (size_t)T * (grp > 2 ? grp : 2) * D * sizeof(float) + /* tmp, enc */
                       (size_t)T * (2 * (nq * qb + 64) + nq * D * sizeof(float) + c->sc_floats * sizeof(float)) +
                       c->part_items * c->part_stride * sizeof(float);
    if (c->cfg->prerope)
        c->scratch_bytes += (size_t)T * ((grp + nq) * D * sizeof(float) + grp * sizeof(int32_t));
    if (c->cfg->vdrop > 0.0)
        c->scratch_bytes += (size_t)T * nq * pmax * sizeof(float);
    for (int l = 0; l < c->n_layers; l++) {
        vq_cache_layer *L = &c->layers[l];
        L->kcw = calloc((size_t)T, sizeof *L->kcw);
        L->vcw = calloc((size_t)T, sizeof *L->vcw);
        L->fkw = calloc((size_t)T, sizeof *L->fkw);
        L->fvw = calloc((size_t)T, sizeof *L->fvw);
        if (!L->kcw || !L->vcw || !L->fkw || !L->fvw)
            return vq_fail(c->err, VQ_ERR_NOMEM, "cache: out of memory for worker codecs");
        L->kcw[0] = L->kc;
        L->vcw[0] = L->vc;
        L->fkw[0] = L->fk;
        L->fvw[0] = L->fv;
        for (int w = 1; w < T; w++) {
            VQ_TRY(clone_codec(c, L->kc, &L->kcw[w]));
            VQ_TRY(clone_codec(c, L->vc, &L->vcw[w]));
            VQ_TRY(clone_codec(c, L->fk, &L->fkw[w]));
            VQ_TRY(clone_codec(c, L->fv, &L->fvw[w]));
        }
    }
    return VQ_OK;
}

vq_status vq_cache_grow_parts(vq_cache *c, size_t n)
{
    const size_t old = c->part_items;
    VQ_TRY(vq_cache_grow_floats(c, &c->part, &c->part_items, n, c->part_stride, 1, "attention partials"));
    c->scratch_bytes += (c->part_items - old) * c->part_stride * sizeof(float);
    return VQ_OK;
}

int vq_cache_lend_pool(vq_cache *c, struct vq_pool *pool)
{
    if (!c || !pool || c->threads || c->own_pool || vq_pool_size(pool) < 2)
        return 0;
    return vq_cache_set_threads(c, pool) == VQ_OK && c->threads == pool;
}

void vq_cache_unlend_pool(vq_cache *c, struct vq_pool *pool)
{
    if (c && pool && c->threads == pool)
        (void)vq_cache_set_threads(c, NULL);
}

vq_status vq_cache_set_threads(vq_cache *c, struct vq_pool *pool)
{
    if (!c)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "vq_cache_set_threads: cache is NULL");
    vq_status st = setup(c, pool);
    if (st != VQ_OK && pool) {
        /* fall back to serial attention so the cache stays usable */
        vq_cache_free_workers(c);
        if (setup(c, NULL) != VQ_OK)
            vq_cache_free_workers(c);
    }
    return st;
}

vq_status vq_cache_set_n_threads(vq_cache *c, int n_threads)
{
    if (!c)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "vq_cache_set_n_threads: cache is NULL");
    vq_pool *p = NULL, *old = c->own_pool;
    if (n_threads != 1) {
        vq_status st = vq_pool_create(n_threads, &p);
        if (st != VQ_OK)
            return vq_fail(c->err, st, "vq_cache_set_n_threads: %s", vq_last_error());
    }
    vq_status st = vq_cache_set_threads(c, p);
    /* keep the new pool only if the cache uses it (size 1 or a failed
     * setup leave the cache serial) */
    c->own_pool = c->threads == p ? p : NULL;
    if (!c->own_pool)
        vq_pool_free(p);
    if (old && old != c->threads)
        vq_pool_free(old);
    return st;
}
