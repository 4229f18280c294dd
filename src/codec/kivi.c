/* kivi.c -- KIVI: asymmetric min/max integer quantization, keys per channel,
 * values per token (Liu et al., "KIVI: A Tuning-Free Asymmetric 2bit
 * Quantization for KV Cache", 2024).
 *
 * Parameters: bits in {2, 4} (default 2), group in {16, 32, 64, 128}
 * (default 32), qbits in {0, 8} (8 needs head_dim a multiple of 64, and
 * is the default there since session 55; else 0): keys scored against the
 * query rounded to int8, values summed with the attention weights rounded
 * to int8 per block of 32 rows (kernels/codes_qdot.h,
 * kernels/kivi_qaxpy.h); 0: float queries and weights. Canonical spec
 * "kivi:bits=B,group=G,qbits=Q" (qbits always named since session 55).
 *
 * For a set of values x with min m and max M: scale s = (M - m)/(2^b - 1),
 * code = round((x - m)/s) in [0, 2^b - 1], x^ = s*code + m. s and m are
 * stored as fp16 and the codes are computed against the rounded fp16 s and
 * m, so decode reproduces exactly what encode aimed at. Inputs beyond the
 * fp16 range saturate (s and m are clamped to +-65504); NaN inputs give
 * code 0 (no undefined float->int conversion).
 *
 * Role VQ_ROLE_KEY: per channel over a group of G consecutive tokens.
 *   block_tokens = G, block layout (block_bytes = 4*D + G*b*D/8):
 *     [0, 2D)        fp16 scale of channel c at 2c
 *     [2D, 4D)       fp16 min of channel c at 2D + 2c
 *     [4D, ...)      codes, token-major: token t's row of b*D/8 bytes at
 *                    4D + t*b*D/8; channel c at bit c*b of the row (LSB
 *                    first within each byte)
 *   bytes/token = b*D/8 + 4*D/G.
 * Role VQ_ROLE_VALUE: per token over groups of G consecutive channels.
 *   block_tokens = 1, block layout (block_bytes = 4*D/G + b*D/8):
 *     [0, 2D/G)      fp16 scale of channel group g at 2g
 *     [2D/G, 4D/G)   fp16 min of group g
 *     [4D/G, ...)    codes, channel c at bit c*b (LSB first)
 *   bytes/token = b*D/8 + 4*D/G (same formula).
 *
 * Fused kernels. Keys: per block and query, the per-channel scale is folded
 * into the query (qs_c = q_c*s_c) and the mins into one constant
 * (sum_c q_c*m_c), so score_t = const + sum_c qs_c*code_tc reads each code
 * once. Values: per group, score = s_g*sum q_c code_c + m_g*sum_{c in g} q_c
 * with the group sums of q precomputed by prepare_query. Accumulate works
 * in the channel domain (accum_size = D, finish is a copy).
 *
 * The fp16 residual window for unfinished key groups (METHODS.md
 * `residual`) is the cache's job, not the codec's: the codec only ever sees
 * whole groups. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/bitstream.h"
#include "codec/codec.h"
#include "codec/kivi_quant.h"
#include "core/fp16.h"
#include "core/vexp.h"
#include "kernels/kernels.h"
#include "kernels/prefetch.h"

typedef struct {
    int bits;
    int group;
    size_t D, G, row; /* head_dim, group, bytes of a row of codes */
    float *scratch; /* D floats: the code sums of the keys' accumulate */
    float *sm;      /* 2*D floats: a block's scales and mins as floats (values) */
    int qbits;      /* 8: keys against int8 queries (kernels/codes_qdot.h), values
                     * summed with int8 weights (kernels/kivi_qaxpy.h); 0: float */
    uint8_t *qprep; /* qbits=8: KIVI_QS prepared int8 queries */
} kivi_state;

#define KIVI_QS 16 /* queries prepared at a time by the int8 key score */

