/* kv_float.c -- the plain float32 K/V buffer behind the kv_iface.h seam.
 *
 * Storage per layer: K and V as [n_kv_heads][max_tokens][head_dim] floats
 * (head-major, so one head's keys are contiguous for the score loop). The
 * buffers are reserved at creation with calloc (large blocks come from
 * mmap and are only made resident when written), so held memory grows with
 * the tokens appended; bytes() reports tokens held x bytes per token.
 * Sliding-window layers keep all positions too (attention only reads the
 * window); the compressed cache is where memory is saved.
 *
 * Attention, batches of tokens (prefill, scoring): one work item per
 * (query token, KV head) over the pool, the head's query heads sharing
 * each read of K and V. One token (decode): the context is split into
 * chunks of KVF_CHUNK positions, one item per (KV head, chunk) giving the
 * chunk's partial softmax (max, sum, weighted values) for the head's query
 * heads, merged in chunk order afterwards (split-K, as flash-decoding), so
 * every thread reads a share of K and V once and the result does not
 * depend on the number of threads. Each thread has score rows of
 * max_tokens floats and the partials have room for every chunk, all
 * allocated at creation (no allocation per call). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/vexp.h"
#include "model/kv_iface.h"
#include "kernels/kernels.h"
#include "model/ops.h"

/* decode split-K: positions per chunk (fixed, so results do not depend on
 * the thread count) */
#define KVF_CHUNK 1024

typedef struct {
    float *k[VQ_MAX_LAYERS];
    float *v[VQ_MAX_LAYERS];
    int n_tok[VQ_MAX_LAYERS];
    float *scores;     /* [n_threads][score_rows][max_tokens] */
    size_t score_rows; /* the largest query-head group of any layer */
    float *part;       /* decode partials: [item][score_rows][2 + head_dim] */
    size_t part_stride; /* floats per item */
    int n_threads;
} kv_float;

static size_t layer_token_floats(const vq_layer_shape *ls)
{
    return (size_t)ls->n_kv_heads * (size_t)ls->head_dim;
}

static vq_status kvf_append(vq_kv *kv, int layer, const float *k, const float *v, int n, int pos0)
{
    kv_float *f = kv->impl;
    const vq_layer_shape *ls = &kv->shape.layer[layer];
    if (pos0 != f->n_tok[layer])
        return vq_fail(kv->err, VQ_ERR_STATE, "kv float: layer %d append at %d, holds %d",
                       layer, pos0, f->n_tok[layer]);
    if (n < 0 || n > kv->shape.max_tokens - pos0)
        return vq_fail(kv->err, VQ_ERR_STATE, "kv float: %d tokens at %d exceed capacity %d",
                       n, pos0, kv->shape.max_tokens);
    size_t hd = (size_t)ls->head_dim, mt = (size_t)kv->shape.max_tokens;
    for (int t = 0; t < n; t++)
        for (int g = 0; g < ls->n_kv_heads; g++) {
            size_t src = ((size_t)t * (size_t)ls->n_kv_heads + (size_t)g) * hd;
            size_t dst = ((size_t)g * mt + (size_t)(pos0 + t)) * hd;
            memcpy(f->k[layer] + dst, k + src, hd * sizeof(float));
            memcpy(f->v[layer] + dst, v + src, hd * sizeof(float));
        }
    f->n_tok[layer] = pos0 + n;
    return VQ_OK;
}

typedef struct {
    vq_kv *kv;
    int layer, n, pos0;
    const float *q;
    float *out;
} attend_job;

/* Work items [b, e): (query token, KV head) pairs whose `group` query heads
 * share each read of K and V; tid picks the score rows. A query's result
 * does not depend on which thread runs it. */
