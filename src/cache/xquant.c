/* xquant.c -- cross-layer reuse of quantized codes (XQuant, Tomar et al.
 * 2025, "XQuant: Breaking the Memory Wall for LLM Inference with KV Cache
 * Rematerialization", its cross-layer variant XQuant-CL), adapted to
 * caching K/V directly (the paper caches the layer input X).
 *
 * `cross=xquant:bits=4,rbits=2`: layers form pairs (0,1), (2,3), ... when
 * their shapes are equal and they have no sliding window (a pair must hold
 * the same slots; windowed layers and an odd last layer stay plain layers
 * with the configured codecs; a model where no pair qualifies -- gemma3,
 * whose global layers are never adjacent -- is refused). In a pair:
 *   - the anchor (first layer) stores per token, per role, B-bit integer
 *     codes over groups of 32 channels with an fp16 scale and zero per
 *     group (asymmetric min/max, KIVI-value style):
 *       [D*B/8 code bytes][D/32 x (u16 scale, u16 zero)]
 *   - the follower (second layer) reuses the anchor's codes of the same
 *     slot and stores only its own per-group scale s' and zero z' fitted by
 *     least squares to its own vector given those codes
 *       (s', z') = argmin sum_i (s' c_i + z' - y_i)^2
 *                = (cov(c, y) / var(c), mean(y) - s' mean(c))
 *     (s' = 0, z' = mean(y) when every code of the group is equal), plus a
 *     residual r = y - (s' c + z') quantized per group at `rbits` bits
 *     (same asymmetric scheme):
 *       [D/32 x (u16 s', u16 z')][D*rbits/8 residual codes][D/32 x (u16, u16)]
 *     rbits=0 drops the residual (bytes: D/8 per token per role) -- the
 *     reconstruction is then only as good as the anchor's codes fit the
 *     follower, which for real layers is poor (the original reports
 *     incoherent output without the residual).
 * bits in {2, 4, 8}, rbits in {0, 2, 4, 8}.
 *
 * The methods are internal codecs (the ops below, created through
 * vq_codec_create_ops), placed as the pair's key and value codecs, so paging, the residual
 * window, stats and save/load are the cache's usual ones. A follower codec
 * decodes with the anchor's codes bound by xq_bind (vq_cross_ops.bind) (the
 * anchor's slot of the same index: the pair holds the same positions in the
 * same slots because eviction is refused and windows are excluded).
 * Scoring and sums decode XQ_TILE tokens at a time into a float tile (codes
 * unpacked by the kernel table's bits_unpack), then the table's dense_dot /
 * dense_axpy over the tile. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache_internal.h"
#include "core/bitstream.h"
#include "core/fp16.h"
#include "core/io.h"
#include "kernels/kernels.h"

#define XQ_GROUP 32
#define XQ_TILE 16 /* tokens decoded per dense_dot / dense_axpy call */

typedef struct {
    int bits, rbits, follower;
    size_t ng;               /* groups per token */
    size_t code_bytes;       /* anchor code bytes per token */
    size_t anchor_bpt;       /* anchor bytes per token (follower) */
    const uint8_t *anchor;   /* follower: bound anchor codes of token 0 */
    float *x;                /* [XQ_TILE][D] decode scratch */
    uint8_t *c;              /* [D] unpacked codes */
} xq_impl;

/* asymmetric min/max quantization of n values at `bits`; codes out, fp16
 * scale and zero written at sz (4 bytes) */
static void quant_group(const float *x, size_t n, int bits, uint8_t *codes, uint8_t *sz)
{
    float lo = x[0], hi = x[0];
    for (size_t i = 1; i < n; i++) {
        lo = x[i] < lo ? x[i] : lo;
        hi = x[i] > hi ? x[i] : hi;
    }
    float qmax = (float)((1 << bits) - 1);
    uint16_t hs = vq_fp32_to_fp16((hi - lo) / qmax), hz = vq_fp32_to_fp16(lo);
    float s = vq_fp16_to_fp32(hs), z = vq_fp16_to_fp32(hz);
    for (size_t i = 0; i < n; i++) {
        float q = s > 0.0f ? roundf((x[i] - z) / s) : 0.0f;
        codes[i] = (uint8_t)(q < 0.0f ? 0.0f : q > qmax ? qmax : q);
    }
    vq_put_u16(sz, hs);
    vq_put_u16(sz + 2, hz);
}

