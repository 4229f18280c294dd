/* xkv.c -- a low-rank key basis shared by a group of layers (after xKV,
 * Chang et al. 2025, "xKV: Cross-Layer SVD for KV-Cache Compression").
 *
 * `cross=xkv:group=2,energy=0.95,bits=4,min=64`: consecutive layers form
 * groups of `group` (the last group may be shorter; a group of one layer,
 * or one whose layers differ in head_dim, stays plain). Keys only: values
 * keep the layer's configured value codec.
 *
 * The basis. The paper stacks the group's layers side by side and shares
 * the token-side singular vectors; here (as docs/METHODS.md describes) the
 * group shares a feature-space basis: the eigenvectors of the covariance
 * of the group's centred keys, all layers and all KV heads stacked as rows
 * (one basis per group, not per head: the codec layer has no head index),
 * rank r = the fewest leading eigenvectors holding `energy` of the
 * variance (Jacobi eigensolver, codec/eigen.h). The mean is shared too.
 *
 * When. Until the basis is fixed, the group's layers keep every token fp16
 * in their residual window (grown as needed; counted as residual tokens,
 * attention on them is exact). The basis is fitted once, right after the
 * group's LAST layer has appended and holds >= `min` tokens (per KV head):
 * from all tokens the group's layers hold then (a prefill of >= min tokens
 * fits at once; a short prompt waits for decode steps). The held tokens
 * are then encoded (all but `residual` newest), the window shrinks back to
 * residual + group, and later tokens are projected onto the fixed basis
 * (it is never refitted).
 *
 * Per token and KV head the key stores y = U_r^T (k - mean) quantized
 * per token, asymmetric over the r coordinates at `bits`:
 *   [ceil(r * bits / 8) code bytes][u16 scale fp16][u16 zero fp16]
 * Attention scores in the low-rank domain: the query is projected once,
 * q' = U_r^T q, and <q, k^> = s <q', c> + z sum(q') + <q, mean>; <q', c>
 * of XKV_TILE tokens at a time by the kernel table (codes unpacked by
 * bits_unpack, made floats by lut8_row, rows of r8 = r rounded up to 8
 * floats, zero past r, scored by dense_dot).
 * Shared state: mean + basis (4 (D + D r) bytes), counted once per group
 * (as the first layer's key codec shared bytes). Eviction policies are
 * refused (not implemented with the pre-fit window). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache_internal.h"
#include "core/bitstream.h"
#include "codec/eigen.h"
#include "core/fp16.h"
#include "core/mem.h"
#include "core/io.h"
#include "core/rng.h"
#include "codec/halves.h"
#include "kernels/kernels.h"

#define XKV_TILE 32 /* tokens per dense_dot call */

typedef struct {
    int first, n, D, fitted, rank;
    float *mean;  /* [D] */
    float *basis; /* [D][rank], column j = j-th eigenvector */
} xkv_group;

typedef struct {
    int n_groups, bits;
    double energy;
    long min;
    xkv_group *g;
} xkv_state;

typedef struct {
    const xkv_group *grp; /* borrowed from the cache's state */
    int bits;
    size_t code_bytes;
    size_t r8;            /* rank rounded up to 8: a tile row, the query's q' */
    float *y;             /* [rank] scratch */
    uint8_t *c;           /* [rank] codes */
    float *ones, *zeros;  /* [rank]: lut8_row's scale and offset for code -> float */
    float *tile;          /* [XKV_TILE][r8] codes as floats, zero past rank */
} xkv_impl;

/* ---- the key codec -------------------------------------------------------- */

/* coordinates of token t -> m->y (dequantized) */
static void coords(vq_codec *c, const uint8_t *src, size_t t)
{
    xkv_impl *m = c->impl;
    const size_t r = (size_t)m->grp->rank;
    const uint8_t *p = src + t * c->block_bytes;
    float s = vq_fp16_to_fp32(vq_get_u16(p + m->code_bytes)), z = vq_fp16_to_fp32(vq_get_u16(p + m->code_bytes + 2));
    vq_bits_unpack(p, r, m->bits, m->c);
    for (size_t j = 0; j < r; j++)
        m->y[j] = s * (float)m->c[j] + z;
}