static void attend_items(void *arg, size_t b, size_t e, int tid)
{
    attend_job *j = arg;
    vq_kv *kv = j->kv;
    kv_float *f = kv->impl;
    const vq_layer_shape *ls = &kv->shape.layer[j->layer];
    size_t hd = (size_t)ls->head_dim, mt = (size_t)kv->shape.max_tokens;
    int nq = ls->n_q_heads, group = ls->n_q_heads / ls->n_kv_heads;
    int per = ls->n_kv_heads, nh = group;
    float *s = f->scores + (size_t)tid * f->score_rows * mt;
    const vq_kernels *kern = vq_kernels_get();
    for (size_t it = b; it < e; it++) {
        int t = (int)(it / (size_t)per), x = (int)(it % (size_t)per);
        int h0 = x * group, g = x;
        int p = j->pos0 + t;
        int lo = (ls->window > 0 && p - ls->window + 1 > 0) ? p - ls->window + 1 : 0;
        const float *q = j->q + ((size_t)t * (size_t)nq + (size_t)h0) * hd;
        const float *K = f->k[j->layer] + (size_t)g * mt * hd;
        const float *V = f->v[j->layer] + (size_t)g * mt * hd;
        size_t nk = (size_t)(p - lo + 1);
        kern->dense_dot(q, hd, nh, K + (size_t)lo * hd, VQ_ELEM_F32, nk, hd, s, nk);
        for (int r = 0; r < nh; r++) {
            float *sr = s + (size_t)r * nk;
            for (size_t pj = 0; pj < nk; pj++)
                sr[pj] *= kv->shape.scale;
            if (ls->softcap > 0)
                for (size_t pj = 0; pj < nk; pj++)
                    sr[pj] = ls->softcap * tanhf(sr[pj] / ls->softcap);
            vq_softmax(sr, nk);
        }
        float *o = j->out + ((size_t)t * (size_t)nq + (size_t)h0) * hd;
        memset(o, 0, (size_t)nh * hd * sizeof(float));
        kern->dense_axpy(s, nk, nh, V + (size_t)lo * hd, VQ_ELEM_F32, nk, hd, o, hd);
    }
}

typedef struct {
    vq_kv *kv;
    int layer, pos;
    const float *q;
    size_t chunks; /* per KV head */
} decode_job;

/* item it = (KV head g, chunk c): over positions [lo, p] of chunk c, per
 * query head r of the group: m = max scaled score, l = sum exp(s - m),
 * acc = sum exp(s - m) v (m = -inf, l = 0, acc = 0 for an empty chunk) */
static void decode_items(void *arg, size_t b, size_t e, int tid)
{
    decode_job *j = arg;
    vq_kv *kv = j->kv;
    kv_float *f = kv->impl;
    const vq_layer_shape *ls = &kv->shape.layer[j->layer];
    const size_t hd = (size_t)ls->head_dim, mt = (size_t)kv->shape.max_tokens;
    const int group = ls->n_q_heads / ls->n_kv_heads, p = j->pos;
    const int lo = (ls->window > 0 && p - ls->window + 1 > 0) ? p - ls->window + 1 : 0;
    float *s = f->scores + (size_t)tid * f->score_rows * mt;
    const vq_kernels *kern = vq_kernels_get();
    for (size_t it = b; it < e; it++) {
        const int g = (int)(it / j->chunks), c = (int)(it % j->chunks);
        float *part = f->part + it * f->part_stride;
        const int a = c * KVF_CHUNK > lo ? c * KVF_CHUNK : lo, z = (c + 1) * KVF_CHUNK - 1 < p ? (c + 1) * KVF_CHUNK - 1 : p;
        for (int r = 0; r < group; r++) {
            float *pr = part + (size_t)r * (2 + hd);
            pr[0] = -INFINITY, pr[1] = 0.0f;
            memset(pr + 2, 0, hd * sizeof(float));
        }
        if (a > z)
            continue;
        const size_t nk = (size_t)(z - a + 1);
        const float *q = j->q + (size_t)g * (size_t)group * hd;
        const float *K = f->k[j->layer] + ((size_t)g * mt + (size_t)a) * hd;
        const float *V = f->v[j->layer] + ((size_t)g * mt + (size_t)a) * hd;
        kern->dense_dot(q, hd, group, K, VQ_ELEM_F32, nk, hd, s, nk);
        for (int r = 0; r < group; r++) {
            float *sr = s + (size_t)r * nk, *pr = part + (size_t)r * (2 + hd);
            for (size_t pj = 0; pj < nk; pj++)
                sr[pj] *= kv->shape.scale;
            if (ls->softcap > 0)
                for (size_t pj = 0; pj < nk; pj++)
                    sr[pj] = ls->softcap * tanhf(sr[pj] / ls->softcap);
            pr[0] = vq_row_max(sr, nk);
            pr[1] = vq_exp_shift(sr, nk, 1.0f, pr[0]);
        }
        /* acc rows at stride 2 + hd, after each row's (m, l) */
        kern->dense_axpy(s, nk, group, V, VQ_ELEM_F32, nk, hd, part + 2, 2 + hd);
    }
}

