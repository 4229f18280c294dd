/* qjl.c -- `qjl`: the 1-bit quantized Johnson-Lindenstrauss sketch of keys
 * (Zandieh, Daliri, Han, "QJL: 1-Bit Quantized JL Transform for KV Cache
 * Quantization with Zero Overhead", 2024).
 *
 * Parameters: dim = m, the sketch size (multiple of 32 in 32..1024,
 * default D); qbits = 0 (the query sketch S q kept in floats, as the
 * paper) or 4..8: S q quantized uniformly to that many bits
 * (kernels/qplanes.h) and scored against the sign bits by popcounts
 * (kernels.h signscore), as RaBitQ's query. Keys default to qbits=4 since
 * session 56 (as rabitq's; values to 0, where qbits plays no part); the
 * canonical spec of keys names qbits either way.
 * Encode k: S is a seeded m x D matrix of i.i.d. N(0,1) entries; store
 * ||k|| as fp16 and z = sign(S k) as m bits (bit set = +1).
 *   layout: fp16 ||k|| | m/8 bytes of sign bits, LSB first
 *                                                  bytes = 2 + m/8
 *   (D=128, m=128: 18 B, 14.2x vs fp16)
 * The query is projected (prepare_query: S q, m floats; with qbits, its bit
 * planes);
 * score = sqrt(pi/2)/m * ||k|| * <S q, z>, which is an unbiased estimate of
 * <q, k> (QJL Lemma 3.2: E[<s,q> sign(<s,k>)] = sqrt(2/pi) <q,k>/||k|| for
 * s ~ N(0, I)). decode returns the vector whose dot products are exactly
 * that estimator, k_hat = sqrt(pi/2)/m * ||k|| * S^T z, so score equals
 * <q, decode(k)> to rounding; accumulate sums w * sqrt(pi/2)/m * ||k|| * z
 * in the m-dimensional sketch domain and accum_finish applies S^T.
 * This is the plain estimator: the paper's outlier-channel handling is not
 * implemented. Shared state: S as fp32, 4*m*D bytes (and S column by
 * column, St, a working copy for the encoder's ordered_matvec: the same
 * signs on every CPU).
 * Attention takes the tiled path (codec/tiled.h): `values` gives each
 * token's sketch-domain vector g z (g = sqrt(pi/2)/m ||k||, z in +-1, by
 * kernels.h lut_row), the prepared query S q is its dot partner, and the
 * SIMD dense kernels score and sum over tiles of them; qjl_score and
 * qjl_accumulate are the scalar references. Where the kernel table has a
 * SIMD ftab_score, S q is followed in the prepared query by its float
 * sign tables (kernels/float_tables.h) and keys are scored from the bits
 * through them (||k|| (sqrt(pi/2)/m A(z)): the same estimator to float
 * rounding) instead. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/bitstream.h"
#include "codec/codec.h"
#include "kernels/qplanes.h"
#include "codec/vecops.h"
#include "core/fp16.h"
#include "core/io.h"
#include "core/rng.h"
#include "kernels/kernels.h"

typedef struct {
    int m, qbits;
    float scale; /* sqrt(pi/2)/m */
    float *S;    /* m x D, row-major */
    float *St;   /* S column by column (kernels/matvec.h; a working copy, not state) */
    float *tmp;  /* m floats */
    float *y;    /* m floats: the query sketch before quantization */
    int ftab;    /* float query scored from its sign tables (kernels.h ftab_score) */
} qjl;

