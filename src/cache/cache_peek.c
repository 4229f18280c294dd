/* cache_peek.c -- see cache_peek.h. */
#include "cache/cache_peek.h"

#include "cache/cache_internal.h"

vq_codec *vq_cache_codec_of(const vq_cache *c, int layer, vq_role role)
{
    if (!c || layer < 0 || layer >= c->n_layers)
        return NULL;
    return role == VQ_ROLE_KEY ? c->layers[layer].kc : c->layers[layer].vc;
}

int32_t vq_cache_last_pos(const vq_cache *c, int layer)
{
    if (!c || layer < 0 || layer >= c->n_layers)
        return -1;
    return c->layers[layer].last_pos;
}

int vq_cache_n_layers(const vq_cache *c) { return c ? c->n_layers : 0; }
uint64_t vq_cache_fingerprint(const vq_cache *c) { return c ? c->fingerprint : 0; }
