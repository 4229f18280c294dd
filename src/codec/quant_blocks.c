/* quant_blocks.c -- `q8_0` and `q4_0`: llama.cpp's KV-cache block formats
 * (ggml-common.h: block_q8_0, block_q4_0), optionally after a randomized
 * Hadamard rotation (`rot=1`, rotation.h).
 *
 * Parameters: rot in {0,1} (default 0); qbits (below).
 * Each token's D values (D a multiple of 32) are split into D/32 blocks of
 * 32 consecutive values, stored back to back:
 *   q8_0 (34 B per block): fp16 d = amax/127, then 32 int8 q = round(x/d);
 *        x ~= d*q.                               -> D/32*34 B per token
 *   q4_0 (18 B per block): fp16 d = vmax/-8 with vmax the value of largest
 *        magnitude (sign kept), then 16 bytes: byte j holds value j in its
 *        low nibble and value j+16 in its high nibble, each as
 *        q = clamp(round(x/d) + 8, 0, 15); x ~= d*(q-8).
 *                                                  -> D/32*18 B per token
 * With rot=1 the values quantized are those of R*x; the query is rotated
 * the same way in prepare_query, so scores are <R q, code> = <q, decode>;
 * accumulate sums w*code in the rotated domain and accum_finish applies
 * R^T. Shared state: the sign diagonal, D/8 bytes (0 without rotation).
 *
 * qbits in {0, 8}: qbits=8 keys are scored in the integer domain against
 * the query quantized to int8 per block of 32 (kernels/qdot.h: VNNI on
 * AVX-512), as llama.cpp's CPU attention scores a q8_0 / q4_0 K cache;
 * qbits=8 values are summed with the attention weights rounded to int8
 * per block of 32 rows (kernels/qaxpy.h vq_qaxpy8); qbits=0 is float
 * arithmetic on the decoded blocks. The stored bytes are the same; the
 * results differ from the float ones by that rounding (keys: <= d/2 per
 * query value, d = block amax/127; values: <= A/254 per row and code
 * unit, A the block's largest weight times scale).
 * Default 8, except q8_0 values (0): keys since session 53; q4_0 values
 * since session 54, where the int8 weights made decode attention 17-22%
 * faster for a KL change of +6.1% on smollm2 and +0.3% on gemma3 (float
 * rounding alone moved it by up to 1.3%; llama.cpp sums values in float),
 * while q8_0 values read from memory were 4-20% slower with them
 * (figures/bench/values-qbits-default-s54.txt). The canonical spec always
 * names qbits ("q4_0:rot=0" in an older file meant qbits=0). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"
#include "codec/rotation.h"
#include "core/fp16.h"
#include "core/io.h"
#include "kernels/kernels.h"

#define QB 32

typedef struct {
    int bits;   /* 8 or 4 */
    int rot;
    int qbits;  /* 0: float query; 8: int8 query, integer scores */
    int w8;     /* qbits on a value codec: int8 attention weights (vq_qaxpy8) */
    int dense;  /* float scores by the dense kernels on the blocks (kernels.h dense_q) */
    int dense_sums; /* float sums by them too (no fused qaxpy twin in the table) */
    vq_elem elem; /* the blocks as the dense kernels' rows */
    vq_rotation r;
    float *tmp; /* D floats of scratch */
} qblocks;

static size_t block_size(int bits) { return bits == 8 ? 2 + QB : 2 + QB / 2; }