static vq_status qjl_init(vq_codec *c, vq_spec *spec)
{
    const int D = c->head_dim;
    long m;
    long qbits;
    VQ_TRY(vq_spec_int(spec, "dim", D, 32, 1024, &m, c->err));
    VQ_TRY(vq_spec_int(spec, "qbits", c->role == VQ_ROLE_KEY ? 4 : 0, 0, 8, &qbits, c->err));
    if (m % 32 != 0)
        return vq_fail(c->err, VQ_ERR_INVALID_ARG, "qjl: parameter dim=%ld is not a multiple of 32", m);
    if (qbits != 0 && qbits < 4)
        return vq_fail(c->err, VQ_ERR_INVALID_ARG, "qjl: parameter qbits=%ld unsupported (0, or 4..8)", qbits);
    qjl *j = calloc(1, sizeof *j);
    if (!j)
        return vq_fail(c->err, VQ_ERR_NOMEM, "qjl: out of memory");
    c->impl = j;
    j->m = (int)m;
    j->qbits = (int)qbits;
    j->scale = sqrtf((float)M_PI / 2.0f) / (float)m;
    j->S = malloc(sizeof(float) * (size_t)m * D);
    j->St = malloc(sizeof(float) * (size_t)m * D);
    j->tmp = malloc(sizeof(float) * (size_t)m);
    j->y = malloc(sizeof(float) * (size_t)m);
    if (!j->S || !j->St || !j->tmp || !j->y)
        return vq_fail(c->err, VQ_ERR_NOMEM, "qjl: out of memory");
    vq_rng g;
    vq_rng_seed(&g, vq_seed_mix(c->seed, 0x716a6c70u /* "qjlp" */));
    for (size_t i = 0; i < (size_t)m * D; i++)
        j->S[i] = vq_rng_normal(&g);
    vq_transpose(j->S, (size_t)m, (size_t)D, j->St);
    c->block_tokens = 1;
    c->block_bytes = 2 + (size_t)m / 8;
    c->shared_bytes = sizeof(float) * (size_t)m * D;
    c->query_bytes = j->qbits ? vq_qplanes_bytes(j->m, j->qbits) : sizeof(float) * (size_t)m;
    c->accum_size = (size_t)m;
    c->score_own = j->qbits != 0; /* bit planes: not a float dot partner */
    /* the float query S q followed by its sign tables where the kernel
     * table has a SIMD ftab_score (else the tiled path) */
    if (!j->qbits && vq_kernels_get()->ftab_score != vq_ftab_score_ref) {
        j->ftab = c->score_own = 1;
        c->query_bytes += sizeof(float) * vq_float_tables_floats((size_t)m);
    }
    if (j->qbits)
        snprintf(c->canon, sizeof c->canon, "qjl:dim=%d,qbits=%d", j->m, j->qbits);
    else /* keys name the float query (their default is 4) */
        snprintf(c->canon, sizeof c->canon, "qjl:dim=%d%s", j->m, c->role == VQ_ROLE_KEY ? ",qbits=0" : "");
    return VQ_OK;
}

static void qjl_destroy(vq_codec *c)
{
    qjl *j = c->impl;
    if (j) {
        free(j->S);
        free(j->St);
        free(j->tmp);
        free(j->y);
    }
    free(j);
    c->impl = NULL;
}

/* y (m) <- S x (D): each sum in index order (kernels/matvec.h), so the
 * signs do not depend on the CPU */
static void project(const qjl *j, const float *x, int D, float *y)
{
    vq_kernels_get()->ordered_matvec(j->St, (size_t)j->m, (size_t)D, x, y);
}

static inline float zsign(const uint8_t *z, int i) { return vq_bits_get(z, (size_t)i, 1) ? 1.0f : -1.0f; }

/* the m signs of a block into j->tmp (+-1) */
static void signs(qjl *j, const uint8_t *z)
{
    for (int i = 0; i < j->m; i++)
        j->tmp[i] = zsign(z, i);
}

static void qjl_encode(vq_codec *c, const float *x, size_t n, uint8_t *dst)
{
    qjl *j = c->impl;
    const int D = c->head_dim;
    for (size_t t = 0; t < n; t++) {
        const float *k = x + t * (size_t)D;
        uint8_t *blk = dst + t * c->block_bytes;
        memset(blk, 0, c->block_bytes);
        vq_put_u16(blk, vq_fp32_to_fp16(vq_vec_norm(k, (size_t)D)));
        project(j, k, D, j->tmp);
        for (int i = 0; i < j->m; i++)
            if (j->tmp[i] >= 0.0f)
                vq_bits_put(blk + 2, (size_t)i, 1, 1);
    }
}

static void qjl_decode(vq_codec *c, const uint8_t *src, size_t n, float *x)
{
    qjl *j = c->impl;
    const int D = c->head_dim;
    for (size_t t = 0; t < n; t++) {
        const uint8_t *blk = src + t * c->block_bytes;
        float *k = x + t * (size_t)D;
        float g = j->scale * vq_fp16_to_fp32(vq_get_u16(blk));
        memset(k, 0, sizeof(float) * (size_t)D);
        for (int i = 0; i < j->m; i++) {
            float zi = g * zsign(blk + 2, i);
            const float *row = j->S + (size_t)i * D;
            for (int d = 0; d < D; d++)
                k[d] += zi * row[d];
        }
    }
}

/* y (m) <- S q for a query: the kernel table's dense_dot (its SIMD sums;
 * keys keep project's, so that their bits do not depend on the CPU) */
static void project_query(const qjl *j, const float *q, int D, float *y)
{
    vq_kernels_get()->dense_dot(q, (size_t)D, 1, j->S, VQ_ELEM_F32, (size_t)j->m, (size_t)D, y, (size_t)j->m);
}

static void qjl_prepare_query(vq_codec *c, const float *q, uint8_t *qbuf)
{
    qjl *j = c->impl;
    if (j->qbits == 0) {
        float *y = (float *)(void *)qbuf;
        project_query(j, q, c->head_dim, y);
        if (j->ftab)
            vq_kernels_get()->sign_tables(y, (size_t)j->m, y + j->m);
        return;
    }
    project_query(j, q, c->head_dim, j->y);
    vq_qplanes_encode(j->y, j->m, j->qbits, qbuf);
}