static void xkv_encode(vq_codec *c, const float *x, size_t n, uint8_t *dst)
{
    xkv_impl *m = c->impl;
    const size_t D = (size_t)c->head_dim, r = (size_t)m->grp->rank;
    const float *U = m->grp->basis, *mu = m->grp->mean;
    float qmax = (float)((1 << m->bits) - 1);
    for (size_t t = 0; t < n; t++) {
        const float *k = x + t * D;
        uint8_t *p = dst + t * c->block_bytes;
        for (size_t j = 0; j < r; j++)
            m->y[j] = 0.0f;
        for (size_t d = 0; d < D; d++) {
            float kd = k[d] - mu[d];
            for (size_t j = 0; j < r; j++)
                m->y[j] += U[d * r + j] * kd;
        }
        float lo = m->y[0], hi = m->y[0];
        for (size_t j = 1; j < r; j++) {
            lo = m->y[j] < lo ? m->y[j] : lo;
            hi = m->y[j] > hi ? m->y[j] : hi;
        }
        uint16_t hs = vq_fp32_to_fp16((hi - lo) / qmax), hz = vq_fp32_to_fp16(lo);
        float s = vq_fp16_to_fp32(hs), z = vq_fp16_to_fp32(hz);
        memset(p, 0, m->code_bytes);
        for (size_t j = 0; j < r; j++) {
            float q = s > 0.0f ? roundf((m->y[j] - z) / s) : 0.0f;
            vq_bits_put(p, j, m->bits, (unsigned)(q < 0.0f ? 0.0f : q > qmax ? qmax : q));
        }
        vq_put_u16(p + m->code_bytes, hs);
        vq_put_u16(p + m->code_bytes + 2, hz);
    }
}

static void xkv_decode(vq_codec *c, const uint8_t *src, size_t n, float *x)
{
    xkv_impl *m = c->impl;
    const size_t D = (size_t)c->head_dim, r = (size_t)m->grp->rank;
    for (size_t t = 0; t < n; t++) {
        coords(c, src, t);
        for (size_t d = 0; d < D; d++) {
            float v = m->grp->mean[d];
            for (size_t j = 0; j < r; j++)
                v += m->grp->basis[d * r + j] * m->y[j];
            x[t * D + d] = v;
        }
    }
}

/* qbuf: [q' (r floats, zeros up to r8)][<q, mean>][sum q'] */
static void xkv_prepare(vq_codec *c, const float *q, uint8_t *qbuf)
{
    xkv_impl *m = c->impl;
    const size_t D = (size_t)c->head_dim, r = (size_t)m->grp->rank;
    float *o = (float *)qbuf, qm = 0.0f, sum = 0.0f;
    for (size_t j = 0; j < m->r8; j++)
        o[j] = 0.0f;
    for (size_t d = 0; d < D; d++) {
        qm += q[d] * m->grp->mean[d];
        for (size_t j = 0; j < r; j++)
            o[j] += m->grp->basis[d * r + j] * q[d];
    }
    for (size_t j = 0; j < r; j++)
        sum += o[j];
    o[m->r8] = qm;
    o[m->r8 + 1] = sum;
}

static void xkv_score(vq_codec *c, const uint8_t *qbuf, int n_q, const uint8_t *codes, size_t n, float *scores)
{
    xkv_impl *m = c->impl;
    const size_t r = (size_t)m->grp->rank, r8 = m->r8, qs = r8 + 2, bb = c->block_bytes;
    const float *q = (const float *)(const void *)qbuf;
    const vq_kernels *k = vq_kernels_get();
    float sc[XKV_TILE], zr[XKV_TILE];
    _Static_assert(XKV_TILE <= VQ_HALVES_BATCH, "the halves' batch");
    for (size_t i0 = 0; i0 < n; i0 += XKV_TILE) {
        const size_t nt = n - i0 < XKV_TILE ? n - i0 : XKV_TILE;
        const uint8_t *blk = codes + i0 * bb;
        vq_halves_strided(k, blk + m->code_bytes, bb, nt, sc);
        vq_halves_strided(k, blk + m->code_bytes + 2, bb, nt, zr);
        for (size_t i = 0; i < nt; i++) {
            k->bits_unpack(blk + i * bb, r, m->bits, m->c);
            k->lut8_row(m->c, r, NULL, m->ones, m->zeros, m->tile + i * r8);
        }
        float *out = scores + i0;
        k->dense_dot(q, qs, n_q, m->tile, VQ_ELEM_F32, nt, r8, out, n);
        for (int j = 0; j < n_q; j++) {
            const float *qj = q + (size_t)j * qs;
            for (size_t i = 0; i < nt; i++)
                out[(size_t)j * n + i] = sc[i] * out[(size_t)j * n + i] + zr[i] * qj[r8 + 1] + qj[r8];
        }
    }
}