/* one token at position pos: split-K items, then per query head the
 * chunks merged in order: out = sum_c e^(m_c - M) acc_c / sum_c e^(m_c - M) l_c */
static void decode_attend(vq_kv *kv, int layer, const float *q, int pos, float *out)
{
    kv_float *f = kv->impl;
    const vq_layer_shape *ls = &kv->shape.layer[layer];
    const size_t hd = (size_t)ls->head_dim;
    const int group = ls->n_q_heads / ls->n_kv_heads;
    decode_job j = { kv, layer, pos, q, (size_t)pos / KVF_CHUNK + 1 };
    const size_t items = (size_t)ls->n_kv_heads * j.chunks;
    if (f->n_threads > 1 && items > 1)
        vq_pool_for(kv->pool, items, 1, decode_items, &j);
    else
        decode_items(&j, 0, items, 0);
    for (int g = 0; g < ls->n_kv_heads; g++)
        for (int r = 0; r < group; r++) {
            float *o = out + ((size_t)g * (size_t)group + (size_t)r) * hd, M = -INFINITY, L = 0.0f;
            for (size_t c = 0; c < j.chunks; c++) {
                const float m = f->part[((size_t)g * j.chunks + c) * f->part_stride + (size_t)r * (2 + hd)];
                M = m > M ? m : M;
            }
            memset(o, 0, hd * sizeof(float));
            for (size_t c = 0; c < j.chunks; c++) {
                const float *pr = f->part + ((size_t)g * j.chunks + c) * f->part_stride + (size_t)r * (2 + hd);
                if (pr[0] == -INFINITY)
                    continue;
                const float w = expf(pr[0] - M);
                L += w * pr[1];
                for (size_t d = 0; d < hd; d++)
                    o[d] += w * pr[2 + d];
            }
            const float inv = 1.0f / L;
            for (size_t d = 0; d < hd; d++)
                o[d] *= inv;
        }
}

static vq_status kvf_attend(vq_kv *kv, int layer, const float *q, int n, int pos0, float *out)
{
    kv_float *f = kv->impl;
    if (pos0 < 0 || n < 1 || pos0 + n > f->n_tok[layer])
        return vq_fail(kv->err, VQ_ERR_STATE,
                       "kv float: attend to positions %d..%d but layer %d holds %d", pos0,
                       pos0 + n - 1, layer, f->n_tok[layer]);
    if (n == 1) { /* decode: split-K over the context */
        decode_attend(kv, layer, q, pos0, out);
        return VQ_OK;
    }
    /* a batch of tokens (prefill, scoring) groups the query heads of a KV
     * head */
    const vq_layer_shape *ls = &kv->shape.layer[layer];
    attend_job j = { kv, layer, n, pos0, q, out };
    size_t items = (size_t)n * (size_t)ls->n_kv_heads;
    if (f->n_threads > 1 && items > 1)
        vq_pool_for(kv->pool, items, 1, attend_items, &j);
    else
        attend_items(&j, 0, items, 0);
    return VQ_OK;
}

static void kvf_reset(vq_kv *kv)
{
    kv_float *f = kv->impl;
    for (int l = 0; l < kv->shape.n_layers; l++)
        f->n_tok[l] = 0;
}

static size_t kvf_bytes_per_token(const vq_kv *kv)
{
    size_t b = 0;
    for (int l = 0; l < kv->shape.n_layers; l++)
        b += 2 * layer_token_floats(&kv->shape.layer[l]) * sizeof(float);
    return b;
}