/* x[0..D) = s_g * c_i + z_g (one multiply, then one add) for the D codes
 * c8 (one per byte), group g's fp16 scale and zero interleaved at sz + 4g
 * (kernels.h fp16_row, lut8_row); D <= 256 */
static void dequant_row(const vq_kernels *k, const uint8_t *c8, const uint8_t *sz, size_t D, float *x)
{
    const size_t ng = D / XQ_GROUP;
    float h[2 * 256 / XQ_GROUP], s2[256], m2[256];
    k->fp16_row(sz, h, 2 * ng);
    for (size_t g = 0; g < ng; g++)
        for (size_t i = 0; i < XQ_GROUP; i++) /* adjacent stores of one value: vector stores */
            s2[g * XQ_GROUP + i] = h[2 * g], m2[g * XQ_GROUP + i] = h[2 * g + 1];
    k->lut8_row(c8, D, NULL, s2, m2, x);
}

/* the same for D codes of `bits` bits packed at codes: at 1..4 bits one
 * kernels.h kivi_group_row (the same multiply, then add) with the groups'
 * halves gathered into a scale row and a zero row; else unpacked into c8,
 * then dequant_row */
static void dequant_packed(const vq_kernels *k, const uint8_t *codes, int bits, const uint8_t *sz, size_t D,
                           uint8_t *c8, float *x)
{
    if (bits <= 4) {
        uint8_t gs[2 * 256 / XQ_GROUP], gz[2 * 256 / XQ_GROUP];
        for (size_t g = 0; g < D / XQ_GROUP; g++) {
            memcpy(gs + 2 * g, sz + 4 * g, 2);
            memcpy(gz + 2 * g, sz + 4 * g + 2, 2);
        }
        k->kivi_group_row(codes, bits, D, XQ_GROUP, gs, gz, x);
        return;
    }
    k->bits_unpack(codes, D, bits, c8);
    dequant_row(k, c8, sz, D, x);
}

/* decode token t of a run starting at src into x (a follower's anchor
 * codes: token t of the bound run): the anchor's s * c + z, plus for a
 * follower with rbits its residual's s_r * c_r + z_r (added last) */
static void decode_one(vq_codec *c, const uint8_t *src, size_t t, float *x)
{
    xq_impl *m = c->impl;
    const size_t D = (size_t)c->head_dim, bpt = c->block_bytes;
    const uint8_t *p = src + t * bpt;
    const vq_kernels *k = vq_kernels_get();
    if (!m->follower) {
        dequant_packed(k, p, m->bits, p + m->code_bytes, D, m->c, x);
        return;
    }
    dequant_packed(k, m->anchor + t * m->anchor_bpt, m->bits, p, D, m->c, x);
    if (m->rbits) {
        const uint8_t *rc = p + 4 * m->ng, *rsz = rc + D * (size_t)m->rbits / 8;
        float r[256];
        dequant_packed(k, rc, m->rbits, rsz, D, m->c, r);
        for (size_t d = 0; d < D; d++)
            x[d] += r[d];
    }
}