/* keys are never accumulated by the cache; kept for the codec contract:
 * acc (r floats per query) gathers sum w y, finish maps back */
static void xkv_accumulate(vq_codec *c, const float *w, int n_q, const uint8_t *codes, size_t n, float *acc)
{
    xkv_impl *m = c->impl;
    const size_t r = (size_t)m->grp->rank;
    for (size_t i = 0; i < n; i++) {
        coords(c, codes, i);
        for (int j = 0; j < n_q; j++) {
            float wj = w[(size_t)j * n + i];
            for (size_t k = 0; k < r; k++)
                acc[(size_t)j * (r + 1) + k] += wj * m->y[k];
            acc[(size_t)j * (r + 1) + r] += wj;
        }
    }
}

static void xkv_finish(vq_codec *c, const float *acc, float *out)
{
    xkv_impl *m = c->impl;
    const size_t D = (size_t)c->head_dim, r = (size_t)m->grp->rank;
    for (size_t d = 0; d < D; d++) {
        float v = m->grp->mean[d] * acc[r];
        for (size_t j = 0; j < r; j++)
            v += m->grp->basis[d * r + j] * acc[j];
        out[d] = v;
    }
}

static void xkv_destroy(vq_codec *c)
{
    free(c->impl);
    c->impl = NULL;
}

/* a handle on group g's basis with its own scratch (one block; the tile's
 * columns past the rank stay zero) */
static xkv_impl *xkv_alloc(const xkv_group *g, int bits)
{
    const size_t r = (size_t)g->rank, r8 = (r + 7) & ~(size_t)7;
    xkv_impl *m = calloc(1, sizeof *m + sizeof(float) * (3 * r + XKV_TILE * r8) + r);
    if (!m)
        return NULL;
    m->grp = g;
    m->bits = bits;
    m->code_bytes = (r * (size_t)bits + 7) / 8;
    m->r8 = r8;
    m->y = (float *)(void *)(m + 1);
    m->ones = m->y + r;
    m->zeros = m->ones + r;
    m->tile = m->zeros + r;
    m->c = (uint8_t *)(m->tile + XKV_TILE * r8);
    for (size_t j = 0; j < r; j++)
        m->ones[j] = 1.0f;
    return m;
}

/* spec "xkv:bits=B[,shared=1]", ctx = the group (its basis fixed);
 * shared=1 on the group's first layer, which counts the basis */
static vq_status xkv_init(vq_codec *c, vq_spec *sp)
{
    const xkv_group *g = c->ctx;
    long bits, shared;
    VQ_TRY(vq_spec_int(sp, "bits", 4, 2, 8, &bits, c->err));
    VQ_TRY(vq_spec_int(sp, "shared", 0, 0, 1, &shared, c->err));
    if (!g || !g->fitted || g->D != c->head_dim)
        return vq_fail(c->err, VQ_ERR_STATE, "xkv: internal codec, made by the cache once a basis is fixed");
    xkv_impl *m = xkv_alloc(g, (int)bits);
    c->impl = m;
    if (!m)
        return vq_fail(c->err, VQ_ERR_NOMEM, "xkv: out of memory");
    c->block_tokens = 1;
    c->block_bytes = m->code_bytes + 4;
    c->shared_bytes = shared ? 4 * ((size_t)g->D + (size_t)g->D * (size_t)g->rank) : 0;
    c->query_bytes = (m->r8 + 2) * sizeof(float);
    c->accum_size = (size_t)g->rank + 1;
    snprintf(c->canon, sizeof c->canon, "xkv:rank=%d,bits=%ld", g->rank, bits);
    return VQ_OK;
}

/* a handle with its own scratch on the same (borrowed) basis */
static vq_status xkv_clone(const vq_codec *src, vq_codec *dst)
{
    const xkv_impl *s = src->impl;
    dst->impl = xkv_alloc(s->grp, s->bits);
    if (!dst->impl)
        return vq_fail(dst->err, VQ_ERR_NOMEM, "xkv: out of memory");
    return VQ_OK;
}

