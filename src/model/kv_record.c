/* kv_record.c -- see kv_record.h. */
#include "model/kv_record.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    vq_kv *inner; /* the float buffer, owned */
    float *k[VQ_MAX_LAYERS], *v[VQ_MAX_LAYERS];
    size_t n[VQ_MAX_LAYERS];
} kv_rec;

static size_t tok_floats(const vq_kv *kv, int l)
{
    return (size_t)kv->shape.layer[l].n_kv_heads * (size_t)kv->shape.layer[l].head_dim;
}

static vq_status rec_append(vq_kv *kv, int layer, const float *k, const float *v, int n, int pos0)
{
    kv_rec *r = kv->impl;
    vq_status st = r->inner->ops->append(r->inner, layer, k, v, n, pos0);
    if (st != VQ_OK)
        return vq_fail(kv->err, st, "%s", r->inner->err);
    size_t tf = tok_floats(kv, layer);
    /* the inner buffer checked capacity: n[layer] + n <= max_tokens */
    memcpy(r->k[layer] + r->n[layer] * tf, k, (size_t)n * tf * sizeof(float));
    memcpy(r->v[layer] + r->n[layer] * tf, v, (size_t)n * tf * sizeof(float));
    r->n[layer] += (size_t)n;
    return VQ_OK;
}

static vq_status rec_attend(vq_kv *kv, int layer, const float *q, int n, int pos0, float *out)
{
    kv_rec *r = kv->impl;
    vq_status st = r->inner->ops->attend(r->inner, layer, q, n, pos0, out);
    if (st != VQ_OK)
        return vq_fail(kv->err, st, "%s", r->inner->err);
    return VQ_OK;
}

static void rec_reset(vq_kv *kv)
{
    kv_rec *r = kv->impl;
    r->inner->ops->reset(r->inner);
    memset(r->n, 0, sizeof r->n);
}

static size_t rec_bytes(const vq_kv *kv)
{
    const kv_rec *r = kv->impl;
    return r->inner->ops->bytes(r->inner);
}

static size_t rec_bpt(const vq_kv *kv)
{
    const kv_rec *r = kv->impl;
    return r->inner->ops->bytes_per_token(r->inner);
}

static void rec_destroy(vq_kv *kv)
{
    kv_rec *r = kv->impl;
    if (r) {
        vq_kv_free(r->inner);
        for (int l = 0; l < VQ_MAX_LAYERS; l++) {
            free(r->k[l]);
            free(r->v[l]);
        }
        free(r);
    }
    free(kv);
}

static const vq_kv_ops kv_rec_ops = {
    .name = "float32+record",
    .append = rec_append,
    .attend = rec_attend,
    .reset = rec_reset,
    .bytes = rec_bytes,
    .bytes_per_token = rec_bpt,
    .destroy = rec_destroy,
};

vq_status vq_kv_record_create(const vq_kv_shape *shape, vq_pool *pool, vq_kv **out)
{
    if (!out)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "kv record: NULL argument");
    *out = NULL;
    vq_kv *inner = NULL;
    VQ_TRY(vq_kv_float_create(shape, pool, &inner));
    vq_kv *kv = calloc(1, sizeof *kv);
    kv_rec *r = calloc(1, sizeof *r);
    if (!kv || !r) {
        free(kv);
        free(r);
        vq_kv_free(inner);
        return vq_fail(NULL, VQ_ERR_NOMEM, "kv record: out of memory");
    }
    kv->ops = &kv_rec_ops;
    kv->shape = *shape;
    kv->pool = pool;
    kv->impl = r;
    r->inner = inner;
    for (int l = 0; l < shape->n_layers; l++) {
        size_t nf = tok_floats(kv, l) * (size_t)shape->max_tokens;
        r->k[l] = malloc(nf * sizeof(float));
        r->v[l] = malloc(nf * sizeof(float));
        if (!r->k[l] || !r->v[l]) {
            rec_destroy(kv);
            return vq_fail(NULL, VQ_ERR_NOMEM, "kv record: cannot hold %d tokens of K/V", shape->max_tokens);
        }
    }
    *out = kv;
    return VQ_OK;
}

const float *vq_kv_record_keys(const vq_kv *kv, int layer, size_t *n)
{
    if (!kv || kv->ops != &kv_rec_ops || layer < 0 || layer >= kv->shape.n_layers)
        return NULL;
    const kv_rec *r = kv->impl;
    *n = r->n[layer];
    return r->k[layer];
}

const float *vq_kv_record_values(const vq_kv *kv, int layer, size_t *n)
{
    if (!kv || kv->ops != &kv_rec_ops || layer < 0 || layer >= kv->shape.n_layers)
        return NULL;
    const kv_rec *r = kv->impl;
    *n = r->n[layer];
    return r->v[layer];
}