static vq_status qb_init_bits(vq_codec *c, vq_spec *spec, int bits)
{
    long rot, qbits;
    VQ_TRY(vq_spec_int(spec, "rot", 0, 0, 1, &rot, c->err));
    /* keys default to llama.cpp's arithmetic for a quantized K cache (the
     * query as int8 blocks, integer dots); q4_0 values to int8 weights,
     * q8_0 values to float ones (above) */
    const long qbits_default = c->role == VQ_ROLE_KEY || bits == 4 ? 8 : 0;
    VQ_TRY(vq_spec_int(spec, "qbits", qbits_default, 0, 8, &qbits, c->err));
    if (qbits != 0 && qbits != 8)
        return vq_fail(c->err, VQ_ERR_INVALID_ARG, "%s: qbits must be 0 (float query) or 8, got %ld", c->ops->name,
                       qbits);
    qblocks *q = calloc(1, sizeof *q);
    if (!q)
        return vq_fail(c->err, VQ_ERR_NOMEM, "%s: out of memory", c->ops->name);
    c->impl = q;
    q->bits = bits;
    q->rot = (int)rot;
    q->qbits = (int)qbits;
    q->w8 = qbits && c->role == VQ_ROLE_VALUE; /* a key codec's qbits rounds its query only */
    q->tmp = calloc((size_t)c->head_dim, sizeof(float));
    if (!q->tmp)
        return vq_fail(c->err, VQ_ERR_NOMEM, "%s: out of memory", c->ops->name);
    if (rot && vq_rot_init(&q->r, c->head_dim, c->seed) != 0)
        return vq_fail(c->err, VQ_ERR_UNSUPPORTED, "%s: rot=1 unsupported for head_dim %d", c->ops->name, c->head_dim);
    c->block_tokens = 1;
    c->block_bytes = (size_t)c->head_dim / QB * block_size(bits);
    c->shared_bytes = rot ? vq_rot_shared_bytes(&q->r) : 0;
    c->query_bytes = sizeof(float) * (size_t)c->head_dim + (qbits ? vq_qdot_query_bytes((size_t)c->head_dim) : 0);
    c->accum_size = (size_t)c->head_dim;
    /* where the kernel table's dense kernels read the blocks (dense_q: rows
     * decoded in registers, the tiled path's bits), they score; the sums
     * take a fused qaxpy twin (kernels/qaxpy.h) where the table has one
     * (AVX-512: 5-20% faster per token than dense_axpy on the blocks,
     * figures/bench/xeon-avx512-session25.txt), else dense_axpy on the
     * blocks; elsewhere the tiled path stays */
    const vq_kernels *kt = vq_kernels_get();
    q->dense = kt->dense_q;
    q->dense_sums = kt->dense_q && kt->qaxpy == vq_qaxpy_ref;
    q->elem = bits == 8 ? VQ_ELEM_Q8_0 : VQ_ELEM_Q4_0;
    c->score_own = qbits != 0 || q->dense;
    c->accum_own = q->dense_sums || kt->qaxpy != vq_qaxpy_ref;
    c->accum_tiled_min_q = q->dense_sums ? 0 : VQ_CODEC_TILED_MIN_Q;
    if (q->w8) /* int8 weights: always vq_qaxpy8, on every instruction set */
        c->accum_own = 1, c->accum_tiled_min_q = 0, c->value_head = vq_block_lead(c->block_bytes);
    /* the canonical spec always names qbits (the defaults changed in
     * sessions 53 and 54: "q4_0:rot=0" in an older file meant qbits=0) */
    snprintf(c->canon, sizeof c->canon, "%s:rot=%d,qbits=%d", c->ops->name, q->rot, q->qbits);
    return VQ_OK;
}

static vq_status q8_init(vq_codec *c, vq_spec *spec) { return qb_init_bits(c, spec, 8); }
static vq_status q4_init(vq_codec *c, vq_spec *spec) { return qb_init_bits(c, spec, 4); }

static void qb_destroy(vq_codec *c)
{
    qblocks *q = c->impl;
    if (q)
        free(q->tmp);
    free(q);
    c->impl = NULL;
}

/* ---- one block of 32 values: quantize / dequantize ---------------------- */

/* roundf(fminf(hi, fmaxf(lo, v))) for integers lo < 0 < hi of at most
 * 2^23 (NaN gives lo), without library calls so that the block loops
 * vectorize: the clamp first (rounding commutes with a clamp to integers),
 * then half away from zero from the truncation (the fraction is exact) */