static const vq_codec_ops xkv_ops = {
    .name = "xkv",
    .default_spec = "xkv",
    .init = xkv_init,
    .destroy = xkv_destroy,
    .encode = xkv_encode,
    .decode = xkv_decode,
    .prepare_query = xkv_prepare,
    .score = xkv_score,
    .accumulate = xkv_accumulate,
    .accum_finish = xkv_finish,
    .clone = xkv_clone,
};

/* ---- setup ------------------------------------------------------------------ */

static vq_status xkv_params(vq_spec *sp, long *group, double *energy, long *bits, long *minn, char *err)
{
    VQ_TRY(vq_spec_int(sp, "group", 2, 2, 64, group, err));
    VQ_TRY(vq_spec_float(sp, "energy", 0.95, 0.01, 1.0, energy, err));
    VQ_TRY(vq_spec_int(sp, "bits", 4, 2, 8, bits, err));
    VQ_TRY(vq_spec_int(sp, "min", 64, 8, 1L << 20, minn, err));
    return VQ_OK;
}

static vq_status xkv_canon(vq_spec *sp, char *canon, size_t cap, char *err)
{
    long group, bits, minn;
    double energy;
    VQ_TRY(xkv_params(sp, &group, &energy, &bits, &minn, err));
    if (bits != 2 && bits != 4 && bits != 8)
        return vq_fail(err, VQ_ERR_INVALID_ARG, "xkv: parameter bits=%ld must be 2, 4 or 8", bits);
    snprintf(canon, cap, "xkv:group=%ld,energy=%g,bits=%ld,min=%ld", group, energy, bits, minn);
    return VQ_OK;
}

static vq_status xkv_setup(vq_cache *c, char *err)
{
    vq_spec sp;
    long group, bits, minn;
    double energy;
    VQ_TRY(vq_spec_parse(c->cfg->cross, &sp, err));
    VQ_TRY(xkv_params(&sp, &group, &energy, &bits, &minn, err));
    if (c->ev.kind != VQ_EVICT_NONE)
        return vq_fail(err, VQ_ERR_UNSUPPORTED, "cache config: cross: xkv cannot be combined with evict=%s",
                       c->cfg->evict);
    xkv_state *S = calloc(1, sizeof *S);
    if (!S)
        return vq_fail(err, VQ_ERR_NOMEM, "xkv: out of memory");
    c->xstate = S;
    S->bits = (int)bits;
    S->energy = energy;
    S->min = minn;
    S->g = calloc((size_t)c->n_layers, sizeof *S->g);
    if (!S->g)
        return vq_fail(err, VQ_ERR_NOMEM, "xkv: out of memory");
    for (int a = 0; a < c->n_layers; a += (int)group) {
        int n = c->n_layers - a < group ? c->n_layers - a : (int)group, ok = n >= 2;
        for (int l = a + 1; ok && l < a + n; l++)
            ok = c->shapes[l].head_dim == c->shapes[a].head_dim;
        if (!ok)
            continue;
        xkv_group *g = &S->g[S->n_groups];
        g->first = a;
        g->n = n;
        g->D = c->shapes[a].head_dim;
        for (int l = a; l < a + n; l++) {
            c->layers[l].xrole = VQ_CROSS_GROUP;
            c->layers[l].xpeer = S->n_groups;
        }
        S->n_groups++;
    }
    if (S->n_groups == 0)
        return vq_fail(err, VQ_ERR_UNSUPPORTED,
                       "cache config: cross: xkv: no group of %ld consecutive layers with equal head_dim", group);
    return VQ_OK;
}

static int xkv_codec(vq_cache *c, int l, vq_role role, uint64_t seed, vq_codec **out, vq_status *st)
{
    if (c->layers[l].xrole != VQ_CROSS_GROUP || role != VQ_ROLE_KEY)
        return 0;
    /* placeholder until the basis is fixed: every key stays in the fp16
     * window meanwhile, so it never encodes */
    *st = vq_codec_create("fp16", c->layers[l].shape.head_dim, role, seed, out);
    if (*st != VQ_OK)
        vq_fail(c->err, *st, "cache layer %d: %s", l, vq_last_error());
    return 1;
}