static size_t kvf_bytes(const vq_kv *kv)
{
    const kv_float *f = kv->impl;
    size_t b = 0;
    for (int l = 0; l < kv->shape.n_layers; l++)
        b += (size_t)f->n_tok[l] * 2 * layer_token_floats(&kv->shape.layer[l]) * sizeof(float);
    return b;
}

static void kvf_destroy(vq_kv *kv)
{
    kv_float *f = kv->impl;
    if (f) {
        for (int l = 0; l < kv->shape.n_layers; l++) {
            free(f->k[l]);
            free(f->v[l]);
        }
        free(f->scores);
        free(f->part);
        free(f);
    }
    free(kv);
}

static const vq_kv_ops kv_float_ops = {
    .name = "float32",
    .append = kvf_append,
    .attend = kvf_attend,
    .reset = kvf_reset,
    .bytes = kvf_bytes,
    .bytes_per_token = kvf_bytes_per_token,
    .destroy = kvf_destroy,
};

vq_status vq_kv_float_create(const vq_kv_shape *shape, vq_pool *pool, vq_kv **out)
{
    if (!shape || !out)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "kv float: NULL argument");
    *out = NULL;
    if (shape->n_layers < 1 || shape->n_layers > VQ_MAX_LAYERS || shape->max_tokens < 1)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "kv float: bad shape (%d layers, %d tokens)",
                       shape->n_layers, shape->max_tokens);
    for (int l = 0; l < shape->n_layers; l++) {
        const vq_layer_shape *ls = &shape->layer[l];
        if (ls->n_kv_heads < 1 || ls->head_dim < 1 || ls->n_q_heads < ls->n_kv_heads ||
            ls->n_q_heads % ls->n_kv_heads != 0 || ls->window < 0)
            return vq_fail(NULL, VQ_ERR_INVALID_ARG,
                           "kv float: layer %d: bad heads (q %d, kv %d, dim %d, window %d)", l,
                           ls->n_q_heads, ls->n_kv_heads, ls->head_dim, ls->window);
    }
    vq_kv *kv = calloc(1, sizeof *kv);
    kv_float *f = calloc(1, sizeof *f);
    if (!kv || !f) {
        free(kv);
        free(f);
        return vq_fail(NULL, VQ_ERR_NOMEM, "kv float: out of memory");
    }
    kv->ops = &kv_float_ops;
    kv->shape = *shape;
    kv->pool = pool;
    kv->impl = f;
    f->n_threads = vq_pool_size(pool);
    size_t mt = (size_t)shape->max_tokens;
    f->score_rows = 1;
    for (int l = 0; l < shape->n_layers; l++) {
        size_t gq = (size_t)(shape->layer[l].n_q_heads / shape->layer[l].n_kv_heads);
        f->score_rows = gq > f->score_rows ? gq : f->score_rows;
    }
    size_t kv_max = 1, hd_max = 1;
    for (int l = 0; l < shape->n_layers; l++) {
        kv_max = (size_t)shape->layer[l].n_kv_heads > kv_max ? (size_t)shape->layer[l].n_kv_heads : kv_max;
        hd_max = (size_t)shape->layer[l].head_dim > hd_max ? (size_t)shape->layer[l].head_dim : hd_max;
    }
    f->part_stride = f->score_rows * (2 + hd_max);
    int ok = (f->scores = calloc((size_t)f->n_threads * f->score_rows * mt, sizeof(float))) != NULL &&
             (f->part = malloc(kv_max * ((mt - 1) / KVF_CHUNK + 1) * f->part_stride * sizeof(float))) != NULL;
    for (int l = 0; ok && l < shape->n_layers; l++) {
        size_t nf = layer_token_floats(&shape->layer[l]) * mt;
        f->k[l] = calloc(nf, sizeof(float));
        f->v[l] = calloc(nf, sizeof(float));
        ok = f->k[l] && f->v[l];
    }
    if (!ok) {
        kvf_destroy(kv);
        return vq_fail(NULL, VQ_ERR_NOMEM, "kv float: cannot reserve %d tokens", shape->max_tokens);
    }
    *out = kv;
    return VQ_OK;
}
