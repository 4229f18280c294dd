/* quants_ref.c -- scalar reference kernels for the weight formats: block
 * unpacking to integer codes, dequantization, activation quantization and
 * integer dot products (layouts in quants_impl.h).
 *
 * Every quantized type is first unpacked to its integer codes and per-group
 * scales (vq_unpack32 / vq_unpack256); dequantization and the scalar dot
 * products are then one generic loop each, so the bit layouts live in one
 * place. The AVX2 kernels (quants_avx2.c) are checked against these. */
#include <math.h>
#include <string.h>

#include "core/fp16.h"
#include "core/io.h"
#include "model/quants_impl.h"

static float h2f(uint16_t h) { return vq_fp16_to_fp32(h); }

vq_act_kind vq_act_kind_of(vq_wtype t)
{
    switch (t) {
    case VQ_W_F32: case VQ_W_F16: case VQ_W_BF16: return VQ_ACT_F32;
    case VQ_W_Q4_0: case VQ_W_Q4_1: case VQ_W_Q5_0: case VQ_W_Q5_1: case VQ_W_Q8_0:
        return VQ_ACT_Q32;
    case VQ_W_Q2_K: case VQ_W_Q3_K: case VQ_W_Q4_K: case VQ_W_Q5_K: case VQ_W_Q6_K:
        return VQ_ACT_Q256;
    default: return VQ_ACT_NONE;
    }
}

/* ---- unpacking ------------------------------------------------------------- */

/* 32-element types: element j (0..15) is the low nibble of qs[j], element
 * j+16 the high nibble; for Q5 bit i of qh (little-endian u32) is element
 * i's fifth bit. */
void vq_unpack32(vq_wtype t, const void *blk, vq_unpacked32 *u)
{
    uint32_t qh;
    switch (t) {
    case VQ_W_Q4_0: {
        const vq_blk_q4_0 *b = blk;
        for (int j = 0; j < 16; j++) {
            u->q[j] = (int8_t)((b->qs[j] & 0xf) - 8);
            u->q[j + 16] = (int8_t)((b->qs[j] >> 4) - 8);
        }
        u->d = h2f(b->d);
        u->m = 0.0f;
        return;
    }
    case VQ_W_Q4_1: {
        const vq_blk_q4_1 *b = blk;
        for (int j = 0; j < 16; j++) {
            u->q[j] = (int8_t)(b->qs[j] & 0xf);
            u->q[j + 16] = (int8_t)(b->qs[j] >> 4);
        }
        u->d = h2f(b->d);
        u->m = h2f(b->m);
        return;
    }
    case VQ_W_Q5_0: {
        const vq_blk_q5_0 *b = blk;
        memcpy(&qh, b->qh, 4);
        for (int j = 0; j < 16; j++) {
            u->q[j] = (int8_t)(((b->qs[j] & 0xf) | (((qh >> j) & 1) << 4)) - 16);
            u->q[j + 16] = (int8_t)(((b->qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4)) - 16);
        }
        u->d = h2f(b->d);
        u->m = 0.0f;
        return;
    }
    case VQ_W_Q5_1: {
        const vq_blk_q5_1 *b = blk;
        memcpy(&qh, b->qh, 4);
        for (int j = 0; j < 16; j++) {
            u->q[j] = (int8_t)((b->qs[j] & 0xf) | (((qh >> j) & 1) << 4));
            u->q[j + 16] = (int8_t)((b->qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4));
        }
        u->d = h2f(b->d);
        u->m = h2f(b->m);
        return;
    }
    case VQ_W_Q8_0: {
        const vq_blk_q8_0 *b = blk;
        memcpy(u->q, b->qs, 32);
        u->d = h2f(b->d);
        u->m = 0.0f;
        return;
    }
    default:
        memset(u, 0, sizeof *u);
        return;
    }
}