/* qbits: g <S q', z> by popcounts (kernels.h signscore): the token's factor
 * is its fp16 norm, the scale sqrt(pi/2)/m folded into the query's
 * constants (qplanes.h: 2 lo, 2 delta, base) */
static void qjl_score_bits(vq_codec *c, const uint8_t *qbuf, int n_q, const uint8_t *codes, size_t n, float *scores)
{
    enum { QRY = 16 };
    qjl *j = c->impl;
    const vq_kernels *k = vq_kernels_get();
    const size_t off = 2; /* the sign bits follow the fp16 norm */
    const float w = 1.0f;
    float qc[3 * QRY];
    for (int j0 = 0; j0 < n_q; j0 += QRY) {
        const int nj = n_q - j0 < QRY ? n_q - j0 : QRY;
        const uint8_t *qb0 = qbuf + (size_t)j0 * c->query_bytes;
        for (int a = 0; a < nj; a++) {
            vq_qplanes_score_consts(qb0 + (size_t)a * c->query_bytes, j->m, w, qc + 3 * a);
            for (int t = 0; t < 3; t++)
                qc[3 * a + t] *= j->scale;
        }
        k->signscore(codes, c->block_bytes, n, (size_t)j->m, &off, &w, 1, NULL, 0, qb0 + 12, c->query_bytes, qc, nj,
                     j->qbits, scores + (size_t)j0 * n, n);
    }
}

static void qjl_score(vq_codec *c, const uint8_t *qbuf, int n_q, const uint8_t *codes, size_t n, float *scores)
{
    qjl *j = c->impl;
    if (j->qbits) {
        qjl_score_bits(c, qbuf, n_q, codes, n, scores);
        return;
    }
    const float *qs = (const float *)(const void *)qbuf;
    if (j->ftab) { /* ||k|| (scale A(z)): the fp16 norm at byte 0, the sign bits after it */
        const size_t off = 2;
        vq_kernels_get()->ftab_score(codes, c->block_bytes, n, (size_t)j->m, &off, &j->scale, 1, NULL, 0, qs + j->m,
                                     c->query_bytes / sizeof(float), n_q, scores, n);
        return;
    }
    for (size_t t = 0; t < n; t++) {
        const uint8_t *blk = codes + t * c->block_bytes;
        float g = j->scale * vq_fp16_to_fp32(vq_get_u16(blk));
        signs(j, blk + 2);
        for (int a = 0; a < n_q; a++)
            scores[(size_t)a * n + t] = g * vq_vec_dot(j->tmp, qs + (size_t)a * j->m, (size_t)j->m);
    }
}

static void qjl_accumulate(vq_codec *c, const float *w, int n_q, const uint8_t *codes, size_t n, float *acc)
{
    qjl *j = c->impl;
    for (size_t t = 0; t < n; t++) {
        const uint8_t *blk = codes + t * c->block_bytes;
        float g = j->scale * vq_fp16_to_fp32(vq_get_u16(blk));
        signs(j, blk + 2);
        for (int a = 0; a < n_q; a++)
            vq_vec_axpy(w[(size_t)a * n + t] * g, j->tmp, (size_t)j->m, acc + (size_t)a * j->m);
    }
}

static void qjl_finish(vq_codec *c, const float *acc, float *out)
{
    qjl *j = c->impl;
    const int D = c->head_dim;
    memset(out, 0, sizeof(float) * (size_t)D);
    for (int i = 0; i < j->m; i++) {
        const float *row = j->S + (size_t)i * D;
        for (int d = 0; d < D; d++)
            out[d] += acc[i] * row[d];
    }
}

/* the sketch-domain vectors g z of n tokens (m floats each), the vectors
 * qjl_accumulate adds and qjl_score dots with S q */
static void qjl_values(vq_codec *c, const uint8_t *codes, size_t n, float *out)
{
    qjl *j = c->impl;
    static const float pm1[2] = { -1.0f, 1.0f };
    const vq_kernels *k = vq_kernels_get();
    for (size_t t = 0; t < n; t++) {
        const uint8_t *blk = codes + t * c->block_bytes;
        k->lut_row(blk + 2, 1, (size_t)j->m, pm1, j->scale * vq_fp16_to_fp32(vq_get_u16(blk)), 0,
                   out + t * (size_t)j->m);
    }
}

const vq_codec_ops vq_codec_qjl_ops = {
    .name = "qjl",
    .default_spec = "qjl",
    .init = qjl_init,
    .destroy = qjl_destroy,
    .encode = qjl_encode,
    .decode = qjl_decode,
    .prepare_query = qjl_prepare_query,
    .score = qjl_score,
    .accumulate = qjl_accumulate,
    .accum_finish = qjl_finish,
    .values = qjl_values,
    .dot_query = 1, /* the prepared query is S q, m floats (qbits=0; bit planes score in qjl_score) */
};