static inline int round_clamped(float v, float lo, float hi)
{
    v = v >= lo ? v : lo;
    v = v <= hi ? v : hi;
    int i = (int)v;
    const float f = v - (float)i;
    return i + (f >= 0.5f) - (f <= -0.5f);
}

static void q8_block_encode(const float *x, uint8_t *dst)
{
    float amax = 0.0f;
    for (int i = 0; i < QB; i++) {
        const float a = fabsf(x[i]);
        amax = a > amax ? a : amax; /* fmaxf: a NaN is skipped */
    }
    vq_fp16 dh = vq_fp32_to_fp16(amax / 127.0f);
    float d = vq_fp16_to_fp32(dh); /* quantize with the stored scale */
    float id = d > 0.0f ? 1.0f / d : 0.0f;
    vq_put_u16(dst, dh);
    for (int i = 0; i < QB; i++)
        dst[2 + i] = (uint8_t)(int8_t)round_clamped(x[i] * id, -127.0f, 127.0f);
}

static void q4_block_encode(const float *x, uint8_t *dst)
{
    float amax = 0.0f, vmax = 0.0f;
    for (int i = 0; i < QB; i++)
        if (fabsf(x[i]) > amax) {
            amax = fabsf(x[i]);
            vmax = x[i];
        }
    vq_fp16 dh = vq_fp32_to_fp16(vmax / -8.0f);
    float d = vq_fp16_to_fp32(dh);
    float id = d != 0.0f ? 1.0f / d : 0.0f;
    vq_put_u16(dst, dh);
    for (int j = 0; j < QB / 2; j++) { /* round(v) + 8 held to [0, 15] */
        const int a = round_clamped(x[j] * id, -8.0f, 7.0f) + 8;
        const int b = round_clamped(x[j + QB / 2] * id, -8.0f, 7.0f) + 8;
        dst[2 + j] = (uint8_t)(a | b << 4);
    }
}

/* <y, block> for 32 query values y, from the integer codes */
static float block_dot(int bits, const uint8_t *b, const float *y)
{
    float d = vq_fp16_to_fp32(vq_get_u16(b));
    float s = 0.0f;
    if (bits == 8) {
        for (int i = 0; i < QB; i++)
            s += y[i] * (float)(int8_t)b[2 + i];
    } else {
        for (int j = 0; j < QB / 2; j++)
            s += y[j] * (float)((b[2 + j] & 15) - 8) + y[j + QB / 2] * (float)((b[2 + j] >> 4) - 8);
    }
    return d * s;
}

/* ---- codec ops ----------------------------------------------------------- */

static void qb_encode(vq_codec *c, const float *x, size_t n, uint8_t *dst)
{
    qblocks *q = c->impl;
    const int D = c->head_dim;
    const size_t bs = block_size(q->bits);
    for (size_t t = 0; t < n; t++) {
        const float *v = x + t * (size_t)D;
        if (q->rot) {
            memcpy(q->tmp, v, sizeof(float) * (size_t)D);
            vq_rot_forward(&q->r, q->tmp);
            v = q->tmp;
        }
        uint8_t *o = dst + t * c->block_bytes;
        for (int b = 0; b < D / QB; b++) {
            if (q->bits == 8)
                q8_block_encode(v + b * QB, o + (size_t)b * bs);
            else
                q4_block_encode(v + b * QB, o + (size_t)b * bs);
        }
    }
}

static void qb_decode(vq_codec *c, const uint8_t *src, size_t n, float *x)
{
    qblocks *q = c->impl;
    const int D = c->head_dim;
    const vq_kernels *k = vq_kernels_get();
    for (size_t t = 0; t < n; t++) {
        float *v = x + t * (size_t)D;
        const uint8_t *s = src + t * c->block_bytes;
        (q->bits == 8 ? k->q8_0_values : k->q4_0_values)(s, (size_t)(D / QB), v); /* blocks back to back */
        if (q->rot)
            vq_rot_inverse(&q->r, v);
    }
}