static vq_status kivi_init(vq_codec *c, vq_spec *spec)
{
    long bits, group;
    VQ_TRY(vq_spec_int(spec, "bits", 2, 2, 4, &bits, c->err));
    if (bits == 3)
        return vq_fail(c->err, VQ_ERR_INVALID_ARG, "kivi: parameter bits=3 unsupported (bits is 2 or 4)");
    long qbits;
    VQ_TRY(vq_spec_int(spec, "group", 32, 16, 128, &group, c->err));
    VQ_TRY(vq_spec_int(spec, "qbits", c->head_dim % 64 == 0 ? 8 : 0, 0, 8, &qbits, c->err));
    if (qbits != 0 && qbits != 8)
        return vq_fail(c->err, VQ_ERR_INVALID_ARG, "kivi: qbits must be 0 (float query) or 8, got %ld", qbits);
    if (qbits && c->head_dim % 64 != 0)
        return vq_fail(c->err, VQ_ERR_INVALID_ARG,
                       "kivi: qbits=8 (int8 queries for keys, int8 attention weights for values) needs head_dim a multiple of 64 (got %d)",
                       c->head_dim);
    if (group != 16 && group != 32 && group != 64 && group != 128)
        return vq_fail(c->err, VQ_ERR_INVALID_ARG, "kivi: parameter group=%ld unsupported (16, 32, 64 or 128)", group);
    const size_t D = (size_t)c->head_dim;
    if (c->role == VQ_ROLE_VALUE && D % (size_t)group != 0)
        return vq_fail(c->err, VQ_ERR_INVALID_ARG, "kivi: parameter group=%ld does not divide head_dim %zu (value groups are channels)",
                       group, D);
    kivi_state *st = calloc(1, sizeof *st);
    if (!st)
        return vq_fail(c->err, VQ_ERR_NOMEM, "kivi: out of memory");
    st->scratch = calloc(D, sizeof(float));
    st->sm = calloc(2 * D, sizeof(float));
    if (!st->scratch || !st->sm) {
        free(st->scratch);
        free(st->sm);
        free(st);
        return vq_fail(c->err, VQ_ERR_NOMEM, "kivi: out of memory");
    }
    st->bits = (int)bits;
    st->group = (int)group;
    st->qbits = (int)qbits;
    st->D = D, st->G = (size_t)group, st->row = (size_t)bits * D / 8;
    c->impl = st;
    if (qbits && c->role == VQ_ROLE_KEY && !(st->qprep = malloc(KIVI_QS * vq_codes_query_bytes(D))))
        return vq_fail(c->err, VQ_ERR_NOMEM, "kivi: out of memory");
    const size_t row = st->row;
    if (c->role == VQ_ROLE_KEY) {
        c->block_tokens = (size_t)group;
        c->block_bytes = 4 * D + (size_t)group * row;
    } else {
        c->block_tokens = 1;
        c->block_bytes = 4 * D / (size_t)group + row;
    }
    c->shared_bytes = 0;
    c->query_bytes = sizeof(float) * (D + D / 16); /* q, then group sums (values) */
    /* keys score from the codes with the scales folded into the query
     * (kivi_score, kernels.h codes_dot), cheaper than decoding a tile */
    c->score_own = c->role == VQ_ROLE_KEY;
    /* values: always kivi_axpy or kivi_qaxpy (never the tile, whose decoded
     * values sum in another order), so a query's result does not depend on
     * how many queries share the call or on the instruction set */
    c->accum_own = c->role == VQ_ROLE_VALUE;
    c->value_head = c->role == VQ_ROLE_VALUE && st->qbits ? vq_block_lead(c->block_bytes) : 0;
    c->accum_size = D;
    snprintf(c->canon, sizeof c->canon, "kivi:bits=%d,group=%d,qbits=%d", st->bits, st->group, st->qbits);
    return VQ_OK;
}

