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
 * q' = U_r^T q, and <q, k^> = s <q', c> + z sum(q') + <q, mean>.
 * Shared state: mean + basis (4 (D + D r) bytes), counted once per group
 * (as the first layer's key codec shared bytes). Eviction policies are
 * refused (not implemented with the pre-fit window). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache_internal.h"
#include "codec/eigen.h"
#include "core/fp16.h"
#include "core/io.h"
#include "core/rng.h"

typedef struct {
    int first, n, D, fitted, rank;
    float *mean;  /* [D] */
    float *basis; /* [D][rank], column j = j-th eigenvector */
} xkv_group;

struct vq_xkv_state {
    int n_groups, bits;
    double energy;
    long min;
    xkv_group *g;
};

typedef struct {
    const xkv_group *grp; /* borrowed from the cache's state */
    int bits;
    size_t code_bytes;
    float *y;             /* [rank] scratch */
    uint8_t *c;           /* [rank] codes */
} xkv_impl;

/* ---- the key codec -------------------------------------------------------- */

static void unpack(const uint8_t *src, int bits, size_t n, uint8_t *out)
{
    unsigned mask = (1u << bits) - 1u;
    for (size_t j = 0; j < n; j++) {
        size_t b = j * (size_t)bits;
        out[j] = (uint8_t)((src[b / 8] >> (b % 8)) & mask);
    }
}

/* coordinates of token t -> m->y (dequantized) */
static void coords(vq_codec *c, const uint8_t *src, size_t t)
{
    xkv_impl *m = c->impl;
    const size_t r = (size_t)m->grp->rank;
    const uint8_t *p = src + t * c->block_bytes;
    float s = vq_fp16_to_fp32(vq_get_u16(p + m->code_bytes)), z = vq_fp16_to_fp32(vq_get_u16(p + m->code_bytes + 2));
    unpack(p, m->bits, r, m->c);
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
            unsigned code = (unsigned)(q < 0.0f ? 0.0f : q > qmax ? qmax : q);
            size_t b = j * (size_t)m->bits;
            p[b / 8] |= (uint8_t)(code << (b % 8));
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

/* qbuf: [q' (r floats)][<q, mean>][sum q'] */
static void xkv_prepare(vq_codec *c, const float *q, uint8_t *qbuf)
{
    xkv_impl *m = c->impl;
    const size_t D = (size_t)c->head_dim, r = (size_t)m->grp->rank;
    float *o = (float *)qbuf, qm = 0.0f, sum = 0.0f;
    for (size_t j = 0; j < r; j++)
        o[j] = 0.0f;
    for (size_t d = 0; d < D; d++) {
        qm += q[d] * m->grp->mean[d];
        for (size_t j = 0; j < r; j++)
            o[j] += m->grp->basis[d * r + j] * q[d];
    }
    for (size_t j = 0; j < r; j++)
        sum += o[j];
    o[r] = qm;
    o[r + 1] = sum;
}

static void xkv_score(vq_codec *c, const uint8_t *qbuf, int n_q, const uint8_t *codes, size_t n, float *scores)
{
    xkv_impl *m = c->impl;
    const size_t r = (size_t)m->grp->rank, qs = r + 2;
    const float *q = (const float *)qbuf;
    for (size_t i = 0; i < n; i++) {
        const uint8_t *p = codes + i * c->block_bytes;
        float s = vq_fp16_to_fp32(vq_get_u16(p + m->code_bytes)), z = vq_fp16_to_fp32(vq_get_u16(p + m->code_bytes + 2));
        unpack(p, m->bits, r, m->c);
        for (int j = 0; j < n_q; j++) {
            const float *qj = q + (size_t)j * qs;
            float dot = 0.0f;
            for (size_t k = 0; k < r; k++)
                dot += qj[k] * (float)m->c[k];
            scores[(size_t)j * n + i] = s * dot + z * qj[r + 1] + qj[r];
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
    xkv_impl *m = c->impl;
    if (m) {
        free(m->y);
        free(m->c);
        free(m);
    }
    c->impl = NULL;
}

static vq_status xkv_init_unused(vq_codec *c, vq_spec *sp)
{
    (void)sp;
    return vq_fail(c->err, VQ_ERR_UNSUPPORTED, "xkv: internal codec, built by the cache only");
}

static const vq_codec_ops xkv_ops = {
    .name = "xkv",
    .default_spec = "xkv",
    .init = xkv_init_unused,
    .destroy = xkv_destroy,
    .encode = xkv_encode,
    .decode = xkv_decode,
    .prepare_query = xkv_prepare,
    .score = xkv_score,
    .accumulate = xkv_accumulate,
    .accum_finish = xkv_finish,
};

static vq_status xkv_make(const xkv_group *g, int bits, uint64_t seed, int owner, vq_codec **out)
{
    vq_codec *c = calloc(1, sizeof *c);
    xkv_impl *m = calloc(1, sizeof *m);
    if (c) {
        c->ops = &xkv_ops;
        c->impl = m;
    }
    if (m) {
        m->y = malloc((size_t)g->rank * sizeof *m->y);
        m->c = malloc((size_t)g->rank);
    }
    if (!c || !m || !m->y || !m->c) {
        vq_codec_free(c);
        return vq_fail(NULL, VQ_ERR_NOMEM, "xkv: out of memory");
    }
    m->grp = g;
    m->bits = bits;
    m->code_bytes = ((size_t)g->rank * (size_t)bits + 7) / 8;
    c->head_dim = g->D;
    c->role = VQ_ROLE_KEY;
    c->seed = seed;
    c->block_tokens = 1;
    c->block_bytes = m->code_bytes + 4;
    c->shared_bytes = owner ? 4 * ((size_t)g->D + (size_t)g->D * (size_t)g->rank) : 0;
    c->query_bytes = ((size_t)g->rank + 2) * sizeof(float);
    c->accum_size = (size_t)g->rank + 1;
    c->ready = 1;
    snprintf(c->canon, sizeof c->canon, "xkv:rank=%d,bits=%d", g->rank, bits);
    *out = c;
    return VQ_OK;
}

int vq_cache_xkv_is(const vq_codec *c) { return c && c->ops == &xkv_ops; }

vq_status vq_cache_xkv_clone(const vq_codec *src, vq_codec **out)
{
    const xkv_impl *m = src->impl;
    return xkv_make(m->grp, m->bits, src->seed, src->shared_bytes > 0, out);
}

/* ---- setup ------------------------------------------------------------------ */

vq_status vq_cache_xkv_parse(vq_cache *c, char *err)
{
    if (strncmp(c->cfg->cross, "xkv:", 4) != 0)
        return VQ_OK;
    vq_spec sp;
    long group, bits, minn;
    double energy;
    VQ_TRY(vq_spec_parse(c->cfg->cross, &sp, err));
    VQ_TRY(vq_spec_int(&sp, "group", 2, 2, 64, &group, err));
    VQ_TRY(vq_spec_float(&sp, "energy", 0.95, 0.01, 1.0, &energy, err));
    VQ_TRY(vq_spec_int(&sp, "bits", 4, 2, 8, &bits, err));
    VQ_TRY(vq_spec_int(&sp, "min", 64, 8, 1L << 20, &minn, err));
    if (c->ev.kind != VQ_EVICT_NONE)
        return vq_fail(err, VQ_ERR_UNSUPPORTED, "cache config: cross: xkv cannot be combined with evict=%s",
                       c->cfg->evict);
    struct vq_xkv_state *S = calloc(1, sizeof *S);
    if (!S)
        return vq_fail(err, VQ_ERR_NOMEM, "xkv: out of memory");
    c->xkv = S;
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
            c->layers[l].xrole = VQ_XROLE_XKV;
            c->layers[l].xpartner = S->n_groups;
        }
        S->n_groups++;
    }
    if (S->n_groups == 0)
        return vq_fail(err, VQ_ERR_UNSUPPORTED,
                       "cache config: cross: xkv: no group of %ld consecutive layers with equal head_dim", group);
    return VQ_OK;
}

int vq_cache_xkv_codec(vq_cache *c, int l, vq_role role, uint64_t seed, vq_codec **out, vq_status *st)
{
    if (c->layers[l].xrole != VQ_XROLE_XKV || role != VQ_ROLE_KEY)
        return 0;
    /* placeholder until the basis is fixed: every key stays in the fp16
     * window meanwhile, so it never encodes */
    *st = vq_codec_create("fp16", c->layers[l].shape.head_dim, role, seed, out);
    if (*st != VQ_OK)
        vq_fail(c->err, *st, "cache layer %d: %s", l, vq_last_error());
    return 1;
}

void vq_cache_xkv_free(vq_cache *c)
{
    if (!c->xkv)
        return;
    for (int i = 0; i < c->xkv->n_groups; i++) {
        free(c->xkv->g[i].mean);
        free(c->xkv->g[i].basis);
    }
    free(c->xkv->g);
    free(c->xkv);
    c->xkv = NULL;
}

int vq_cache_xkv_pending(const vq_cache *c, const vq_cache_layer *L)
{
    return L->xrole == VQ_XROLE_XKV && !c->xkv->g[L->xpartner].fitted;
}

/* resize the residual buffers of every head of L to cap tokens */
static vq_status resize_window(vq_cache *c, vq_cache_layer *L, size_t cap)
{
    const size_t D2 = 2 * (size_t)L->shape.head_dim;
    for (int h = 0; h < L->shape.n_kv_heads; h++) {
        vq_cache_head *H = &L->heads[h];
        uint8_t *k = realloc(H->rk, cap * D2);
        if (k)
            H->rk = k;
        uint8_t *v = realloc(H->rv, cap * D2);
        if (v)
            H->rv = v;
        int32_t *p = realloc(H->rpos, cap * sizeof *p);
        if (p)
            H->rpos = p;
        float *s = H->rscore ? realloc(H->rscore, cap * sizeof *s) : NULL;
        if (s)
            H->rscore = s;
        if (!k || !v || !p || (H->rscore && !s))
            return vq_fail(c->err, VQ_ERR_NOMEM, "xkv: out of memory for the fp16 window");
    }
    L->res_cap = cap;
    return VQ_OK;
}

vq_status vq_cache_xkv_grow(vq_cache *c, vq_cache_layer *L, size_t need)
{
    if (!vq_cache_xkv_pending(c, L))
        return vq_fail(c->err, VQ_ERR_STATE, "xkv: the fp16 window grows only before the basis is fixed");
    if (need <= L->res_cap)
        return VQ_OK;
    size_t cap = L->res_cap * 2 > need ? L->res_cap * 2 : need;
    VQ_TRY(resize_window(c, L, cap));
    return vq_cache_set_threads(c, c->threads); /* scratch sized by the window */
}

/* Install a basis on group gi: key codecs, page sizes, encode the held
 * tokens, shrink the window. mean/basis are taken over. */
static vq_status install(vq_cache *c, int gi, int rank, float *mean, float *basis, int flush)
{
    xkv_group *g = &c->xkv->g[gi];
    g->rank = rank;
    g->mean = mean;
    g->basis = basis;
    g->fitted = 1;
    for (int l = g->first; l < g->first + g->n; l++) {
        vq_cache_layer *L = &c->layers[l];
        vq_codec *kc = NULL;
        VQ_TRY(xkv_make(g, c->xkv->bits, L->kc->seed, l == g->first, &kc));
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
            VQ_TRY(resize_window(c, L, cap));
    }
    return vq_cache_set_threads(c, c->threads);
}

/* fit the basis of group gi from every token its layers hold */
static vq_status fit(vq_cache *c, int gi)
{
    xkv_group *g = &c->xkv->g[gi];
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
        while (r < D && (r == 0 || acc < c->xkv->energy * tot)) {
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

vq_status vq_cache_xkv_after_append(vq_cache *c, int layer)
{
    vq_cache_layer *L = &c->layers[layer];
    if (!vq_cache_xkv_pending(c, L))
        return VQ_OK;
    xkv_group *g = &c->xkv->g[L->xpartner];
    if (layer != g->first + g->n - 1)
        return VQ_OK;
    size_t held = 0;
    for (int h = 0; h < L->shape.n_kv_heads; h++)
        held = L->heads[h].n_res > held ? L->heads[h].n_res : held;
    return held >= (size_t)c->xkv->min ? fit(c, L->xpartner) : VQ_OK;
}

/* ---- persistence (persist.c writes/reads, format in docs/cache-format.md) */

int vq_cache_xkv_groups(const vq_cache *c) { return c->xkv ? c->xkv->n_groups : 0; }

void vq_cache_xkv_group_info(const vq_cache *c, int gi, int *fitted, int *rank, int *D, const float **mean,
                             const float **basis)
{
    const xkv_group *g = &c->xkv->g[gi];
    *fitted = g->fitted;
    *rank = g->rank;
    *D = g->D;
    *mean = g->mean;
    *basis = g->basis;
}

vq_status vq_cache_xkv_load_group(vq_cache *c, int gi, int rank, const float *mean, const float *basis, char *err)
{
    xkv_group *g = &c->xkv->g[gi];
    if (rank < 1 || rank > g->D)
        return vq_fail(err, VQ_ERR_FORMAT, "cache file: xkv group %d: rank %d out of range [1, %d]", gi, rank, g->D);
    size_t nb = (size_t)g->D * (size_t)rank;
    for (size_t i = 0; i < (size_t)g->D; i++)
        if (!isfinite(mean[i]))
            return vq_fail(err, VQ_ERR_FORMAT, "cache file: xkv group %d: non-finite mean", gi);
    for (size_t i = 0; i < nb; i++)
        if (!isfinite(basis[i]) || fabsf(basis[i]) > 1.0001f)
            return vq_fail(err, VQ_ERR_FORMAT, "cache file: xkv group %d: basis entry out of range", gi);
    float *m = malloc((size_t)g->D * sizeof *m), *b = malloc(nb * sizeof *b);
    if (!m || !b) {
        free(m), free(b);
        return vq_fail(err, VQ_ERR_NOMEM, "cache load: out of memory");
    }
    memcpy(m, mean, (size_t)g->D * sizeof *m);
    memcpy(b, basis, nb * sizeof *b);
    vq_status st = install(c, gi, rank, m, b, 0);
    if (st != VQ_OK)
        return vq_fail(err, st, "cache file: xkv group %d: %s", gi, c->err);
    return VQ_OK;
}
