/* ctx_cached.c -- inference contexts over a caller's packed cache
 * (vq_ctx_create_cached, vq_ctx_cache; veloxquant.h model section). The
 * context is made by model_ctx.c with the packed vq_kv (kv_packed.c) in
 * place of the float buffer, and starts at the cache's next position. */
#include "model/forward.h"
#include "model/kv_packed.h"

static vq_status make_packed(const vq_kv_shape *shape, vq_pool *pool, void *arg, vq_kv **out)
{
    return vq_kv_packed_create(shape, arg, pool, out); /* attention on the context's pool */
}

vq_status vq_ctx_create_cached(const vq_model *m, vq_cache *cache, int max_tokens, int n_threads,
                               vq_ctx **out)
{
    if (!out)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "vq_ctx_create_cached: out is NULL");
    *out = NULL;
    if (!m || !cache)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "vq_ctx_create_cached: NULL argument");
    vq_ctx *c = NULL;
    VQ_TRY(vq_ctx_create_with_kv(m, max_tokens, n_threads, make_packed, cache, &c));
    int next = vq_kv_packed_next_pos(cache);
    if (next > c->max_tokens) {
        vq_ctx_free(c);
        return vq_fail(NULL, VQ_ERR_INVALID_ARG,
                       "vq_ctx_create_cached: the cache continues at position %d, beyond max_tokens %d", next,
                       max_tokens);
    }
    c->n_tokens = next;
    *out = c;
    return VQ_OK;
}

vq_cache *vq_ctx_cache(const vq_ctx *c) { return c ? vq_kv_packed_cache(c->kv) : NULL; }