static void kivi_destroy(vq_codec *c)
{
    kivi_state *st = c->impl;
    if (st) {
        free(st->scratch);
        free(st->sm);
        free(st->qprep);
    }
    free(st);
    c->impl = NULL;
}

/* ---- small helpers ------------------------------------------------------ */

static inline float ld16(const uint8_t *p) { return vq_fp16_to_fp32((vq_fp16)(p[0] | p[1] << 8)); }
static inline void st16(uint8_t *p, float f)
{
    vq_fp16 h = vq_fp32_to_fp16(f);
    p[0] = (uint8_t)h;
    p[1] = (uint8_t)(h >> 8);
}
/* ---- encode / decode ---------------------------------------------------- */

static void kivi_encode(vq_codec *c, const float *x, size_t n, uint8_t *dst)
{
    kivi_state *st = c->impl;
    const size_t D = st->D, G = st->G, row = st->row;
    const int b = st->bits;
    const unsigned maxc = (1u << b) - 1;
    memset(dst, 0, n / c->block_tokens * c->block_bytes);
    if (c->role == VQ_ROLE_KEY) {
        for (size_t blk = 0; blk < n / G; blk++) {
            const float *xb = x + blk * G * D;
            uint8_t *out = dst + blk * c->block_bytes;
            uint8_t *codes = out + 4 * D;
            for (size_t ch = 0; ch < D; ch++) {
                float s, m;
                kivi_range(xb + ch, G, D, b, &s, &m);
                st16(out + 2 * ch, s);
                st16(out + 2 * D + 2 * ch, m);
                for (size_t t = 0; t < G; t++) {
                    vq_bits_put(codes + t * row, ch, b, kivi_code(xb[t * D + ch], s, m, maxc));
                }
            }
        }
    } else {
        const size_t ng = D / G;
        for (size_t i = 0; i < n; i++) {
            const float *xi = x + i * D;
            uint8_t *out = dst + i * c->block_bytes;
            uint8_t *codes = out + 4 * ng;
            for (size_t g = 0; g < ng; g++) {
                float s, m;
                kivi_range(xi + g * G, G, 1, b, &s, &m);
                st16(out + 2 * g, s);
                st16(out + 2 * ng + 2 * g, m);
                for (size_t ch = g * G; ch < (g + 1) * G; ch++)
                    vq_bits_put(codes, ch, b, kivi_code(xi[ch], s, m, maxc));
            }
        }
    }
}

/* s * code + m per value (one multiply, then one add) through the kernel
 * table's kivi_row / kivi_group_row (the same bits; head_dim is a multiple
 * of 32 up to 256, groups multiples of 16: their shapes). The scales and
 * mins live on the stack: decode may run beside the codec's scoring (a
 * cache's load check, a cross-layer merge), whose scratch it must not
 * touch. */
static void kivi_decode(vq_codec *c, const uint8_t *src, size_t n, float *x)
{
    kivi_state *st = c->impl;
    const size_t D = st->D, G = st->G, row = st->row;
    const int b = st->bits;
    const vq_kernels *k = vq_kernels_get();
    if (c->role == VQ_ROLE_KEY) {
        float s[VQ_CODEC_MAX_HEAD_DIM], m[VQ_CODEC_MAX_HEAD_DIM];
        for (size_t blk = 0; blk < n / G; blk++) {
            const uint8_t *in = src + blk * c->block_bytes;
            k->fp16_row(in, s, D);
            k->fp16_row(in + 2 * D, m, D);
            for (size_t t = 0; t < G; t++)
                k->kivi_row(in + 4 * D + t * row, b, D, s, m, x + (blk * G + t) * D);
        }
    } else {
        const size_t ng = D / G;
        for (size_t i = 0; i < n; i++) {
            const uint8_t *in = src + i * c->block_bytes;
            k->kivi_group_row(in + 4 * ng, b, D, G, in, in + 2 * ng, x + i * D);
        }
    }
}