static void xkv_free(vq_cache *c)
{
    xkv_state *S = c->xstate;
    if (!S)
        return;
    for (int i = 0; S->g && i < S->n_groups; i++) {
        free(S->g[i].mean);
        free(S->g[i].basis);
    }
    free(S->g);
    free(S);
}

/* L is in a group whose basis is not fixed yet: its tokens stay fp16 */
static int pending(const vq_cache *c, const vq_cache_layer *L)
{
    const xkv_state *S = c->xstate;
    return L->xrole == VQ_CROSS_GROUP && !S->g[L->xpeer].fitted;
}

vq_status vq_cache_resize_window(vq_cache *c, vq_cache_layer *L, size_t cap)
{
    const size_t D2 = 2 * (size_t)L->shape.head_dim;
    for (int h = 0; h < L->shape.n_kv_heads; h++) {
        vq_cache_head *H = &L->heads[h];
        int ok = vq_resize(&H->rk, cap * D2);
        ok &= vq_resize(&H->rv, cap * D2);
        ok &= vq_resize(&H->rpos, cap * sizeof *H->rpos);
        if (H->rscore)
            ok &= vq_resize(&H->rscore, cap * sizeof *H->rscore);
        if (!ok)
            return vq_fail(c->err, VQ_ERR_NOMEM, "xkv: out of memory for the fp16 window");
    }
    L->res_cap = cap;
    return VQ_OK;
}

/* before the basis is fixed the window grows instead of flushing */
static vq_status xkv_grow(vq_cache *c, vq_cache_layer *L, size_t need, int *grown)
{
    if (!pending(c, L))
        return VQ_OK;
    *grown = 1;
    if (need <= L->res_cap)
        return VQ_OK;
    size_t cap = L->res_cap * 2 > need ? L->res_cap * 2 : need;
    VQ_TRY(vq_cache_resize_window(c, L, cap));
    return vq_cache_set_threads(c, c->threads); /* scratch sized by the window */
}

/* Install a basis on group gi: key codecs, page sizes, encode the held
 * tokens, shrink the window. mean/basis are taken over. */
static vq_status install(vq_cache *c, int gi, int rank, float *mean, float *basis, int flush)
{
    const xkv_state *S = c->xstate;
    xkv_group *g = &S->g[gi];
    g->rank = rank;
    g->mean = mean;
    g->basis = basis;
    g->fitted = 1;
    for (int l = g->first; l < g->first + g->n; l++) {
        vq_cache_layer *L = &c->layers[l];
        vq_codec *kc = NULL;
        char spec[64];
        snprintf(spec, sizeof spec, "xkv:bits=%d%s", S->bits, l == g->first ? ",shared=1" : "");
        vq_status st = vq_codec_create_ops(&xkv_ops, spec, g->D, VQ_ROLE_KEY, L->kc->seed, g, &kc);
        if (st != VQ_OK)
            return vq_fail(c->err, st, "cache layer %d: %s", l, vq_last_error());
        vq_codec_free(L->kc);
        L->kc = kc;
        if (c->n_workers >= 1 && L->kcw)
            L->kcw[0] = kc;
        L->kpage_bytes = L->page_tokens * vq_codec_bytes_per_token(kc);
        for (int h = 0; flush && h < L->shape.n_kv_heads; h++)
            VQ_TRY(vq_cache_flush_residual(c, L, &L->heads[h], (size_t)c->cfg->residual));
        size_t cap = (size_t)c->cfg->residual + L->group, held = 0;
        for (int h = 0; h < L->shape.n_kv_heads; h++)
            held = L->heads[h].n_res > held ? L->heads[h].n_res : held;
        if (held < cap && cap < L->res_cap)
            VQ_TRY(vq_cache_resize_window(c, L, cap));
    }
    return vq_cache_set_threads(c, c->threads);
}