static void qb_prepare_query(vq_codec *c, const float *qv, uint8_t *qbuf)
{
    qblocks *q = c->impl;
    float *y = (float *)(void *)qbuf;
    memcpy(y, qv, sizeof(float) * (size_t)c->head_dim);
    if (q->rot)
        vq_rot_forward(&q->r, y);
    if (q->qbits)
        vq_kernels_get()->qdot_prepare(y, (size_t)c->head_dim, qbuf + sizeof(float) * (size_t)c->head_dim);
}

static void qb_score(vq_codec *c, const uint8_t *qbuf, int n_q, const uint8_t *codes, size_t n, float *scores)
{
    qblocks *q = c->impl;
    const int D = c->head_dim;
    const size_t bs = block_size(q->bits);
    const float *y = (const float *)(const void *)qbuf;
    if (q->qbits) {
        vq_kernels_get()->qdot(q->bits, codes, c->block_bytes, n, (size_t)D, qbuf + sizeof(float) * (size_t)D,
                               c->query_bytes, n_q, scores, n);
        return;
    }
    if (q->dense) {
        vq_kernels_get()->dense_dot(y, c->query_bytes / sizeof(float), n_q, codes,
                                    q->elem, n, (size_t)D, scores, n);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const uint8_t *k = codes + i * c->block_bytes;
        for (int j = 0; j < n_q; j++) {
            const float *yj = y + (size_t)j * D;
            float s = 0.0f;
            for (int b = 0; b < D / QB; b++)
                s += block_dot(q->bits, k + (size_t)b * bs, yj + b * QB);
            scores[(size_t)j * n + i] = s;
        }
    }
}

static void qb_accumulate(vq_codec *c, const float *w, int n_q, const uint8_t *codes, size_t n, float *acc)
{
    qblocks *q = c->impl;
    const vq_kernels *k = vq_kernels_get();
    if (q->dense_sums && !q->w8) {
        k->dense_axpy(w, n, n_q, codes, q->elem, n, (size_t)c->head_dim, acc,
                      (size_t)c->head_dim);
        return;
    }
    (q->w8 ? k->qaxpy8 : k->qaxpy)(q->bits, codes, c->block_bytes, n, (size_t)c->head_dim, w, n, n_q, acc,
                                      (size_t)c->head_dim);
}

/* accum-domain vectors: block values, still rotated when rot=1 (a token's
 * blocks are contiguous and tokens follow each other: one run of blocks) */
static void qb_values(vq_codec *c, const uint8_t *codes, size_t n, float *out)
{
    qblocks *q = c->impl;
    size_t nblk = n * (size_t)(c->head_dim / QB);
    const vq_kernels *k = vq_kernels_get();
    (q->bits == 8 ? k->q8_0_values : k->q4_0_values)(codes, nblk, out);
}

static void qb_finish(vq_codec *c, const float *acc, float *out)
{
    qblocks *q = c->impl;
    memcpy(out, acc, sizeof(float) * (size_t)c->head_dim);
    if (q->rot)
        vq_rot_inverse(&q->r, out);
}

/* the two formats share every kernel; init sets the format */
#define QB_OPS(method, init_fn)                                                                               \
    {                                                                                                         \
        .name = method, .default_spec = method, .init = init_fn, .destroy = qb_destroy, .encode = qb_encode,  \
        .decode = qb_decode, .prepare_query = qb_prepare_query, .score = qb_score,                            \
        .accumulate = qb_accumulate, .accum_finish = qb_finish, .values = qb_values, .dot_query = 1,          \
    }

const vq_codec_ops vq_codec_q8_0_ops = QB_OPS("q8_0", q8_init);
const vq_codec_ops vq_codec_q4_0_ops = QB_OPS("q4_0", q4_init);