/* the tiled path's vectors (codec.h `values`): what kivi_decode computes,
 * with each block's fp16 scales and mins converted once */
static void kivi_values(vq_codec *c, const uint8_t *codes, size_t n, float *out)
{
    kivi_state *st = c->impl;
    const size_t D = st->D, G = st->G, row = st->row;
    const int b = st->bits;
    float *s = st->sm, *m = st->sm + D;
    const vq_kernels *k = vq_kernels_get();
    if (c->role == VQ_ROLE_KEY) {
        for (size_t blk = 0; blk < n / G; blk++) {
            const uint8_t *in = codes + blk * c->block_bytes;
            k->fp16_row(in, s, D);
            k->fp16_row(in + 2 * D, m, D);
            for (size_t t = 0; t < G; t++)
                k->kivi_row(in + 4 * D + t * row, b, D, s, m, out + (blk * G + t) * D);
        }
    } else {
        const size_t ng = D / G;
        for (size_t i = 0; i < n; i++) {
            const uint8_t *in = codes + i * c->block_bytes;
            k->kivi_group_row(in + 4 * ng, b, D, G, in, in + 2 * ng, out + i * D);
        }
    }
}

/* ---- fused kernels ------------------------------------------------------ */

/* qbuf: D floats q, then D/G floats of per-group sums of q (value role) */
static void kivi_prepare_query(vq_codec *c, const float *q, uint8_t *qbuf)
{
    kivi_state *st = c->impl;
    const size_t D = st->D, G = st->G;
    float *f = (float *)(void *)qbuf;
    memcpy(f, q, D * sizeof(float));
    memset(f + D, 0, D / 16 * sizeof(float));
    if (c->role == VQ_ROLE_VALUE)
        for (size_t ch = 0; ch < D; ch++)
            f[D + ch / G] += q[ch];
}

/* dot of weights w[0..D) with one row of b-bit codes */
static inline float kivi_row_dot(const float *w, const uint8_t *row, int b, size_t D)
{
    float s = 0.0f;
    if (b == 2) {
        for (size_t ch = 0; ch < D; ch += 4) {
            unsigned v = row[ch >> 2];
            s += w[ch] * (float)(v & 3) + w[ch + 1] * (float)((v >> 2) & 3) +
                 w[ch + 2] * (float)((v >> 4) & 3) + w[ch + 3] * (float)(v >> 6);
        }
    } else {
        for (size_t ch = 0; ch < D; ch += 2) {
            unsigned v = row[ch >> 1];
            s += w[ch] * (float)(v & 15) + w[ch + 1] * (float)(v >> 4);
        }
    }
    return s;
}

