/* kv_packed.c -- vq_kv_ops over the packed cache (contract: kv_packed.h,
 * kv_iface.h). append -> vq_cache_append, attend -> vq_cache_attend (on the
 * context's pool when the cache has no threads of its own; the
 * cache derives query positions from the last append, which vq_attn_layer
 * always makes with the same n and pos0 just before), reset ->
 * vq_cache_reset, reserve -> vq_cache_reserve, bytes -> resident key +
 * value bytes of vq_cache_stats. */
#include <stdlib.h>
#include <string.h>

#include "cache/cache_peek.h"
#include "model/kv_packed.h"

typedef struct {
    vq_cache *cache;  /* borrowed */
    vq_pool *lent;    /* the context's pool while the cache attends on it */
    size_t bytes_per_token;
} kv_packed;

static vq_status kvp_append(vq_kv *kv, int layer, const float *k, const float *v, int n, int pos0)
{
    kv_packed *p = kv->impl;
    if (n < 1 || pos0 < 0)
        return vq_fail(kv->err, VQ_ERR_INVALID_ARG, "kv packed: append of %d tokens at %d", n, pos0);
    vq_status st = vq_cache_append(p->cache, layer, k, v, (size_t)n, pos0);
    if (st != VQ_OK)
        return vq_fail(kv->err, st, "kv packed: %s", vq_cache_error(p->cache));
    return VQ_OK;
}

static vq_status kvp_attend(vq_kv *kv, int layer, const float *q, int n, int pos0, float *out)
{
    kv_packed *p = kv->impl;
    const vq_layer_shape *ls = &kv->shape.layer[layer];
    (void)pos0; /* the cache knows the positions of the last append */
    vq_status st = vq_cache_attend(p->cache, layer, q, (size_t)n, ls->n_q_heads, kv->shape.scale, out);
    if (st != VQ_OK)
        return vq_fail(kv->err, st, "kv packed: %s", vq_cache_error(p->cache));
    return VQ_OK;
}

static vq_status kvp_reserve(vq_kv *kv, int n)
{
    kv_packed *p = kv->impl;
    vq_status st = vq_cache_reserve(p->cache, n > 0 ? (size_t)n : 0);
    if (st != VQ_OK)
        return vq_fail(kv->err, st, "kv packed: %s", vq_cache_error(p->cache));
    return VQ_OK;
}

static void kvp_reset(vq_kv *kv)
{
    kv_packed *p = kv->impl;
    vq_cache_reset(p->cache);
}

static size_t kvp_bytes(const vq_kv *kv)
{
    const kv_packed *p = kv->impl;
    vq_cache_usage u;
    if (vq_cache_stats(p->cache, -1, &u) != VQ_OK)
        return 0;
    return (size_t)(u.keys.resident_bytes + u.values.resident_bytes);
}

static size_t kvp_bytes_per_token(const vq_kv *kv)
{
    const kv_packed *p = kv->impl;
    return p->bytes_per_token;
}

static void kvp_destroy(vq_kv *kv)
{
    if (!kv)
        return;
    kv_packed *p = kv->impl;
    if (p)
        vq_cache_unlend_pool(p->cache, p->lent);
    free(p);
    free(kv);
}

static const vq_kv_ops kv_packed_ops = {
    .name = "packed",
    .append = kvp_append,
    .attend = kvp_attend,
    .reset = kvp_reset,
    .bytes = kvp_bytes,
    .bytes_per_token = kvp_bytes_per_token,
    .destroy = kvp_destroy,
    .reserve = kvp_reserve,
};

vq_status vq_kv_packed_create(const vq_kv_shape *shape, vq_cache *cache, vq_pool *pool, vq_kv **out)
{
    if (!shape || !cache || !out)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "kv packed: NULL argument");
    *out = NULL;
    if (shape->n_layers != vq_cache_n_layers(cache))
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "kv packed: the cache has %d layers, the model %d",
                       vq_cache_n_layers(cache), shape->n_layers);
    vq_cache_shape cs;
    VQ_TRY(vq_cache_get_shape(cache, &cs));
    size_t bpt = 0;
    for (int l = 0; l < shape->n_layers; l++) {
        const vq_layer_shape *ls = &shape->layer[l];
        const vq_layer_shape *cl = &cs.layers[l];
        if (ls->n_q_heads != cl->n_q_heads || ls->n_kv_heads != cl->n_kv_heads ||
            ls->head_dim != cl->head_dim || ls->window != cl->window || ls->softcap != cl->softcap)
            return vq_fail(NULL, VQ_ERR_INVALID_ARG,
                           "kv packed: layer %d: the cache has (q %d, kv %d, dim %d, window %d), "
                           "the model (q %d, kv %d, dim %d, window %d) -- build it with vq_cache_for_model",
                           l, cl->n_q_heads, cl->n_kv_heads, cl->head_dim, cl->window,
                           ls->n_q_heads, ls->n_kv_heads, ls->head_dim, ls->window);
        bpt += (size_t)ls->n_kv_heads * (vq_codec_bytes_per_token(vq_cache_codec_of(cache, l, VQ_ROLE_KEY)) +
                                         vq_codec_bytes_per_token(vq_cache_codec_of(cache, l, VQ_ROLE_VALUE)));
    }
    vq_kv *kv = calloc(1, sizeof *kv);
    kv_packed *p = calloc(1, sizeof *p);
    if (!kv || !p) {
        free(kv);
        free(p);
        return vq_fail(NULL, VQ_ERR_NOMEM, "kv packed: out of memory");
    }
    p->cache = cache;
    p->lent = vq_cache_lend_pool(cache, pool) ? pool : NULL;
    p->bytes_per_token = bpt;
    kv->ops = &kv_packed_ops;
    kv->shape = *shape;
    kv->pool = NULL;
    kv->impl = p;
    *out = kv;
    return VQ_OK;
}

vq_cache *vq_kv_packed_cache(const vq_kv *kv)
{
    if (!kv || kv->ops != &kv_packed_ops)
        return NULL;
    return ((const kv_packed *)kv->impl)->cache;
}

int vq_kv_packed_next_pos(const vq_cache *cache)
{
    int32_t next = 0;
    for (int l = 0; l < vq_cache_n_layers(cache); l++)
        if (vq_cache_last_pos(cache, l) + 1 > next)
            next = vq_cache_last_pos(cache, l) + 1;
    return (int)next;
}