static void xq_encode(vq_codec *c, const float *x, size_t n, uint8_t *dst)
{
    xq_impl *m = c->impl;
    const size_t D = (size_t)c->head_dim, bpt = c->block_bytes;
    for (size_t t = 0; t < n; t++) {
        const float *y = x + t * D;
        uint8_t *p = dst + t * bpt;
        if (!m->follower) {
            for (size_t g = 0; g < m->ng; g++)
                quant_group(y + g * XQ_GROUP, XQ_GROUP, m->bits, m->c + g * XQ_GROUP, p + m->code_bytes + 4 * g);
            vq_bits_pack(m->c, D, m->bits, p);
            continue;
        }
        vq_bits_unpack(m->anchor + t * m->anchor_bpt, D, m->bits, m->c);
        for (size_t g = 0; g < m->ng; g++) {
            /* least-squares scale and zero given the anchor's codes */
            const uint8_t *cg = m->c + g * XQ_GROUP;
            const float *yg = y + g * XQ_GROUP;
            double mc = 0, my = 0, cc = 0, cy = 0;
            for (size_t i = 0; i < XQ_GROUP; i++) {
                mc += cg[i];
                my += yg[i];
            }
            mc /= XQ_GROUP;
            my /= XQ_GROUP;
            for (size_t i = 0; i < XQ_GROUP; i++) {
                cc += (cg[i] - mc) * (cg[i] - mc);
                cy += (cg[i] - mc) * (yg[i] - my);
            }
            double s = cc > 0 ? cy / cc : 0.0, z = my - s * mc;
            vq_put_u16(p + 4 * g, vq_fp32_to_fp16((float)s));
            vq_put_u16(p + 4 * g + 2, vq_fp32_to_fp16((float)z));
        }
        if (m->rbits) { /* the residual against decode_one's reconstruction */
            dequant_row(vq_kernels_get(), m->c, p, D, m->x);
            uint8_t *rc = p + 4 * m->ng, *rsz = rc + D * (size_t)m->rbits / 8;
            for (size_t d = 0; d < D; d++)
                m->x[d] = y[d] - m->x[d];
            for (size_t g = 0; g < m->ng; g++)
                quant_group(m->x + g * XQ_GROUP, XQ_GROUP, m->rbits, m->c + g * XQ_GROUP, rsz + 4 * g);
            vq_bits_pack(m->c, D, m->rbits, rc);
        }
    }
}

static void xq_decode(vq_codec *c, const uint8_t *src, size_t n, float *x)
{
    for (size_t t = 0; t < n; t++)
        decode_one(c, src, t, x + t * (size_t)c->head_dim);
}

static void xq_prepare(vq_codec *c, const float *q, uint8_t *qbuf)
{
    memcpy(qbuf, q, (size_t)c->head_dim * sizeof(float));
}

static void xq_score(vq_codec *c, const uint8_t *qbuf, int n_q, const uint8_t *codes, size_t n, float *scores)
{
    xq_impl *m = c->impl;
    const size_t D = (size_t)c->head_dim;
    const float *q = (const float *)(const void *)qbuf;
    const vq_kernels *k = vq_kernels_get();
    for (size_t i0 = 0; i0 < n; i0 += XQ_TILE) {
        const size_t nt = n - i0 < XQ_TILE ? n - i0 : XQ_TILE;
        for (size_t t = 0; t < nt; t++)
            decode_one(c, codes, i0 + t, m->x + t * D);
        k->dense_dot(q, D, n_q, m->x, VQ_ELEM_F32, nt, D, scores + i0, n);
    }
}

static void xq_accumulate(vq_codec *c, const float *w, int n_q, const uint8_t *codes, size_t n, float *acc)
{
    xq_impl *m = c->impl;
    const size_t D = (size_t)c->head_dim;
    const vq_kernels *k = vq_kernels_get();
    for (size_t i0 = 0; i0 < n; i0 += XQ_TILE) {
        const size_t nt = n - i0 < XQ_TILE ? n - i0 : XQ_TILE;
        for (size_t t = 0; t < nt; t++)
            decode_one(c, codes, i0 + t, m->x + t * D);
        k->dense_axpy(w + i0, n, n_q, m->x, VQ_ELEM_F32, nt, D, acc, D);
    }
}

static void xq_destroy(vq_codec *c)
{
    free(c->impl);
    c->impl = NULL;
}

/* the parameters and the scratch of a head_dim D handle, one block */
static xq_impl *xq_alloc(size_t D)
{
    xq_impl *m = calloc(1, sizeof *m + XQ_TILE * D * sizeof(float) + D);
    if (m) {
        m->x = (float *)(void *)(m + 1);
        m->c = (uint8_t *)(m->x + XQ_TILE * D);
    }
    return m;
}