static void kivi_score(vq_codec *c, const uint8_t *qbuf, int n_q, const uint8_t *codes, size_t n, float *scores)
{
    kivi_state *st = c->impl;
    const size_t D = st->D, G = st->G, row = st->row;
    const int b = st->bits;
    const size_t qstride = c->query_bytes / sizeof(float);
    const float *qall = (const float *)(const void *)qbuf;
    _Static_assert(VQ_CODEC_MAX_HEAD_DIM <= VQ_KDOT_MAX_D, "kivi_kdot's head_dim");
    if (c->role == VQ_ROLE_KEY && st->qbits) {
        /* per block and query: the query folded with the header's scales,
         * rounded to int8, and the sum q*m; then the dots, which add the
         * sum (codes_qdot.h) */
        const vq_kernels *k = vq_kernels_get();
        const size_t qb = vq_codes_query_bytes(D);
        for (size_t blk = 0; blk < n / G; blk++) {
            const uint8_t *in = codes + blk * c->block_bytes;
            if (blk + 1 < n / G) /* the next block, while this one is scored */
                vq_prefetch_span(in, c->block_bytes, c->block_bytes);
            for (int j0 = 0; j0 < n_q; j0 += KIVI_QS) {
                const int nj = n_q - j0 < KIVI_QS ? n_q - j0 : KIVI_QS;
                k->codes_qprep(qall + (size_t)j0 * qstride, qstride, nj, in, D, b, st->qprep, qb);
                k->codes_qdot(in + 4 * D, row, b, G, D, st->qprep, qb, nj, scores + (size_t)j0 * n + blk * G, n);
            }
        }
        return;
    }
    if (c->role == VQ_ROLE_KEY) {
        /* per block and query: the codes' dots with q * s (the block's
         * channel scales), plus <q, m> (kernels.h kivi_kdot) */
        vq_kernels_get()->kivi_kdot(codes, c->block_bytes, n / G, b, G, D, qall, qstride, n_q, scores, n);
    } else {
        const size_t ng = D / G;
        for (size_t i = 0; i < n; i++) {
            const uint8_t *in = codes + i * c->block_bytes; /* scales, mins, codes */
            for (int j = 0; j < n_q; j++) {
                const float *q = qall + (size_t)j * qstride;
                float s = 0.0f;
                for (size_t g = 0; g < ng; g++) {
                    /* a group of G channels is G*b/8 whole bytes of the row */
                    float d = kivi_row_dot(q + g * G, in + 4 * ng + g * G * (size_t)b / 8, b, G);
                    s += ld16(in + 2 * g) * d + ld16(in + 2 * ng + 2 * g) * q[D + g];
                }
                scores[(size_t)j * n + i] = s;
            }
        }
    }
}

/* acc[ch] += w * code_ch over one row */
static inline void kivi_row_axpy(float w, const uint8_t *row, int b, size_t D, float *acc)
{
    for (size_t ch = 0; ch < D; ch++)
        acc[ch] += w * (float)vq_bits_get(row, ch, b);
}

static void kivi_accumulate(vq_codec *c, const float *w, int n_q, const uint8_t *codes, size_t n, float *acc)
{
    kivi_state *st = c->impl;
    const size_t D = st->D, G = st->G, row = st->row;
    const int b = st->bits;
    float *sum = st->scratch;
    if (c->role == VQ_ROLE_KEY) {
        for (size_t blk = 0; blk < n / G; blk++) {
            const uint8_t *in = codes + blk * c->block_bytes;
            for (int j = 0; j < n_q; j++) {
                const float *wj = w + (size_t)j * n + blk * G;
                float *a = acc + (size_t)j * D;
                float wsum = 0.0f;
                memset(sum, 0, D * sizeof(float));
                for (size_t t = 0; t < G; t++) {
                    wsum += wj[t];
                    kivi_row_axpy(wj[t], in + 4 * D + t * row, b, D, sum);
                }
                for (size_t ch = 0; ch < D; ch++)
                    a[ch] += ld16(in + 2 * ch) * sum[ch] + ld16(in + 2 * D + 2 * ch) * wsum;
            }
        }
    } else {
        /* values from the codes, per row the group's w*s and w*m (kernels.h
         * kivi_axpy, or kivi_qaxpy with qbits=8: the same bits on every
         * instruction set) */
        const vq_kernels *k = vq_kernels_get();
        (st->qbits ? k->kivi_qaxpy : k->kivi_axpy)(codes, c->block_bytes, b, n, D, G, w, n, n_q, acc, D);
    }
}

const vq_codec_ops vq_codec_kivi_ops = {
    .name = "kivi",
    .default_spec = "kivi:bits=2,group=32",
    .needs_calibration = 0,
    .init = kivi_init,
    .destroy = kivi_destroy,
    .encode = kivi_encode,
    .decode = kivi_decode,
    .prepare_query = kivi_prepare_query,
    .score = kivi_score,
    .accumulate = kivi_accumulate,
    .accum_finish = vq_codec_finish_copy,
    .values = kivi_values, /* the channel domain: finish is a copy */
    .dot_query = 1,
};
