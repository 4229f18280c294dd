/* prerope.c -- keys packed before RoPE (contract in prerope.h). */
#include "cache/prerope.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct vq_prerope {
    int n_layers;
    float **inv_freq; /* [n_layers][D/2] or NULL (not set) */
    int *neox;
};

int vq_cache_prerope_on(const vq_cache *c) { return c && c->cfg->prerope; }

vq_status vq_cache_prerope_check(const vq_cache *c, char *err)
{
    if (c->cfg->prerope && strcmp(c->cfg->cross, "none") != 0)
        return vq_fail(err, VQ_ERR_INVALID_ARG, "cache config: prerope=1 needs cross=none");
    return VQ_OK;
}

vq_status vq_cache_prerope_set(vq_cache *c, int l, const float *inv_freq, int neox)
{
    if (!c || !inv_freq)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "prerope: NULL argument");
    if (!c->cfg->prerope)
        return vq_fail(c->err, VQ_ERR_STATE, "prerope: the cache config has no prerope=1");
    if (l < 0 || l >= c->n_layers)
        return vq_fail(c->err, VQ_ERR_INVALID_ARG, "prerope: layer %d out of range", l);
    if (!c->prerope) {
        struct vq_prerope *p = calloc(1, sizeof *p);
        if (p) {
            p->inv_freq = calloc((size_t)c->n_layers, sizeof *p->inv_freq);
            p->neox = calloc((size_t)c->n_layers, sizeof *p->neox);
        }
        if (!p || !p->inv_freq || !p->neox) {
            if (p) {
                free(p->inv_freq);
                free(p->neox);
            }
            free(p);
            return vq_fail(c->err, VQ_ERR_NOMEM, "prerope: out of memory");
        }
        p->n_layers = c->n_layers;
        c->prerope = p;
    }
    size_t half = (size_t)c->layers[l].shape.head_dim / 2;
    float *f = c->prerope->inv_freq[l] ? c->prerope->inv_freq[l] : malloc(half * sizeof *f);
    if (!f)
        return vq_fail(c->err, VQ_ERR_NOMEM, "prerope: out of memory");
    for (size_t i = 0; i < half; i++)
        if (!isfinite(inv_freq[i]) || inv_freq[i] < 0.0f) {
            if (!c->prerope->inv_freq[l])
                free(f);
            return vq_fail(c->err, VQ_ERR_INVALID_ARG, "prerope: layer %d: inv_freq[%zu] invalid", l, i);
        }
    memcpy(f, inv_freq, half * sizeof *f);
    c->prerope->inv_freq[l] = f;
    c->prerope->neox[l] = neox != 0;
    return VQ_OK;
}

vq_status vq_cache_prerope_ready(vq_cache *c, const vq_cache_layer *L)
{
    int l = (int)(L - c->layers);
    if (!c->cfg->prerope || (c->prerope && c->prerope->inv_freq[l]))
        return VQ_OK;
    return vq_fail(c->err, VQ_ERR_STATE,
                   "cache layer %d: prerope=1 needs the model's RoPE (create the cache with vq_cache_for_model)", l);
}

/* rotate the pairs of x (D floats) by sign * pos * inv_freq */
static void rope_one(float *x, size_t D, int32_t pos, const float *inv_freq, int neox, double sign)
{
    size_t half = D / 2;
    for (size_t i = 0; i < half; i++) {
        double th = sign * (double)pos * (double)inv_freq[i];
        float cs = (float)cos(th), sn = (float)sin(th);
        size_t i0 = neox ? i : 2 * i, i1 = neox ? i + half : 2 * i + 1;
        float a = x[i0], b = x[i1];
        x[i0] = a * cs - b * sn;
        x[i1] = a * sn + b * cs;
    }
}

vq_status vq_cache_prerope_unrope(vq_cache *c, const vq_cache_layer *L, const int32_t *pos, size_t n, float *x)
{
    if (!c->cfg->prerope)
        return VQ_OK;
    VQ_TRY(vq_cache_prerope_ready(c, L));
    int l = (int)(L - c->layers);
    size_t D = (size_t)L->shape.head_dim;
    for (size_t t = 0; t < n; t++)
        rope_one(x + t * D, D, pos[t], c->prerope->inv_freq[l], c->prerope->neox[l], -1.0);
    return VQ_OK;
}

void vq_cache_prerope_rerope(const vq_cache *c, const vq_cache_layer *L, const vq_cache_head *H, size_t s0,
                             size_t n, float *x)
{
    if (!c->cfg->prerope || !c->prerope)
        return;
    int l = (int)(L - c->layers);
    size_t D = (size_t)L->shape.head_dim;
    if (!c->prerope->inv_freq[l])
        return;
    for (size_t t = 0; t < n; t++)
        rope_one(x + t * D, D, vq_head_pos(H, s0 + t), c->prerope->inv_freq[l], c->prerope->neox[l], 1.0);
}

vq_status vq_cache_key_scores(vq_cache *c, const vq_cache_layer *L, const vq_cache_head *H, vq_codec *kc,
                              size_t pg, size_t n, const uint8_t *qbuf, const float *qf, size_t nq, float *out)
{
    if (!c->cfg->prerope)
        return vq_codec_score(kc, qbuf, (int)nq, H->kpages[pg], n, out);
    const size_t D = (size_t)L->shape.head_dim, B = vq_codec_block_tokens(kc), bpt = vq_codec_bytes_per_token(kc);
    const size_t s0 = pg * L->page_tokens;
    float *k = malloc(B * D * sizeof *k);
    if (!k)
        return vq_fail(c->err, VQ_ERR_NOMEM, "prerope: out of memory for a key block");
    vq_status st = VQ_OK;
    for (size_t b = 0; b < n && st == VQ_OK; b += B) {
        st = vq_codec_decode(kc, H->kpages[pg] + b * bpt, B, k);
        if (st != VQ_OK)
            break;
        size_t m = n - b < B ? n - b : B;
        vq_cache_prerope_rerope(c, L, H, s0 + b, m, k);
        for (size_t j = 0; j < nq; j++) {
            const float *q = qf + j * D;
            for (size_t i = 0; i < m; i++) {
                const float *ki = k + i * D;
                float s = 0.0f;
                for (size_t d = 0; d < D; d++)
                    s += q[d] * ki[d];
                out[j * n + b + i] = s;
            }
        }
    }
    free(k);
    return st;
}

size_t vq_cache_prerope_bytes(const vq_cache *c)
{
    if (!c->prerope)
        return 0;
    size_t b = sizeof *c->prerope + (size_t)c->n_layers * (sizeof(float *) + sizeof(int));
    for (int l = 0; l < c->n_layers; l++)
        if (c->prerope->inv_freq[l])
            b += (size_t)c->layers[l].shape.head_dim / 2 * sizeof(float);
    return b;
}

void vq_cache_prerope_free(vq_cache *c)
{
    if (!c->prerope)
        return;
    for (int l = 0; l < c->prerope->n_layers; l++)
        free(c->prerope->inv_freq[l]);
    free(c->prerope->inv_freq);
    free(c->prerope->neox);
    free(c->prerope);
    c->prerope = NULL;
}