void vq_k4_scale_min(const uint8_t *s, int j, int *scale, int *min)
{
    if (j < 4) {
        *scale = s[j] & 63;
        *min = s[j + 4] & 63;
    } else {
        *scale = (s[j + 4] & 0xf) | ((s[j - 4] >> 6) << 4);
        *min = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

static void unpack_q2_K(const vq_blk_q2_K *b, vq_unpacked256 *u)
{
    /* each 128-element half h uses qs[32h .. 32h+32); its 4 bit-pairs
     * (shift 0,2,4,6) give 4 runs of 32 elements; group g (16 elements) has
     * scale byte scales[g] */
    for (int h = 0; h < 2; h++)
        for (int k = 0; k < 4; k++)
            for (int l = 0; l < 32; l++)
                u->q[128 * h + 32 * k + l] = (int8_t)((b->qs[32 * h + l] >> (2 * k)) & 3);
    for (int g = 0; g < 16; g++) {
        u->scale[g] = b->scales[g] & 0xf;
        u->min[g] = b->scales[g] >> 4;
    }
    u->d = h2f(b->d);
    u->dmin = h2f(b->dmin);
}

static void unpack_q3_K(const vq_blk_q3_K *b, vq_unpacked256 *u)
{
    /* like Q2_K for the low bits; element i's high bit is bit (i/32) of
     * hmask[i%32]; a clear high bit subtracts 4 */
    for (int h = 0; h < 2; h++)
        for (int k = 0; k < 4; k++)
            for (int l = 0; l < 32; l++) {
                int lo = (b->qs[32 * h + l] >> (2 * k)) & 3;
                int hi = (b->hmask[l] >> (4 * h + k)) & 1;
                u->q[128 * h + 32 * k + l] = (int8_t)(lo - 4 + 4 * hi);
            }
    /* scale g: low 4 bits from scales[g] (g<8) or scales[g-8]>>4, high 2
     * bits from scales[8 + g%4] at bit 2*(g/4); stored +32 */
    for (int g = 0; g < 16; g++) {
        int lo = g < 8 ? (b->scales[g] & 0xf) : (b->scales[g - 8] >> 4);
        int hi = (b->scales[8 + g % 4] >> (2 * (g / 4))) & 3;
        u->scale[g] = (int16_t)((lo | (hi << 4)) - 32);
        u->min[g] = 0;
    }
    u->d = h2f(b->d);
    u->dmin = 0.0f;
}

/* Q4_K/Q5_K: each 64-element chunk c uses qs[32c .. 32c+32): low nibbles
 * are sub-block 2c, high nibbles sub-block 2c+1; Q5_K's fifth bit of
 * element i is bit (i/32) of qh[i%32]. */
static void unpack_q45_K(const uint8_t *scales12, const uint8_t *qs, const uint8_t *qh,
                         uint16_t d, uint16_t dmin, vq_unpacked256 *u)
{
    for (int c = 0; c < 4; c++)
        for (int l = 0; l < 32; l++) {
            u->q[64 * c + l] = (int8_t)(qs[32 * c + l] & 0xf);
            u->q[64 * c + 32 + l] = (int8_t)(qs[32 * c + l] >> 4);
        }
    if (qh)
        for (int s = 0; s < 8; s++) /* sub-block s = i/32 takes bit s of qh[i%32] */
            for (int l = 0; l < 32; l++)
                u->q[32 * s + l] = (int8_t)(u->q[32 * s + l] | (((qh[l] >> s) & 1) << 4));
    for (int j = 0; j < 8; j++) {
        int sc, mn;
        vq_k4_scale_min(scales12, j, &sc, &mn);
        u->scale[2 * j] = u->scale[2 * j + 1] = (int16_t)sc;
        u->min[2 * j] = u->min[2 * j + 1] = (int16_t)mn;
    }
    u->d = h2f(d);
    u->dmin = h2f(dmin);
}

static void unpack_q6_K(const vq_blk_q6_K *b, vq_unpacked256 *u)
{
    /* per 128-element half h: ql[64h ..], qh[32h ..]; element 32k+l of the
     * half (k = 0..3, l = 0..31): low 4 bits from ql[64h + l + 32*(k&1)]
     * (high nibble when k >= 2), high 2 bits from qh[32h + l] >> 2k */
    for (int h = 0; h < 2; h++)
        for (int l = 0; l < 32; l++) {
            const uint8_t *ql = b->ql + 64 * h;
            int hb = b->qh[32 * h + l];
            int8_t *q = u->q + 128 * h;
            q[l] = (int8_t)(((ql[l] & 0xf) | ((hb & 3) << 4)) - 32);
            q[32 + l] = (int8_t)(((ql[32 + l] & 0xf) | (((hb >> 2) & 3) << 4)) - 32);
            q[64 + l] = (int8_t)(((ql[l] >> 4) | (((hb >> 4) & 3) << 4)) - 32);
            q[96 + l] = (int8_t)(((ql[32 + l] >> 4) | (((hb >> 6) & 3) << 4)) - 32);
        }
    for (int g = 0; g < 16; g++) {
        u->scale[g] = b->scales[g];
        u->min[g] = 0;
    }
    u->d = h2f(b->d);
    u->dmin = 0.0f;
}

void vq_unpack256(vq_wtype t, const void *blk, vq_unpacked256 *u)
{
    switch (t) {
    case VQ_W_Q2_K: unpack_q2_K(blk, u); return;
    case VQ_W_Q3_K: unpack_q3_K(blk, u); return;
    case VQ_W_Q4_K: {
        const vq_blk_q4_K *b = blk;
        unpack_q45_K(b->scales, b->qs, NULL, b->d, b->dmin, u);
        return;
    }
    case VQ_W_Q5_K: {
        const vq_blk_q5_K *b = blk;
        unpack_q45_K(b->scales, b->qs, b->qh, b->d, b->dmin, u);
        return;
    }
    case VQ_W_Q6_K: unpack_q6_K(blk, u); return;
    default: memset(u, 0, sizeof *u); return;
    }
}

/* ---- dequantization ------------------------------------------------------------ */

void vq_dequantize(vq_wtype t, const void *src, float *dst, size_t n)
{
    const uint8_t *p = src;
    size_t bb = vq_wtype_block_bytes(t);
    switch (vq_act_kind_of(t)) {
    case VQ_ACT_F32:
        for (size_t i = 0; i < n; i++) {
            uint16_t h;
            if (t == VQ_W_F32) {
                memcpy(&dst[i], p + 4 * i, 4);
                continue;
            }
            memcpy(&h, p + 2 * i, 2);
            dst[i] = t == VQ_W_F16 ? vq_fp16_to_fp32(h) : vq_bf16_to_fp32(h);
        }
        return;
    case VQ_ACT_Q32:
        for (size_t b = 0; b < n / VQ_QK; b++) {
            vq_unpacked32 u;
            vq_unpack32(t, p + b * bb, &u);
            for (int i = 0; i < VQ_QK; i++)
                dst[b * VQ_QK + i] = u.d * (float)u.q[i] + u.m;
        }
        return;
    case VQ_ACT_Q256:
        for (size_t b = 0; b < n / VQ_QK_K; b++) {
            vq_unpacked256 u;
            vq_unpack256(t, p + b * bb, &u);
            for (int i = 0; i < VQ_QK_K; i++)
                dst[b * VQ_QK_K + i] =
                    u.d * (float)u.scale[i / 16] * (float)u.q[i] - u.dmin * (float)u.min[i / 16];
        }
        return;
    case VQ_ACT_NONE:
        return;
    }
}

/* ---- activation quantization ------------------------------------------------- */

/* Symmetric int8: d = amax/127, q = round(x/d); an all-zero block has d = 0. */
static float quantize_int8(const float *x, int n, int8_t *q)
{
    /* max |x| by comparisons (NaN never wins, as with fmaxf): the loop
     * vectorizes, where fmaxf was a library call per element */
    float amax = 0.0f;
    for (int i = 0; i < n; i++) {
        const float a = fabsf(x[i]);
        amax = a > amax ? a : amax;
    }
    float d = amax / 127.0f;
    float id = d > 0.0f ? 1.0f / d : 0.0f;
    /* round to nearest even by adding and subtracting 1.5*2^23 (exact for
     * |v| < 2^22; here |v| <= 127): the same result as nearbyintf in the
     * default rounding mode, without a libm call, and vectorizable */
    const float magic = 12582912.0f;
    for (int i = 0; i < n; i++) {
        float v = (x[i] * id + magic) - magic;
        /* clamp; NaN (from NaN/Inf inputs) becomes 0 rather than an undefined cast */
        q[i] = (int8_t)(v >= 127.0f ? 127 : v <= -127.0f ? -127 : v == v ? (int)v : 0);
    }
    return d;
}

void vq_act_quantize32(const float *x, size_t n, vq_act32 *a)
{
    for (size_t b = 0; b < n / VQ_QK; b++) {
        vq_act32 *o = &a[b];
        o->d = quantize_int8(x + b * VQ_QK, VQ_QK, o->qs);
        int sum = 0;
        for (int i = 0; i < VQ_QK; i++)
            sum += o->qs[i];
        o->s = o->d * (float)sum;
    }
}

void vq_act_quantize256(const float *x, size_t n, vq_act256 *a)
{
    for (size_t b = 0; b < n / VQ_QK_K; b++) {
        vq_act256 *o = &a[b];
        o->d = quantize_int8(x + b * VQ_QK_K, VQ_QK_K, o->qs);
        for (int g = 0; g < 16; g++) {
            int sum = 0;
            for (int i = 0; i < 16; i++)
                sum += o->qs[16 * g + i];
            o->bsums[g] = (int16_t)sum;
        }
    }
}

/* ---- scalar dot products -------------------------------------------------------- */

/* one block of 32: d_w*d_x*sum(q_w*q_x) + m_w*s_x (s_x = d_x * sum q_x) */
static float block_dot32(vq_wtype t, const uint8_t *blk, const void *act)
{
    const vq_act32 *a = act;
    vq_unpacked32 u;
    vq_unpack32(t, blk, &u);
    int32_t s = 0;
    for (int i = 0; i < VQ_QK; i++)
        s += (int32_t)u.q[i] * a->qs[i];
    return u.d * a->d * (float)s + u.m * a->s;
}

/* one block of 256: d_x * (d_w * sum_g scale_g * sum(q*q_x) - dmin_w * sum_g min_g * bsum_g) */
static float block_dot256(vq_wtype t, const uint8_t *blk, const void *act)
{
    const vq_act256 *a = act;
    vq_unpacked256 u;
    vq_unpack256(t, blk, &u);
    int32_t s = 0, m = 0;
    for (int g = 0; g < 16; g++) {
        int32_t sg = 0;
        for (int i = 16 * g; i < 16 * g + 16; i++)
            sg += (int32_t)u.q[i] * a->qs[i];
        s += sg * u.scale[g];
        m += (int32_t)u.min[g] * a->bsums[g];
    }
    return a->d * (u.d * (float)s - u.dmin * (float)m);
}

/* sum over the n / qk blocks of block_dot (weight blocks of type t, the
 * activation's blocks act_bytes apart), in order */
static inline float dot_blocks(vq_wtype t, const void *w, const void *act, size_t n, size_t qk, size_t act_bytes,
                               float (*block_dot)(vq_wtype, const uint8_t *, const void *))
{
    const uint8_t *p = w, *a = act;
    size_t bb = vq_wtype_block_bytes(t);
    float acc = 0.0f;
    for (size_t b = 0; b < n / qk; b++)
        acc += block_dot(t, p + b * bb, a + b * act_bytes);
    return acc;
}

#define DOT32(name, type)                                                                                     \
    static float name(const void *w, const void *a, size_t n)                                                 \
    {                                                                                                         \
        return dot_blocks(type, w, a, n, VQ_QK, sizeof(vq_act32), block_dot32);                               \
    }
#define DOT256(name, type)                                                                                    \
    static float name(const void *w, const void *a, size_t n)                                                 \
    {                                                                                                         \
        return dot_blocks(type, w, a, n, VQ_QK_K, sizeof(vq_act256), block_dot256);                           \
    }
DOT32(dot_q4_0, VQ_W_Q4_0)
DOT32(dot_q4_1, VQ_W_Q4_1)
DOT32(dot_q5_0, VQ_W_Q5_0)
DOT32(dot_q5_1, VQ_W_Q5_1)
DOT32(dot_q8_0, VQ_W_Q8_0)
DOT256(dot_q2_K, VQ_W_Q2_K)
DOT256(dot_q3_K, VQ_W_Q3_K)
DOT256(dot_q4_K, VQ_W_Q4_K)
DOT256(dot_q5_K, VQ_W_Q5_K)
DOT256(dot_q6_K, VQ_W_Q6_K)

/* rows of plain floats: 4-byte f32 or 2-byte f16/bf16 elements (inlined
 * with a constant converter) */
static inline float dot_plain(const void *w, const void *act, size_t n, size_t esz, float (*to_f32)(const uint8_t *))
{
    const float *x = act;
    const uint8_t *p = w;
    float acc = 0.0f;
    for (size_t i = 0; i < n; i++)
        acc += to_f32(p + esz * i) * x[i];
    return acc;
}

static inline float ld_f32(const uint8_t *p) { return vq_get_f32(p); }
static inline float ld_f16(const uint8_t *p) { return vq_fp16_to_fp32(vq_get_u16(p)); }
static inline float ld_bf16(const uint8_t *p) { return vq_bf16_to_fp32(vq_get_u16(p)); }

static float dot_f32(const void *w, const void *act, size_t n) { return dot_plain(w, act, n, 4, ld_f32); }
static float dot_f16(const void *w, const void *act, size_t n) { return dot_plain(w, act, n, 2, ld_f16); }
static float dot_bf16(const void *w, const void *act, size_t n) { return dot_plain(w, act, n, 2, ld_bf16); }

vq_dot_kernel vq_dot_scalar_kernel(vq_wtype t)
{
    switch (t) {
        VQ_DOT_FLOAT_TYPES(VQ_DOT_CASE)
        VQ_DOT_Q32_TYPES(VQ_DOT_CASE)
        VQ_DOT_QK_TYPES(VQ_DOT_CASE)
    default: return NULL;
    }
}