/* fit the basis of group gi from every token its layers hold */
static vq_status fit(vq_cache *c, int gi)
{
    const xkv_state *S = c->xstate;
    xkv_group *g = &S->g[gi];
    const int D = g->D;
    double *sum = calloc((size_t)D, sizeof *sum), *cov = calloc((size_t)D * D, sizeof *cov);
    double *w = malloc((size_t)D * sizeof *w), *v = malloc((size_t)D * D * sizeof *v);
    float *x = malloc((size_t)D * sizeof *x), *mean = malloc((size_t)D * sizeof *mean), *basis = NULL;
    vq_status st = sum && cov && w && v && x && mean ? VQ_OK : vq_fail(c->err, VQ_ERR_NOMEM, "xkv: out of memory");
    size_t N = 0;
    for (int l = g->first; st == VQ_OK && l < g->first + g->n; l++) {
        vq_cache_layer *L = &c->layers[l];
        for (int h = 0; st == VQ_OK && h < L->shape.n_kv_heads; h++) {
            vq_cache_head *H = &L->heads[h];
            for (size_t t = 0; st == VQ_OK && t < H->n_res; t++) {
                st = vq_codec_decode(L->fk, H->rk + t * 2 * (size_t)D, 1, x);
                for (int i = 0; i < D; i++) {
                    sum[i] += x[i];
                    for (int j = 0; j <= i; j++)
                        cov[i * D + j] += (double)x[i] * x[j];
                }
                N++;
            }
        }
    }
    if (st == VQ_OK && N < 2)
        st = vq_fail(c->err, VQ_ERR_STATE, "xkv: group %d: %zu tokens to fit a basis", gi, N);
    if (st == VQ_OK) {
        for (int i = 0; i < D; i++)
            mean[i] = (float)(sum[i] / (double)N);
        for (int i = 0; i < D; i++)
            for (int j = 0; j <= i; j++) {
                double cij = cov[i * D + j] / (double)N - sum[i] / (double)N * (sum[j] / (double)N);
                cov[i * D + j] = cov[j * D + i] = cij;
            }
        st = vq_eigen_sym(cov, D, w, v, c->err);
    }
    int r = 0;
    if (st == VQ_OK) {
        double tot = 0, acc = 0;
        for (int i = 0; i < D; i++)
            tot += w[i] > 0 ? w[i] : 0;
        while (r < D && (r == 0 || acc < S->energy * tot)) {
            acc += w[r] > 0 ? w[r] : 0;
            r++;
        }
        basis = malloc((size_t)D * (size_t)r * sizeof *basis);
        if (!basis)
            st = vq_fail(c->err, VQ_ERR_NOMEM, "xkv: out of memory");
        for (int d = 0; st == VQ_OK && d < D; d++)
            for (int j = 0; j < r; j++)
                basis[d * r + j] = (float)v[d * D + j];
    }
    free(sum), free(cov), free(w), free(v), free(x);
    if (st != VQ_OK) {
        free(mean), free(basis);
        return st;
    }
    return install(c, gi, r, mean, basis, 1);
}

static vq_status xkv_after_append(vq_cache *c, int layer)
{
    const xkv_state *S = c->xstate;
    vq_cache_layer *L = &c->layers[layer];
    if (!pending(c, L))
        return VQ_OK;
    const xkv_group *g = &S->g[L->xpeer];
    if (layer != g->first + g->n - 1)
        return VQ_OK;
    size_t held = 0;
    for (int h = 0; h < L->shape.n_kv_heads; h++)
        held = L->heads[h].n_res > held ? L->heads[h].n_res : held;
    return held >= (size_t)S->min ? fit(c, L->xpeer) : VQ_OK;
}

/* ---- persistence: the file's xkv section (persist.c, format in
 * docs/cache-format.md): u32 n_groups | per group: u32 fitted |
 * if fitted: u32 rank | head_dim x f32 mean | head_dim x rank f32 basis */

static vq_status xkv_save(const vq_cache *c, uint8_t *dst, size_t cap, size_t *len)
{
    const xkv_state *S = c->xstate;
    size_t n = 4;
    for (int i = 0; i < S->n_groups; i++)
        n += 4 + (S->g[i].fitted ? 4 + 4 * (size_t)S->g[i].D * (1 + (size_t)S->g[i].rank) : 0);
    *len = n;
    if (!dst)
        return VQ_OK;
    if (cap < n)
        return vq_fail((char *)c->err, VQ_ERR_INVALID_ARG, "xkv section: buffer of %zu bytes, need %zu", cap, n);
    uint8_t *p = dst;
    vq_put_u32(p, (uint32_t)S->n_groups);
    p += 4;
    for (int i = 0; i < S->n_groups; i++) {
        const xkv_group *g = &S->g[i];
        vq_put_u32(p, (uint32_t)g->fitted);
        p += 4;
        if (!g->fitted)
            continue;
        vq_put_u32(p, (uint32_t)g->rank);
        p += 4;
        for (size_t j = 0; j < (size_t)g->D; j++, p += 4)
            vq_put_f32(p, g->mean[j]);
        for (size_t j = 0; j < (size_t)g->D * (size_t)g->rank; j++, p += 4)
            vq_put_f32(p, g->basis[j]);
    }
    return VQ_OK;
}