/* spec "xquant:bits=B" (anchor) or "xquant:bits=B,rbits=R,follower=1"
 * (the canonical forms; the cache's layer spec is not used) */
static vq_status xq_init(vq_codec *c, vq_spec *sp)
{
    long bits, rbits, follower;
    const vq_spec_int_field params[] = {
        { "bits", 4, 2, 8, &bits }, { "rbits", 0, 0, 8, &rbits }, { "follower", 0, 0, 1, &follower },
    };
    VQ_TRY(vq_spec_ints(sp, params, sizeof params / sizeof *params, c->err));
    const size_t D = (size_t)c->head_dim;
    xq_impl *m = xq_alloc(D);
    c->impl = m;
    if (!m)
        return vq_fail(c->err, VQ_ERR_NOMEM, "xquant: out of memory");
    m->bits = (int)bits;
    m->rbits = (int)rbits;
    m->follower = (int)follower;
    m->ng = D / XQ_GROUP;
    m->code_bytes = D * (size_t)bits / 8;
    m->anchor_bpt = m->code_bytes + 4 * m->ng;
    c->block_tokens = 1;
    c->block_bytes = follower ? 4 * m->ng + (rbits ? D * (size_t)rbits / 8 + 4 * m->ng : 0) : m->anchor_bpt;
    c->query_bytes = D * sizeof(float);
    c->accum_size = D;
    if (follower)
        snprintf(c->canon, sizeof c->canon, "xquant:bits=%ld,rbits=%ld,follower=1", bits, rbits);
    else
        snprintf(c->canon, sizeof c->canon, "xquant:bits=%ld", bits);
    return VQ_OK;
}

/* a handle with its own scratch and no bound anchor */
static vq_status xq_clone(const vq_codec *src, vq_codec *dst)
{
    const xq_impl *s = src->impl;
    xq_impl *m = xq_alloc((size_t)src->head_dim);
    dst->impl = m;
    if (!m)
        return vq_fail(dst->err, VQ_ERR_NOMEM, "xquant: out of memory");
    float *x = m->x;
    uint8_t *cs = m->c;
    *m = *s;
    m->x = x;
    m->c = cs;
    m->anchor = NULL;
    return VQ_OK;
}

static const vq_codec_ops xq_ops = {
    .name = "xquant",
    .default_spec = "xquant",
    .init = xq_init,
    .destroy = xq_destroy,
    .encode = xq_encode,
    .decode = xq_decode,
    .prepare_query = xq_prepare,
    .score = xq_score,
    .accumulate = xq_accumulate,
    .accum_finish = vq_codec_finish_copy,
    .clone = xq_clone,
};

/* ---- the pairs (vq_cross_ops) ------------------------------------------- */

typedef struct {
    int bits, rbits;
} xq_state;

static vq_status xq_params(vq_spec *sp, long *bits, long *rbits, char *err, const char *prefix)
{
    VQ_TRY(vq_spec_int(sp, "bits", 4, 2, 8, bits, err));
    VQ_TRY(vq_spec_int(sp, "rbits", 2, 0, 8, rbits, err));
    if (*bits != 2 && *bits != 4 && *bits != 8)
        return vq_fail(err, VQ_ERR_INVALID_ARG, "%sxquant: parameter bits=%ld must be 2, 4 or 8", prefix, *bits);
    if (*rbits != 0 && *rbits != 2 && *rbits != 4 && *rbits != 8)
        return vq_fail(err, VQ_ERR_INVALID_ARG, "%sxquant: parameter rbits=%ld must be 0, 2, 4 or 8", prefix,
                       *rbits);
    return VQ_OK;
}

static vq_status xq_canon(vq_spec *sp, char *canon, size_t cap, char *err)
{
    long bits, rbits;
    VQ_TRY(xq_params(sp, &bits, &rbits, err, ""));
    snprintf(canon, cap, "xquant:bits=%ld,rbits=%ld", bits, rbits);
    return VQ_OK;
}

