/* sinks.c -- attention-sink tokens kept exact (contract in sinks.h). */
#include "cache/sinks.h"

size_t vq_cache_layer_sinks(const vq_cache *c, const vq_cache_layer *L)
{
    return L->shape.window > 0 ? 0 : (size_t)c->cfg->sinks;
}

size_t vq_cache_head_sinks(const vq_cache *c, const vq_cache_layer *L, const vq_cache_head *H)
{
    size_t n = vq_cache_layer_sinks(c, L);
    if (n > H->n_res)
        n = H->n_res;
    if (n == 0 || H->n_packed == 0)
        return n;
    int32_t first = vq_head_pos(H, 0);
    size_t i = 0;
    while (i < n && H->rpos[i] < first)
        i++;
    return i;
}

vq_status vq_cache_sinks_check(const vq_cache *c, char *err)
{
    if (c->cfg->sinks == 0)
        return VQ_OK;
    if (c->ev.kind != VQ_EVICT_NONE)
        return vq_fail(err, VQ_ERR_INVALID_ARG,
                       "cache config: sinks=%ld needs evict=none (streaming_llm has its own sinks=; the other "
                       "policies rank tokens themselves)",
                       c->cfg->sinks);
    if (c->cfg->cross[0] && !(c->cfg->cross[0] == 'n' && c->cfg->cross[1] == 'o'))
        return vq_fail(err, VQ_ERR_INVALID_ARG, "cache config: sinks=%ld needs cross=none", c->cfg->sinks);
    return VQ_OK;
}

vq_status vq_cache_sinks_validate(const vq_cache *c, const vq_cache_layer *L, const vq_cache_head *H,
                                  int64_t last_packed, char *err)
{
    size_t ns = vq_cache_head_sinks(c, L, H);
    int64_t prev = -1;
    for (size_t i = 0; i < H->n_res; i++) {
        if (H->rpos[i] <= prev || (i >= ns && H->rpos[i] <= last_packed))
            return vq_fail(err, VQ_ERR_FORMAT, "cache file: residual token %zu: bad position", i);
        prev = H->rpos[i];
    }
    return VQ_OK;
}