static vq_status need(size_t n, size_t off, size_t len, const char *what, char *err)
{
    if (n > len - off)
        return vq_fail(err, VQ_ERR_FORMAT, "cache file: truncated in %s (need %zu bytes at offset %zu, %zu left)",
                       what, n, off, len - off);
    return VQ_OK;
}

/* install a basis read from a file: mean/basis are checked and copied */
static vq_status load_group(vq_cache *c, int gi, int rank, const uint8_t *src, char *err)
{
    const xkv_state *S = c->xstate;
    const xkv_group *g = &S->g[gi];
    size_t nb = (size_t)g->D * (size_t)rank;
    float *m = malloc((size_t)g->D * sizeof *m), *b = malloc(nb * sizeof *b);
    if (!m || !b) {
        free(m), free(b);
        return vq_fail(err, VQ_ERR_NOMEM, "cache load: out of memory");
    }
    for (size_t i = 0; i < (size_t)g->D; i++)
        m[i] = vq_get_f32(src + 4 * i);
    for (size_t i = 0; i < nb; i++)
        b[i] = vq_get_f32(src + 4 * ((size_t)g->D + i));
    const char *bad = NULL;
    for (size_t i = 0; !bad && i < (size_t)g->D; i++)
        if (!isfinite(m[i]))
            bad = "non-finite mean";
    for (size_t i = 0; !bad && i < nb; i++)
        if (!isfinite(b[i]) || fabsf(b[i]) > 1.0001f)
            bad = "basis entry out of range";
    if (bad) {
        free(m), free(b);
        return vq_fail(err, VQ_ERR_FORMAT, "cache file: xkv group %d: %s", gi, bad);
    }
    vq_status st = install(c, gi, rank, m, b, 0);
    if (st != VQ_OK)
        return vq_fail(err, st, "cache file: xkv group %d: %s", gi, c->err);
    return VQ_OK;
}

static vq_status xkv_load(vq_cache *c, const uint8_t *src, size_t len, size_t *used, char *err)
{
    const xkv_state *S = c->xstate;
    size_t off = 0;
    VQ_TRY(need(4, off, len, "xkv section", err));
    uint32_t ng = vq_get_u32(src);
    off += 4;
    if ((int)ng != S->n_groups || ng > VQ_MAX_LAYERS)
        return vq_fail(err, VQ_ERR_FORMAT, "cache file: %u xkv groups, the config makes %d", ng, S->n_groups);
    for (int g = 0; g < (int)ng; g++) {
        const int D = S->g[g].D;
        VQ_TRY(need(4, off, len, "xkv section", err));
        uint32_t fitted = vq_get_u32(src + off), rank;
        off += 4;
        if (fitted > 1)
            return vq_fail(err, VQ_ERR_FORMAT, "cache file: xkv group %d: bad flag", g);
        if (!fitted)
            continue;
        VQ_TRY(need(4, off, len, "xkv section", err));
        rank = vq_get_u32(src + off);
        off += 4;
        if (rank < 1 || rank > (uint32_t)D)
            return vq_fail(err, VQ_ERR_FORMAT, "cache file: xkv group %d: rank %u out of range [1, %d]", g, rank, D);
        size_t nf = (size_t)D * (1 + (size_t)rank);
        VQ_TRY(need(nf * 4, off, len, "xkv basis", err));
        VQ_TRY(load_group(c, g, (int)rank, src + off, err));
        off += nf * 4;
    }
    *used = off;
    return VQ_OK;
}

const vq_cross_ops vq_cross_xkv_ops = {
    .name = "xkv",
    .canon = xkv_canon,
    .setup = xkv_setup,
    .codec = xkv_codec,
    .grow = xkv_grow,
    .after_append = xkv_after_append,
    .save = xkv_save,
    .load = xkv_load,
    .free = xkv_free,
};