static vq_status xq_setup(vq_cache *c, char *err)
{
    vq_spec sp;
    long bits, rbits;
    VQ_TRY(vq_spec_parse(c->cfg->cross, &sp, err));
    VQ_TRY(xq_params(&sp, &bits, &rbits, err, "cache config: cross: "));
    if (c->ev.kind != VQ_EVICT_NONE)
        return vq_fail(err, VQ_ERR_UNSUPPORTED,
                       "cache config: cross: xquant cannot be combined with evict=%s (a pair must hold the same slots)",
                       c->cfg->evict);
    xq_state *S = calloc(1, sizeof *S);
    if (!S)
        return vq_fail(err, VQ_ERR_NOMEM, "xquant: out of memory");
    c->xstate = S;
    S->bits = (int)bits;
    S->rbits = (int)rbits;
    int pairs = 0;
    for (int a = 0; a + 1 < c->n_layers; a += 2) {
        const vq_layer_shape *x = &c->shapes[a], *y = &c->shapes[a + 1];
        if (x->n_kv_heads != y->n_kv_heads || x->n_q_heads != y->n_q_heads || x->head_dim != y->head_dim ||
            x->window != 0 || y->window != 0 || x->softcap != y->softcap)
            continue;
        c->layers[a].xrole = VQ_CROSS_ANCHOR;
        c->layers[a].xpeer = a + 1;
        c->layers[a + 1].xrole = VQ_CROSS_FOLLOWER;
        c->layers[a + 1].xpeer = a;
        pairs++;
    }
    if (pairs == 0)
        return vq_fail(err, VQ_ERR_UNSUPPORTED,
                       "cache config: cross: xquant: no pair of layers (0,1), (2,3), ... qualifies (equal shapes, "
                       "no sliding window)");
    return VQ_OK;
}

static int xq_codec(vq_cache *c, int l, vq_role role, uint64_t seed, vq_codec **out, vq_status *st)
{
    const vq_cache_layer *L = &c->layers[l];
    const xq_state *S = c->xstate;
    if (L->xrole == VQ_CROSS_NONE)
        return 0;
    char spec[64];
    if (L->xrole == VQ_CROSS_FOLLOWER)
        snprintf(spec, sizeof spec, "xquant:bits=%d,rbits=%d,follower=1", S->bits, S->rbits);
    else
        snprintf(spec, sizeof spec, "xquant:bits=%d", S->bits);
    *st = vq_codec_create_ops(&xq_ops, spec, L->shape.head_dim, role, seed, NULL, out);
    if (*st != VQ_OK)
        vq_fail(c->err, *st, "cache layer %d: %s", l, vq_last_error());
    return 1;
}

/* point a follower's codecs at the anchor's codes of `slot` of head h */
static vq_status xq_bind(vq_cache *c, const vq_cache_layer *L, size_t h, size_t slot, vq_codec *kc, vq_codec *vc)
{
    if (L->xrole != VQ_CROSS_FOLLOWER)
        return VQ_OK;
    const vq_cache_layer *A = &c->layers[L->xpeer];
    const vq_cache_head *HA = &A->heads[h];
    if (slot >= HA->n_packed)
        return vq_fail(c->err, VQ_ERR_STATE,
                       "xquant: layer %d slot %zu has no anchor codes (layer %d holds %zu): append the anchor first",
                       L->xpeer + 1, slot, L->xpeer, HA->n_packed);
    size_t P = A->page_tokens, i = slot % P;
    xq_impl *mk = kc->impl, *mv = vc->impl;
    mk->anchor = HA->kpages[slot / P] + i * vq_codec_bytes_per_token(A->kc);
    mv->anchor = HA->vpages[slot / P] + i * vq_codec_bytes_per_token(A->vc);
    return VQ_OK;
}

static void xq_free(vq_cache *c) { free(c->xstate); }

const vq_cross_ops vq_cross_xquant_ops = {
    .name = "xquant",
    .canon = xq_canon,
    .setup = xq_setup,
    .codec = xq_codec,
    .bind = xq_bind,
    .free = xq_free,
};
