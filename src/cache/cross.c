/* cross.c -- the cross-layer sharing methods (cross=...) and the calls the
 * rest of the cache makes into them (the vq_cross_ops contract is in
 * cache_internal.h). Each helper is a no-op for a cache without cross= or
 * a method without that entry. */
#include <stdio.h>
#include <string.h>

#include "cache/cache_internal.h"

static const vq_cross_ops *const METHODS[] = { &vq_cross_minicache_ops, &vq_cross_xkv_ops, &vq_cross_xquant_ops,
                                               NULL };

static const vq_cross_ops *by_name(const char *name)
{
    for (int i = 0; METHODS[i]; i++)
        if (strcmp(METHODS[i]->name, name) == 0)
            return METHODS[i];
    return NULL;
}

vq_status vq_cache_cross_parse(const char *text, char *canon, size_t cap, char *err)
{
    if (strcmp(text, "none") == 0) {
        snprintf(canon, cap, "none");
        return VQ_OK;
    }
    vq_spec sp;
    VQ_TRY(vq_spec_parse(text, &sp, err));
    const vq_cross_ops *m = by_name(sp.name);
    if (!m)
        return vq_fail(err, VQ_ERR_INVALID_ARG, "cross: unknown method '%s' (none, minicache, xkv, xquant)", sp.name);
    VQ_TRY(m->canon(&sp, canon, cap, err));
    return vq_spec_check_unused(&sp, err);
}

const vq_cross_ops *vq_cross_find(const char *spec)
{
    vq_spec sp;
    if (strcmp(spec, "none") == 0 || vq_spec_parse(spec, &sp, NULL) != VQ_OK)
        return NULL;
    return by_name(sp.name);
}

vq_status vq_cross_setup(vq_cache *c, char *err)
{
    c->cross = vq_cross_find(c->cfg->cross);
    return c->cross ? c->cross->setup(c, err) : VQ_OK;
}

int vq_cross_codec(vq_cache *c, int l, vq_role role, uint64_t seed, vq_codec **out, vq_status *st)
{
    return c->cross && c->cross->codec ? c->cross->codec(c, l, role, seed, out, st) : 0;
}

vq_status vq_cross_layers_ready(vq_cache *c, char *err)
{
    return c->cross && c->cross->layers_ready ? c->cross->layers_ready(c, err) : VQ_OK;
}

vq_status vq_cross_append(vq_cache *c, int layer, const float *k, const float *v, size_t n, int32_t pos0, int *done)
{
    *done = 0;
    return c->cross && c->cross->append ? c->cross->append(c, layer, k, v, n, pos0, done) : VQ_OK;
}

vq_status vq_cross_grow(vq_cache *c, vq_cache_layer *L, size_t need, int *grown)
{
    *grown = 0;
    return c->cross && c->cross->grow ? c->cross->grow(c, L, need, grown) : VQ_OK;
}

vq_status vq_cross_after_append(vq_cache *c, int layer)
{
    return c->cross && c->cross->after_append ? c->cross->after_append(c, layer) : VQ_OK;
}

vq_status vq_cross_bind(vq_cache *c, const vq_cache_layer *L, size_t h, size_t slot, vq_codec *kc, vq_codec *vc)
{
    return c->cross && c->cross->bind ? c->cross->bind(c, L, h, slot, kc, vc) : VQ_OK;
}

int vq_cross_binds(const vq_cache *c) { return c->cross && c->cross->bind; }

vq_status vq_cross_gather(vq_cache *c, int layer, int h, size_t cap, int32_t *pos, float *k, float *v, size_t *n,
                          int *done)
{
    *done = 0;
    return c->cross && c->cross->gather ? c->cross->gather(c, layer, h, cap, pos, k, v, n, done) : VQ_OK;
}

vq_cache_layer *vq_cross_lender(vq_cache *c, const vq_cache_layer *L)
{
    return c->cross && c->cross->lender ? c->cross->lender(c, L) : NULL;
}

void vq_cross_stats(const vq_cache *c, const vq_cache_layer *L, vq_cache_usage *u)
{
    if (c->cross && c->cross->stats)
        c->cross->stats(c, L, u);
}

size_t vq_cross_buffer_bytes(const vq_cache *c)
{
    return c->cross && c->cross->buffer_bytes ? c->cross->buffer_bytes(c) : 0;
}

void vq_cross_reset(vq_cache *c)
{
    if (c->cross && c->cross->reset)
        c->cross->reset(c);
}

int vq_cross_has_section(const vq_cache *c) { return c->cross && c->cross->save; }

void vq_cross_free(vq_cache *c)
{
    if (c->cross && c->cross->free)
        c->cross->free(c);
    c->xstate = NULL;
}
