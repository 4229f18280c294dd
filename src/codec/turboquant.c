/* turboquant.c -- the TurboQuant family (Zandieh et al., "TurboQuant:
 * Online Vector Quantization with Near-optimal Distortion Rate", 2025):
 * normalise, randomly rotate, then quantize each rotated coordinate with a
 * Lloyd-Max quantizer for the coordinate's known distribution.
 *
 * Common steps for a vector k of D floats (D a multiple of 32):
 *   n = ||k|| (stored as fp16), u = k / n, y = R u with R = H * diag(sigma)
 *   (rotation.h: seeded +-1 diagonal, normalised Walsh-Hadamard). Each y_d
 *   is close to N(0, 1/D) for large D.
 *   Reconstruction k_hat = n * R^T y_hat; scores <q, k_hat> = n <R q, y_hat>
 *   with R q computed once in prepare_query. Keys against the float query
 *   (mse at 1-2 bits, rvq at 1 bit, prod with b-1 <= 2) are scored from
 *   float tables of R q (and S R q) made in prepare_query and stored after
 *   it (kernels/float_tables.h, kernels.h ftab_score) where the kernel
 *   table has a SIMD ftab_score (mse: where its level tables beat
 *   codes_dot, kernels.h ftab_levels); other float-query keys from their
 *   codes by codes_dot (tq_score_levels), or through the tile.
 *
 * Methods (bits b, codes packed LSB first, bitstream.h):
 *  turboquant_mse  (bits 1..4, default 2): y_hat = s1 * c1[i], c1 the b-bit
 *      Lloyd-Max centroids of N(0,1), s1 = 1/sqrt(D).
 *      layout: fp16 n | D codes of b bits.          bytes = 2 + b*D/8
 *      Options (turboquant_mse only; defaults keep the layout above):
 *      norm=8: the norm field is one byte e, a log code with 8 steps per
 *        octave: n^ = 2^((e - 128)/8) for e in 1..255 (about 1.7e-5 to
 *        6.1e4; relative error <= 4.4%), e = 0 for n = 0; codes follow at
 *        byte 1.                                  bytes = 1 + b*D/8
 *      lsq=1: the field holds the least-squares gain g = n <y, y^>/|y^|^2
 *        instead of n (the g minimising |k - g R^T y^|; same reader, same
 *        bytes); the norm's own error is not what decode needs.
 *      qbits=8 (bits 1, 2 or 4): keys scored from byte tables: per code
 *        byte the 256 sums of its 8/b coordinates' levels against R q,
 *        rounded to bytes with one step (kernels/lut8_tables.h), summed by
 *        kernels.h lut8_scan and scaled by the norm; off the float score by
 *        at most norm * (bD/8) * delta / 2. Values summed in integers:
 *        the levels rounded to int8 (step max |c1| / 127) and the
 *        attention weights times the norms rounded to int8 per block of
 *        32 tokens (kernels/lut_qaxpy.h: VNNI), off the float sums by at
 *        most lut_qaxpy.h's bound. Same layout and bytes. Values default
 *        to qbits=8 at 1, 2 and 4 bits since session 57 (tq_w8_default),
 *        keys to 0; the canonical spec of values names qbits wherever 8
 *        is its default.
 *  turboquant_rvq  (bits 1..4, default 1), as ../shared/docs/METHODS.md:
 *      stage 1 as turboquant_mse; stage 2 quantizes the residual
 *      y - y_hat1 with the b-bit Lloyd-Max quantizer of a Laplacian of
 *      scale beta = sigma_r / sqrt(2), sigma_r = sqrt(1/D) * (sqrt(3 pi)/2)
 *      * 4^-b; y_hat = y_hat1 + beta * c2[j].
 *      layout: fp16 n | D stage-1 codes (b bits) | D stage-2 codes (b bits)
 *                                                     bytes = 2 + 2*b*D/8
 *      (D=128, b=1: 34 B, 7.53x vs fp16.) Note: sigma_r follows the
 *      TurboQuant MSE bound, not the actual residual of a Lloyd-Max
 *      quantizer (for b=1 the true residual std is sqrt(1-2/pi) = 0.60/sqrt(D),
 *      sigma_r is 0.38/sqrt(D); b=2: 0.343 against 0.096); the default keeps
 *      the specified value.
 *      Option fit=1 (any bits; same layout and bytes): stage 2 is the b-bit
 *      Lloyd-Max quantizer of the residual's actual density (N(0,1/D) minus
 *      its stage-1 centroid; lloyd_max.h vq_lloyd_max_residual) at scale
 *      1/sqrt(D), tq_stage2.h.
 *      Option qbits (keys with bits=1; 0 or 4..8, default 4 since session
 *      56, as rabitq's; 0 = the float query): R q quantized uniformly to
 *      qbits-bit planes (kernels/qplanes.h), each stage's sign bits scored
 *      by popcounts against them (kernels.h signscore): a fixed query error
 *      of at most delta/2 per coordinate (delta = (max - min of R q) /
 *      (2^qbits - 1)). Same layout and bytes; the canonical spec names
 *      qbits for 1-bit keys either way.
 *  turboquant_prod (bits 2..4, default 3): TurboQuant_prod (Algorithm 2):
 *      b-1 bits of turboquant_mse, then the residual r = y - y_hat1 is
 *      sketched by QJL: z = sign(S r) with S a seeded D x D matrix of
 *      i.i.d. N(0,1) entries, and gamma = ||r|| stored as fp16;
 *      y_hat = y_hat1 + sqrt(pi/2)/D * gamma * S^T z, which makes
 *      <q, k_hat> an unbiased estimate of <q, k> (Lemma: E[<S q, sign(S r)>]
 *      = D sqrt(2/pi) <q, r>/||r||).
 *      layout: fp16 n | fp16 gamma | D codes of b-1 bits | D sign bits
 *      (bit set = +1)                                  bytes = 4 + b*D/8
 *      qbits=8 (bits 2 or 3; values only): both domains summed in
 *        integers as turboquant_mse's qbits=8 values (kernels/lut_qaxpy.h):
 *        the stage-1 levels and the signs (+-127, step 1/127) against the
 *        weights times n, resp. n * sqrt(pi/2)/D * gamma, rounded to int8
 *        per block of 32 tokens. Same layout and bytes.
 *
 * Shared state: the sign diagonal (D/8 bytes), and for turboquant_prod the
 * D x D fp32 matrix S (4*D*D bytes, regenerable from the seed but held in
 * memory). Lloyd-Max tables are computed at init (lloyd_max.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/bitstream.h"
#include "codec/codec.h"
#include "codec/halves.h"
#include "codec/lloyd_max.h"
#include "kernels/qplanes.h"
#include "codec/rotation.h"
#include "codec/tq_stage2.h"
#include "codec/vecops.h"
#include "core/fp16.h"
#include "core/io.h"
#include "core/rng.h"
#include "kernels/kernels.h"

typedef enum { TQ_MSE, TQ_RVQ, TQ_PROD } tq_variant;

typedef struct {
    tq_variant v;
    int bits;       /* the method's b */
    int b1;         /* bits of stage 1 (b, or b-1 for prod) */
    size_t off1;    /* byte offset of stage-1 codes */
    size_t off2;    /* byte offset of stage-2 codes / sign bits */
    vq_rotation r;
    vq_lloyd_max_q q1, q2;
    float s1, s2;   /* unit-density scale of stage 1 / stage 2 */
    float c1[VQ_LM_MAX_LEVELS], c2[VQ_LM_MAX_LEVELS]; /* scaled centroids */
    float qjl;      /* sqrt(pi/2)/D */
    float *S;       /* prod: D x D, row-major */
    float *St;      /* prod: S column by column (kernels/matvec.h; a working copy, not state) */
    float *tmp;     /* D floats */
    float *tmp2;    /* D floats */
    int qbits;      /* rvq, bits=1: query bit planes for popcount scores (0 = float query) */
    int scan;       /* mse keys, qbits=8: byte tables per code byte (kernels/lut8_tables.h) */
    int w8;         /* mse and prod values, qbits=8: int8 weights and levels (kernels/lut_qaxpy.h) */
    int8_t lev8[VQ_LM_MAX_LEVELS]; /* w8: c1 / lstep rounded */
    float lstep;    /* w8: max |c1| / 127 */
    float *lut;     /* scan: the float tables, 256 per code byte */
    int norm8;      /* mse, norm=8: one-byte log-coded norm field */
    float norm8_of[256]; /* norm=8: the norm of each byte (0 for 0) */
    int lsq;        /* mse, lsq=1: the field holds the least-squares gain */
    int fit;        /* rvq, fit=1: stage 2 fitted to the real residual (tq_stage2.h) */
    int fused;      /* mse / rvq keys, float query: scored from the codes (tq_score_levels) */
    int ftab;       /* mse at 1-2 bits / rvq at 1 bit / prod keys, float query: scored from float tables (tq_score_tables) */
} tq;

/* ftab: where a prepared query's tables start (floats): after R q, and
 * for prod after S R q too (its level tables first, then the sign tables
 * at tq_tables_at + tq_prod_signs_at) */
static inline size_t tq_tables_at(const tq *t, int D) { return (size_t)(t->v == TQ_PROD ? 2 : 1) * (size_t)D; }
static inline size_t tq_prod_signs_at(const tq *t, int D) { return vq_float_tables_floats((size_t)D * (size_t)t->b1); }

/* the stored gain of a token (fp16, or norm=8's log code; see the header) */
static inline float tq_norm(const tq *t, const uint8_t *blk)
{
    if (t->norm8)
        return t->norm8_of[blk[0]];
    return vq_fp16_to_fp32(vq_get_u16(blk));
}

/* tq_norm of n <= VQ_HALVES_BATCH blocks stride bytes apart */
static void tq_norms(const tq *t, const vq_kernels *k, const uint8_t *blk, size_t stride, size_t n, float *f)
{
    if (!t->norm8) {
        vq_halves_strided(k, blk, stride, n, f);
        return;
    }
    for (size_t i = 0; i < n; i++)
        f[i] = t->norm8_of[blk[i * stride]];
}

static void tq_put_norm(const tq *t, uint8_t *blk, float n)
{
    if (!t->norm8) {
        vq_put_u16(blk, vq_fp32_to_fp16(n));
        return;
    }
    if (!(n > 0.0f)) { /* 0, negative or NaN */
        blk[0] = 0;
        return;
    }
    float e = roundf(8.0f * log2f(n)) + 128.0f;
    blk[0] = (uint8_t)(e < 1.0f ? 1.0f : (e > 255.0f ? 255.0f : e));
}

/* turboquant_mse values whose default is the int8 sums (qbits=8;
 * kernels/lut_qaxpy.h): wherever qbits=8 is accepted (bits 1, 2 and 4) and both
 * SIMD twins take the rows. On the AMD Zen 4 host the int8 sums ran
 * 1.3-1.7x as fast as the float sums at 2 and 4 bits (bench_codecs, D 64
 * and 128); at 1 bit 1.1-1.2x faster at D 128 and 0.8-0.9x at D 64 in the
 * same runs, taken too so that a bit plan's layers (vbits) share one
 * arithmetic and one name. turboquant_prod's int8 sums were as fast or
 * slower: its values stay float (figures/bench/tq-values-qbits8-s57.txt) */
static int tq_w8_default(const vq_codec *c, long bits)
{
    return c->role == VQ_ROLE_VALUE && vq_lut_qaxpy_simd_shape((size_t)c->head_dim, (int)bits); /* (refuses 3 bits) */
}

static vq_status tq_init(vq_codec *c, vq_spec *spec, tq_variant v)
{
    const int D = c->head_dim;
    long bits;
    long lo = v == TQ_PROD ? 2 : 1, def = v == TQ_RVQ ? 1 : v == TQ_MSE ? 2 : 3;
    VQ_TRY(vq_spec_int(spec, "bits", def, lo, 4, &bits, c->err));
    long qbits = 0, nbits = 16, lsq = 0, fit = 0;
    int scan = 0, w8 = 0, w8_default = 0;
    if (v == TQ_MSE) {
        VQ_TRY(vq_spec_int(spec, "norm", 16, 8, 16, &nbits, c->err));
        VQ_TRY(vq_spec_int(spec, "lsq", 0, 0, 1, &lsq, c->err));
        if (nbits != 8 && nbits != 16)
            return vq_fail(c->err, VQ_ERR_INVALID_ARG, "turboquant_mse: parameter norm=%ld unsupported (8 or 16)", nbits);
        /* values: int8 sums by default (session 57) where the SIMD twins
         * take the rows (tq_w8_default) */
        w8_default = tq_w8_default(c, bits);
        long sq;
        VQ_TRY(vq_spec_int(spec, "qbits", w8_default ? 8 : 0, 0, 8, &sq, c->err));
        if (sq != 0 && (sq != 8 || bits == 3))
            return vq_fail(c->err, VQ_ERR_INVALID_ARG,
                           "turboquant_mse: parameter qbits=%ld unsupported (0, or 8 with bits 1, 2 or 4)", sq);
        scan = sq == 8 && c->role == VQ_ROLE_KEY;
        w8 = sq == 8 && c->role == VQ_ROLE_VALUE;
    }
    if (v == TQ_PROD) {
        long sq;
        VQ_TRY(vq_spec_int(spec, "qbits", 0, 0, 8, &sq, c->err));
        if (sq != 0 && (sq != 8 || bits == 4))
            return vq_fail(c->err, VQ_ERR_INVALID_ARG,
                           "turboquant_prod: parameter qbits=%ld unsupported (0, or 8 with bits 2 or 3)", sq);
        if (sq && c->role == VQ_ROLE_KEY)
            return vq_fail(c->err, VQ_ERR_INVALID_ARG,
                           "turboquant_prod: qbits=8 (int8 attention weights and levels) is for values; keys take float queries");
        w8 = sq == 8;
    }
    if (v == TQ_RVQ) {
        /* 1-bit keys: the query's bit planes by default (popcount scores) */
        VQ_TRY(vq_spec_int(spec, "qbits", bits == 1 && c->role == VQ_ROLE_KEY ? 4 : 0, 0, 8, &qbits, c->err));
        VQ_TRY(vq_spec_int(spec, "fit", 0, 0, 1, &fit, c->err));
        if (qbits != 0 && (qbits < 4 || bits != 1))
            return vq_fail(c->err, VQ_ERR_INVALID_ARG,
                           "turboquant_rvq: parameter qbits=%ld unsupported (0, or 4..8 with bits=1)", qbits);
    }
    tq *t = calloc(1, sizeof *t);
    if (!t)
        return vq_fail(c->err, VQ_ERR_NOMEM, "%s: out of memory", c->ops->name);
    c->impl = t;
    t->v = v;
    t->bits = (int)bits;
    t->qbits = (int)qbits;
    t->norm8 = nbits == 8;
    for (int e = 0; e < 256; e++) /* n^ = 2^((e - 128)/8), e = 0 for n = 0 */
        t->norm8_of[e] = e ? exp2f((float)(e - 128) * 0.125f) : 0.0f;
    t->lsq = (int)lsq;
    t->scan = scan;
    t->w8 = w8;
    t->fit = (int)fit;
    t->b1 = v == TQ_PROD ? t->bits - 1 : t->bits;
    t->tmp = calloc((size_t)D, sizeof(float));
    t->tmp2 = calloc((size_t)D, sizeof(float));
    if (!t->tmp || !t->tmp2)
        return vq_fail(c->err, VQ_ERR_NOMEM, "%s: out of memory", c->ops->name);
    if (vq_rot_init(&t->r, D, c->seed) != 0)
        return vq_fail(c->err, VQ_ERR_UNSUPPORTED, "%s: head_dim %d cannot be rotated", c->ops->name, D);
    vq_lloyd_max(VQ_LM_GAUSSIAN, t->b1, &t->q1);
    t->s1 = 1.0f / sqrtf((float)D);
    for (int i = 0; i < t->q1.levels; i++)
        t->c1[i] = t->s1 * t->q1.centroid[i];
    if (v == TQ_RVQ) {
        t->s2 = vq_tq_stage2(D, t->bits, t->fit, &t->q2);
        for (int i = 0; i < t->q2.levels; i++)
            t->c2[i] = t->s2 * t->q2.centroid[i];
    }
    size_t codes1 = (size_t)t->b1 * D / 8;
    c->block_tokens = 1;
    c->shared_bytes = vq_rot_shared_bytes(&t->r);
    c->query_bytes = sizeof(float) * (size_t)D;
    c->accum_size = (size_t)D;
    if (v == TQ_MSE) {
        t->off1 = t->norm8 ? 1 : 2;
        c->block_bytes = t->off1 + codes1;
    } else if (v == TQ_RVQ) {
        t->off1 = 2;
        t->off2 = 2 + codes1;
        c->block_bytes = 2 + 2 * codes1;
    } else {
        t->off1 = 4;
        t->off2 = 4 + codes1;
        c->block_bytes = 4 + codes1 + (size_t)D / 8;
        t->qjl = sqrtf((float)M_PI / 2.0f) / (float)D;
        t->S = malloc(sizeof(float) * (size_t)D * D);
        t->St = malloc(sizeof(float) * (size_t)D * D);
        if (!t->S || !t->St)
            return vq_fail(c->err, VQ_ERR_NOMEM, "%s: out of memory", c->ops->name);
        vq_rng g;
        vq_rng_seed(&g, vq_seed_mix(c->seed, 0x716a6c73u /* "qjls" */));
        for (size_t i = 0; i < (size_t)D * D; i++)
            t->S[i] = vq_rng_normal(&g);
        vq_transpose(t->S, (size_t)D, (size_t)D, t->St);
        c->shared_bytes += sizeof(float) * (size_t)D * D;
        c->query_bytes = 2 * sizeof(float) * (size_t)D; /* R q, then S R q */
        c->accum_size = 2 * (size_t)D;                  /* rotated, sketch */
    }
    /* values: mse and rvq sum their code levels in registers (kernels.h
     * lut_axpy) where the table has a SIMD twin, prod its two domains so
     * (tq_accumulate_prod); else through the tile */
    c->accum_own = c->role == VQ_ROLE_VALUE && vq_kernels_get()->lut_axpy != vq_lut_axpy_ref;
    if (t->w8) { /* always the int8 sums, on every instruction set */
        vq_lut_qaxpy_levels(t->c1, t->q1.levels, t->lev8, &t->lstep);
        c->accum_own = 1;
        c->value_head = vq_block_lead(c->block_bytes);
    }
    if (t->scan) { /* the codes' bytes scored from byte tables */
        const int M = t->bits * D / 8;
        c->query_bytes = vq_lut8_tables_size(M);
        c->score_own = 1;
        if (!(t->lut = malloc(sizeof(float) * 256 * (size_t)M)))
            return vq_fail(c->err, VQ_ERR_NOMEM, "%s: out of memory", c->ops->name);
    }
    /* keys against the float query, their codes scored from the query's
     * float tables (kernels/float_tables.h), after the query in its buffer,
     * where the kernel table has a SIMD ftab_score: rvq at 1 bit (both
     * stages' levels symmetric, c[0] = -c[1]) and prod's sign bits by sign
     * tables, mse at 1 and 2 bits with the fp16 gain by level tables (where
     * those beat codes_dot: kernels.h ftab_levels) */
    const vq_kernels *kt = vq_kernels_get();
    if (c->role == VQ_ROLE_KEY && !t->scan && !t->qbits && D % 32 == 0 && kt->ftab_score != vq_ftab_score_ref &&
        ((v == TQ_PROD && t->b1 <= 2) || (v == TQ_RVQ && t->bits == 1 && t->c1[0] == -t->c1[1] && t->c2[0] == -t->c2[1]) ||
         (v == TQ_MSE && !t->norm8 && t->bits <= 2 && kt->ftab_levels))) {
        t->ftab = c->score_own = 1;
        /* mse: level tables; rvq: sign tables; prod: both */
        const size_t level_bits = v == TQ_RVQ ? 0 : (size_t)D * (size_t)t->b1, sign_bits = v == TQ_MSE ? 0 : (size_t)D;
        c->query_bytes += sizeof(float) * (vq_float_tables_floats(level_bits) + vq_float_tables_floats(sign_bits));
    }
    /* other mse / rvq keys with the float query: scored from the codes
     * where the kernel table has a SIMD codes_dot (else through the tile) */
    if (c->role == VQ_ROLE_KEY && v != TQ_PROD && !t->ftab && !t->scan && !t->qbits && D % 16 == 0 &&
        vq_kernels_get()->codes_dot != vq_codes_dot_ref)
        t->fused = c->score_own = 1;
    if (t->qbits) {
        c->query_bytes = vq_qplanes_bytes(D, t->qbits);
        c->score_own = 1;
        snprintf(c->canon, sizeof c->canon, "%s:bits=%d,qbits=%d%s", c->ops->name, t->bits, t->qbits,
                 t->fit ? ",fit=1" : "");
    } else {
        int o = snprintf(c->canon, sizeof c->canon, "%s:bits=%d", c->ops->name, t->bits);
        if (t->norm8 && o > 0 && (size_t)o < sizeof c->canon)
            o += snprintf(c->canon + o, sizeof c->canon - (size_t)o, ",norm=8");
        if (t->lsq && o > 0 && (size_t)o < sizeof c->canon)
            o += snprintf(c->canon + o, sizeof c->canon - (size_t)o, ",lsq=1");
        /* qbits=8 named; qbits=0 too where 8 is the default (mse values) */
        if ((t->scan || t->w8 || w8_default) && o > 0 && (size_t)o < sizeof c->canon)
            o += snprintf(c->canon + o, sizeof c->canon - (size_t)o, ",qbits=%d", t->scan || t->w8 ? 8 : 0);
        if (v == TQ_RVQ && t->bits == 1 && c->role == VQ_ROLE_KEY && o > 0 && (size_t)o < sizeof c->canon)
            o += snprintf(c->canon + o, sizeof c->canon - (size_t)o, ",qbits=0"); /* (its default is 4) */
        if (t->fit && o > 0 && (size_t)o < sizeof c->canon)
            snprintf(c->canon + o, sizeof c->canon - (size_t)o, ",fit=1");
    }
    return VQ_OK;
}

static vq_status mse_init(vq_codec *c, vq_spec *s) { return tq_init(c, s, TQ_MSE); }
static vq_status rvq_init(vq_codec *c, vq_spec *s) { return tq_init(c, s, TQ_RVQ); }
static vq_status prod_init(vq_codec *c, vq_spec *s) { return tq_init(c, s, TQ_PROD); }

static void tq_destroy(vq_codec *c)
{
    tq *t = c->impl;
    if (t) {
        free(t->tmp);
        free(t->tmp2);
        free(t->S);
        free(t->St);
        free(t->lut);
    }
    free(t);
    c->impl = NULL;
}

/* y <- S x  (D x D) */
/* rotated-domain reconstruction without norm (and without the QJL part) */
static void stage_values(const tq *t, const uint8_t *blk, int D, float *yh)
{
    uint8_t idx[256]; /* D <= 256 (vq_codec_create) */
    vq_bits_unpack(blk + t->off1, (size_t)D, t->b1, idx);
    for (int d = 0; d < D; d++)
        yh[d] = t->c1[idx[d]];
    if (t->v == TQ_RVQ) {
        vq_bits_unpack(blk + t->off2, (size_t)D, t->bits, idx);
        for (int d = 0; d < D; d++)
            yh[d] += t->c2[idx[d]];
    }
}

static void tq_encode(vq_codec *c, const float *x, size_t n, uint8_t *dst)
{
    tq *t = c->impl;
    const int D = c->head_dim;
    float *y = t->tmp, *r = t->tmp2;
    for (size_t i = 0; i < n; i++) {
        const float *k = x + i * (size_t)D;
        uint8_t *blk = dst + i * c->block_bytes;
        memset(blk, 0, c->block_bytes);
        float norm = vq_vec_norm(k, (size_t)D);
        float inv = norm > 0.0f ? 1.0f / norm : 0.0f;
        for (int d = 0; d < D; d++)
            y[d] = k[d] * inv;
        vq_rot_forward(&t->r, y);
        double yq = 0.0, qq = 0.0; /* <y, y^>, |y^|^2 (lsq=1) */
        for (int d = 0; d < D; d++) {
            int j = vq_lm_index(&t->q1, y[d] / t->s1);
            vq_bits_put(blk + t->off1, (size_t)d, t->b1, (unsigned)j);
            r[d] = y[d] - t->c1[j];
            if (t->lsq) {
                yq += (double)y[d] * t->c1[j];
                qq += (double)t->c1[j] * t->c1[j];
            }
        }
        tq_put_norm(t, blk, t->lsq && qq > 0.0 ? (float)((double)norm * yq / qq) : norm);
        if (t->v == TQ_RVQ) {
            for (int d = 0; d < D; d++) {
                int j = vq_lm_index(&t->q2, r[d] / t->s2);
                vq_bits_put(blk + t->off2, (size_t)d, t->bits, (unsigned)j);
            }
        } else if (t->v == TQ_PROD) {
            double g = 0.0;
            for (int d = 0; d < D; d++)
                g += (double)r[d] * r[d];
            vq_put_u16(blk + 2, vq_fp32_to_fp16((float)sqrt(g)));
            /* y is free now; each sum in index order: the same signs on every CPU */
            vq_kernels_get()->ordered_matvec(t->St, (size_t)D, (size_t)D, r, y);
            for (int d = 0; d < D; d++)
                if (y[d] >= 0.0f)
                    vq_bits_put(blk + t->off2, (size_t)d, 1, 1);
        }
    }
}

static inline float sign_bit(const uint8_t *bits, int d) { return vq_bits_get(bits, (size_t)d, 1) ? 1.0f : -1.0f; }

static void tq_decode_token(vq_codec *c, const uint8_t *blk, float *k)
{
    tq *t = c->impl;
    const int D = c->head_dim;
    stage_values(t, blk, D, k);
    if (t->v == TQ_PROD) {
        float g = t->qjl * vq_fp16_to_fp32(vq_get_u16(blk + 2));
        const uint8_t *z = blk + t->off2;
        for (int e = 0; e < D; e++) { /* k += g * S^T z */
            float ze = g * sign_bit(z, e);
            const float *row = t->S + (size_t)e * D;
            for (int d = 0; d < D; d++)
                k[d] += ze * row[d];
        }
    }
    vq_rot_inverse(&t->r, k);
    float norm = tq_norm(t, blk);
    for (int d = 0; d < D; d++)
        k[d] *= norm;
}

static void tq_decode(vq_codec *c, const uint8_t *src, size_t n, float *x)
{
    vq_codec_decode_each(c, src, n, x, tq_decode_token);
}

/* mse, qbits=8: per code byte m (the 8/b codes of coordinates m*8/b..),
 * the float table lut[m][x] = sum_i y_(m*8/b + i) c1[code i of x], as the
 * sum of two 16-entry tables of its low and high nibble (each half's
 * products summed in coordinate order), then rounded to bytes
 * (kernels/lut8_tables.h) */
static void tq_scan_tables(tq *t, const float *y, int D, uint8_t *qbuf)
{
    const int b = t->bits, cpb = 8 / b, M = b * D / 8, half = cpb / 2;
    const unsigned mask = (1u << b) - 1u;
    for (int m = 0; m < M; m++) {
        float A[16], B[16];
        const float *ym = y + m * cpb;
        for (unsigned x = 0; x < 16; x++) {
            float a = 0.0f, bb = 0.0f;
            for (int i = 0; i < half; i++) {
                a += ym[i] * t->c1[(x >> (b * i)) & mask];
                bb += ym[half + i] * t->c1[(x >> (b * i)) & mask];
            }
            A[x] = a, B[x] = bb;
        }
        float *l = t->lut + (size_t)m * 256;
        for (unsigned hi = 0; hi < 16; hi++) /* constant trip counts: vector adds */
            for (unsigned lo = 0; lo < 16; lo++)
                l[16 * hi + lo] = A[lo] + B[hi];
    }
    vq_kernels_get()->lut8_tables(t->lut, M, qbuf);
}

static void tq_prepare_query(vq_codec *c, const float *q, uint8_t *qbuf)
{
    tq *t = c->impl;
    const int D = c->head_dim;
    if (t->scan) {
        memcpy(t->tmp, q, sizeof(float) * (size_t)D);
        vq_rot_forward(&t->r, t->tmp);
        tq_scan_tables(t, t->tmp, D, qbuf);
        return;
    }
    if (t->qbits) { /* bit planes of R q (qplanes.h) */
        memcpy(t->tmp, q, sizeof(float) * (size_t)D);
        vq_rot_forward(&t->r, t->tmp);
        vq_qplanes_encode(t->tmp, D, t->qbits, qbuf);
        return;
    }
    float *y = (float *)(void *)qbuf;
    memcpy(y, q, sizeof(float) * (size_t)D);
    vq_rot_forward(&t->r, y);
    if (t->v == TQ_PROD) /* S y by the kernel table's dense_dot (keys keep ordered_matvec's CPU-independent bits) */
        vq_kernels_get()->dense_dot(y, (size_t)D, 1, t->S, VQ_ELEM_F32, (size_t)D, (size_t)D, y + D, (size_t)D);
    if (!t->ftab)
        return;
    float *tab = y + tq_tables_at(t, D);
    if (t->v != TQ_RVQ) /* mse, prod's first stage: level tables of R q */
        vq_kernels_get()->level_tables(y, (size_t)D, t->b1, t->c1, t->c1, 0, tab);
    if (t->v == TQ_RVQ) /* both stages' sign bits against R q */
        vq_kernels_get()->sign_tables(y, (size_t)D, tab);
    else if (t->v == TQ_PROD) /* the sketch's sign bits against S R q */
        vq_kernels_get()->sign_tables(y + D, (size_t)D, tab + tq_prod_signs_at(t, D));
}

/* rvq, bits=1, quantized query: both stages are sign codes with symmetric
 * levels (c[0] = -c[1]), so <R q', y_hat> = c1[1] <q', s1> + c2[1] <q', s2>
 * with each <q', s> from popcounts (kernels.h signscore, qplanes.h) */
static void tq_score_bits(vq_codec *c, const uint8_t *qbuf, int n_q, const uint8_t *codes, size_t n, float *scores)
{
    enum { QRY = 16 };
    tq *t = c->impl;
    const int D = c->head_dim;
    const vq_kernels *k = vq_kernels_get();
    const size_t offs[2] = { t->off1, t->off2 };
    const float w[2] = { t->c1[1], t->c2[1] };
    float qc[3 * QRY];
    for (int j0 = 0; j0 < n_q; j0 += QRY) {
        const int nj = n_q - j0 < QRY ? n_q - j0 : QRY;
        const uint8_t *qb0 = qbuf + (size_t)j0 * c->query_bytes;
        for (int j = 0; j < nj; j++)
            vq_qplanes_score_consts(qb0 + (size_t)j * c->query_bytes, D, w[0] + w[1], qc + 3 * j);
        /* the factor: the fp16 norm at byte 0 (rvq has no norm=8) */
        k->signscore(codes, c->block_bytes, n, (size_t)D, offs, w, 2, NULL, 0, qb0 + 12, c->query_bytes, qc, nj,
                     t->qbits, scores + (size_t)j0 * n, n);
    }
}

/* keys against the float query from its float tables (ftab; kernels.h
 * ftab_score): mse norm_i A(c_i) (level tables); rvq norm_i (c1[1] A(a_i)
 * + c2[1] A(b_i)) (sign tables, the stages' levels being +-c[1]); prod
 * norm_i A(a_i) + (norm_i gamma_i) (sqrt(pi/2)/D A'(z_i)) (level tables of
 * R q, sign tables of S R q, the second pass with the products norm *
 * gamma as factors; both passes TOK tokens at a time) */
static void tq_score_tables(vq_codec *c, const uint8_t *qbuf, int n_q, const uint8_t *codes, size_t n,
                            float *scores)
{
    enum { TOK = VQ_HALVES_BATCH, QRY = 16 };
    const tq *t = c->impl;
    const size_t D = (size_t)c->head_dim, qstride = c->query_bytes / sizeof(float), bb = c->block_bytes;
    const float *tabs = (const float *)(const void *)qbuf + tq_tables_at(t, c->head_dim);
    const vq_kernels *k = vq_kernels_get();
    if (t->v == TQ_RVQ) { /* the fp16 norm at byte 0 is the kernel's factor */
        const size_t offs[2] = { t->off1, t->off2 };
        const float w[2] = { t->c1[1], t->c2[1] };
        k->ftab_score(codes, bb, n, D, offs, w, 2, NULL, 0, tabs, qstride, n_q, scores, n);
        return;
    }
    const float one = 1.0f; /* mse, prod's first stage: the fp16 gain at byte 0 is the factor */
    if (t->v == TQ_MSE) {
        k->ftab_score(codes, bb, n, D * (size_t)t->b1, &t->off1, &one, 1, NULL, 0, tabs, qstride, n_q, scores, n);
        return;
    }
    float f[TOK], g[TOK], p[QRY * TOK];
    for (size_t i0 = 0; i0 < n; i0 += TOK) { /* prod: both passes over a batch while its rows are near */
        const size_t nt = n - i0 < TOK ? n - i0 : TOK;
        const uint8_t *blk = codes + i0 * bb;
        k->ftab_score(blk, bb, nt, D * (size_t)t->b1, &t->off1, &one, 1, NULL, 0, tabs, qstride, n_q, scores + i0, n);
        tq_norms(t, k, blk, bb, nt, f);
        vq_halves_strided(k, blk + 2, bb, nt, g); /* gamma: the fp16 at byte 2 */
        for (size_t i = 0; i < nt; i++)
            f[i] = f[i] * g[i];
        for (int j0 = 0; j0 < n_q; j0 += QRY) {
            const int nj = n_q - j0 < QRY ? n_q - j0 : QRY;
            k->ftab_score(blk, bb, nt, D, &t->off2, &t->qjl, 1, f, 0,
                          tabs + tq_prod_signs_at(t, c->head_dim) + (size_t)j0 * qstride, qstride, nj, p, TOK);
            for (int j = 0; j < nj; j++)
                for (size_t i = 0; i < nt; i++)
                    scores[(size_t)(j0 + j) * n + i0 + i] += p[(size_t)j * TOK + i];
        }
    }
}

/* mse / rvq keys against the float (rotated) query: norm_i * (sum_e y_e
 * c1[a_ie] (+ sum_e y_e c2[b_ie])), the level sums by kernels.h codes_dot
 * over the codes (rvq at 1 bit: norm_i * sum_e y_e (c1[a_ie] + c2[b_ie])
 * by codes_dot_pair, one pass), batches of TOK tokens and QRY queries */
static void tq_score_levels(vq_codec *c, const uint8_t *qbuf, int n_q, const uint8_t *codes, size_t n,
                            float *scores)
{
    enum { TOK = 64, QRY = 16 };
    const tq *t = c->impl;
    const size_t D = (size_t)c->head_dim, qstride = c->query_bytes / sizeof(float), bb = c->block_bytes;
    const float *qs = (const float *)(const void *)qbuf;
    const vq_kernels *k = vq_kernels_get();
    float f[TOK], s2[QRY * TOK];
    _Static_assert(TOK <= VQ_HALVES_BATCH, "tq_norms' batch");
    /* rvq at 1 bit: the levels of the code pairs, c1[a] + c2[b] (index a + 2b) */
    const int pair1 = t->v == TQ_RVQ && t->bits == 1;
    const float lut4[4] = { t->c1[0] + t->c2[0], t->c1[1] + t->c2[0], t->c1[0] + t->c2[1], t->c1[1] + t->c2[1] };
    for (size_t i0 = 0; i0 < n; i0 += TOK) {
        const size_t nt = n - i0 < TOK ? n - i0 : TOK;
        const uint8_t *blk = codes + i0 * bb;
        tq_norms(t, k, blk, bb, nt, f);
        for (int j0 = 0; j0 < n_q; j0 += QRY) {
            const int nj = n_q - j0 < QRY ? n_q - j0 : QRY;
            float *out = scores + (size_t)j0 * n + i0;
            if (pair1) { /* both stages in one pass (kernels.h codes_dot_pair) */
                k->codes_dot_pair(blk + t->off1, bb, t->off2 - t->off1, nt, D, lut4, qs + (size_t)j0 * qstride,
                                  qstride, nj, out, n);
                for (int j = 0; j < nj; j++)
                    for (size_t i = 0; i < nt; i++)
                        out[(size_t)j * n + i] *= f[i];
                continue;
            }
            k->codes_dot(blk + t->off1, bb, t->b1, nt, D, t->c1, qs + (size_t)j0 * qstride, qstride, nj, out, n);
            if (t->v == TQ_RVQ)
                k->codes_dot(blk + t->off2, bb, t->bits, nt, D, t->c2, qs + (size_t)j0 * qstride, qstride, nj, s2,
                             TOK);
            for (int j = 0; j < nj; j++)
                for (size_t i = 0; i < nt; i++)
                    out[(size_t)j * n + i] =
                        f[i] * (t->v == TQ_RVQ ? out[(size_t)j * n + i] + s2[(size_t)j * TOK + i] : out[(size_t)j * n + i]);
        }
    }
}

static void tq_score(vq_codec *c, const uint8_t *qbuf, int n_q, const uint8_t *codes, size_t n, float *scores)
{
    tq *t = c->impl;
    if (t->ftab) {
        tq_score_tables(c, qbuf, n_q, codes, n, scores);
        return;
    }
    if (t->fused) {
        tq_score_levels(c, qbuf, n_q, codes, n, scores);
        return;
    }
    if (t->qbits) {
        tq_score_bits(c, qbuf, n_q, codes, n, scores);
        return;
    }
    if (t->scan) { /* norm * (bias + delta sum_m T[m][byte m]): kernels.h lut8_scan */
        vq_kernels_get()->lut8_scan(codes + t->off1, c->block_bytes, n, (size_t)(t->bits * c->head_dim / 8), qbuf,
                                    c->query_bytes, n_q, scores, n);
        for (size_t i = 0; i < n; i++) {
            const float norm = tq_norm(t, codes + i * c->block_bytes);
            for (int j = 0; j < n_q; j++)
                scores[(size_t)j * n + i] *= norm;
        }
        return;
    }
    const int D = c->head_dim;
    const size_t qstride = c->query_bytes / sizeof(float);
    const float *qs = (const float *)(const void *)qbuf;
    float *yh = t->tmp;
    for (size_t i = 0; i < n; i++) {
        const uint8_t *blk = codes + i * c->block_bytes;
        float norm = tq_norm(t, blk);
        stage_values(t, blk, D, yh); /* codes unpacked once for all queries */
        for (int j = 0; j < n_q; j++) {
            const float *y = qs + (size_t)j * qstride;
            float s = vq_vec_dot(y, yh, (size_t)D);
            if (t->v == TQ_PROD) {
                const uint8_t *z = blk + t->off2;
                const float *sy = y + D;
                float p = 0.0f;
                for (int d = 0; d < D; d++)
                    p += sign_bit(z, d) * sy[d];
                s += t->qjl * vq_fp16_to_fp32(vq_get_u16(blk + 2)) * p;
            }
            scores[(size_t)j * n + i] = norm * s;
        }
    }
}

/* mse and rvq values: kernels.h lut_axpy over the stages' levels, the norm
 * as the factor (its fp16 field, or the norm=8 byte decoded per token) */
static void tq_accumulate_levels(vq_codec *c, const float *w, int n_q, const uint8_t *codes, size_t n, float *acc)
{
    tq *t = c->impl;
    if (t->w8) { /* int8 weights and levels; norm=8's byte decoded by the kernel, fp16 norms here */
        enum { TOKQ = 8 * VQ_HALVES_BATCH };
        float fq[TOKQ];
        const vq_kernels *k = vq_kernels_get();
        const size_t bb = c->block_bytes;
        for (size_t i0 = 0; i0 < n; i0 += TOKQ) {
            const size_t nt = n - i0 < TOKQ ? n - i0 : TOKQ;
            if (!t->norm8)
                for (size_t h = 0; h < nt; h += VQ_HALVES_BATCH)
                    tq_norms(t, k, codes + (i0 + h) * bb, bb, nt - h < VQ_HALVES_BATCH ? nt - h : VQ_HALVES_BATCH,
                             fq + h);
            k->lut_qaxpy(codes + i0 * bb + t->off1, bb, nt, (size_t)c->head_dim, t->bits, t->lev8, t->lstep,
                         t->norm8 ? NULL : fq, t->norm8_of, -(ptrdiff_t)t->off1, w + i0, n, n_q, acc,
                         c->accum_size);
        }
        return;
    }
    enum { TOK = 64 };
    const size_t D = (size_t)c->head_dim, L = (size_t)1 << t->bits;
    const vq_kernels *k = vq_kernels_get();
    const size_t offs[2] = { t->off1, t->off2 };
    const int sets = t->v == TQ_RVQ ? 2 : 1;
    float lut[2 * VQ_LM_MAX_LEVELS], f[TOK];
    memcpy(lut, t->c1, L * sizeof *lut);
    memcpy(lut + L, t->c2, L * sizeof *lut);
    if (!t->norm8) {
        k->lut_axpy(codes, c->block_bytes, n, D, offs, t->bits, lut, sets, NULL, 0, w, n, n_q, acc, c->accum_size);
        return;
    }
    for (size_t i0 = 0; i0 < n; i0 += TOK) {
        const size_t nt = n - i0 < TOK ? n - i0 : TOK;
        tq_norms(t, k, codes + i0 * c->block_bytes, c->block_bytes, nt, f);
        k->lut_axpy(codes + i0 * c->block_bytes, c->block_bytes, nt, D, offs, t->bits, lut, sets, f, 0, w + i0, n, n_q,
                    acc, c->accum_size);
    }
}

/* turboquant_prod's values in their two domains (accum_size 2D, the
 * tile's layout): the stage-1 levels times the norm into [0, D) and the
 * sign bits times g = norm * qjl * |r| into the sketch half [D, 2D), each
 * by the kernel table's lut_axpy; tq_finish applies S^T and R^T once per
 * query. (Before session 51 every token's 2D floats went through the tile:
 * 39.5 ns a token at D 64 with 3 queries on one core, fp16's 4.6.) */
static void tq_accumulate_prod(vq_codec *c, const float *w, int n_q, const uint8_t *codes, size_t n, float *acc)
{
    enum { TOK = 8 * VQ_HALVES_BATCH };
    tq *t = c->impl;
    const size_t D = (size_t)c->head_dim, bb = c->block_bytes, E = c->accum_size;
    const vq_kernels *k = vq_kernels_get();
    const float pm[2] = { -1.0f, 1.0f };
    static const int8_t pm8[2] = { -127, 127 };
    float f[TOK], g[TOK];
    /* w8: blocks of 32 rows share a weight scale, so longer calls; the
     * float sums take a row stretch that stays in L1 over its passes */
    const size_t tok = t->w8 ? TOK : VQ_HALVES_BATCH;
    for (size_t i0 = 0; i0 < n; i0 += tok) {
        const size_t nt = n - i0 < tok ? n - i0 : tok;
        const uint8_t *blk = codes + i0 * bb;
        for (size_t h = 0; h < nt; h += VQ_HALVES_BATCH)
            tq_norms(t, k, blk + h * bb, bb, nt - h < VQ_HALVES_BATCH ? nt - h : VQ_HALVES_BATCH, f + h);
        for (size_t i = 0; i < nt; i++)
            g[i] = f[i] * t->qjl * vq_fp16_to_fp32(vq_get_u16(blk + i * bb + 2));
        if (t->w8) { /* int8 weights and levels (the signs +-127 at step 1/127), on every instruction set */
            k->lut_qaxpy(blk + t->off1, bb, nt, D, t->b1, t->lev8, t->lstep, f, NULL, 0, w + i0, n, n_q, acc, E);
            k->lut_qaxpy(blk + t->off2, bb, nt, D, 1, pm8, 1.0f / 127.0f, g, NULL, 0, w + i0, n, n_q, acc + D, E);
            continue;
        }
        k->lut_axpy(blk, bb, nt, D, &t->off1, t->b1, t->c1, 1, f, 0, w + i0, n, n_q, acc, E);
        k->lut_axpy(blk, bb, nt, D, &t->off2, 1, pm, 1, g, 0, w + i0, n, n_q, acc + D, E);
    }
}

static void tq_accumulate(vq_codec *c, const float *w, int n_q, const uint8_t *codes, size_t n, float *acc)
{
    tq *t = c->impl;
    const int D = c->head_dim;
    if (t->v != TQ_PROD) {
        tq_accumulate_levels(c, w, n_q, codes, n, acc);
        return;
    }
    if (c->accum_own) {
        tq_accumulate_prod(c, w, n_q, codes, n, acc);
        return;
    }
    float *yh = t->tmp;
    for (size_t i = 0; i < n; i++) {
        const uint8_t *blk = codes + i * c->block_bytes;
        float norm = tq_norm(t, blk);
        stage_values(t, blk, D, yh);
        for (int j = 0; j < n_q; j++) {
            float wn = w[(size_t)j * n + i] * norm;
            float *a = acc + (size_t)j * c->accum_size;
            vq_vec_axpy(wn, yh, (size_t)D, a);
            if (t->v == TQ_PROD) {
                float g = wn * t->qjl * vq_fp16_to_fp32(vq_get_u16(blk + 2));
                const uint8_t *z = blk + t->off2;
                for (int d = 0; d < D; d++)
                    a[D + d] += g * sign_bit(z, d);
            }
        }
    }
}

/* accum-domain vectors: n * y_hat (rotated domain), and for turboquant_prod
 * n * qjl * gamma * z after it, matching the query layout [R q, S R q];
 * each stage's levels scaled by n (kernels.h lut_row: n*c1[i] + n*c2[j],
 * which rounds differently from the reference's n*(c1[i] + c2[j])) */
static void tq_values(vq_codec *c, const uint8_t *codes, size_t n, float *out)
{
    tq *t = c->impl;
    const int D = c->head_dim;
    const vq_kernels *k = vq_kernels_get();
    for (size_t i = 0; i < n; i++) {
        const uint8_t *blk = codes + i * c->block_bytes;
        float *o = out + i * c->accum_size, norm = tq_norm(t, blk);
        k->lut_row(blk + t->off1, t->b1, (size_t)D, t->c1, norm, 0, o);
        if (t->v == TQ_RVQ)
            k->lut_row(blk + t->off2, t->bits, (size_t)D, t->c2, norm, 1, o);
        if (t->v == TQ_PROD) {
            float g = norm * t->qjl * vq_fp16_to_fp32(vq_get_u16(blk + 2));
            const float pm[2] = { -1.0f, 1.0f };
            k->lut_row(blk + t->off2, 1, (size_t)D, pm, g, 0, o + D);
        }
    }
}

static void tq_finish(vq_codec *c, const float *acc, float *out)
{
    tq *t = c->impl;
    const int D = c->head_dim;
    memcpy(out, acc, sizeof(float) * (size_t)D);
    if (t->v == TQ_PROD) /* out += S^T acc_sketch */
        for (int e = 0; e < D; e++) {
            const float *row = t->S + (size_t)e * D;
            float a = acc[D + e];
            for (int d = 0; d < D; d++)
                out[d] += a * row[d];
        }
    vq_rot_inverse(&t->r, out);
}

#define TQ_OPS(ident, nm, defspec, initfn)                                                         \
    const vq_codec_ops ident = {                                                                   \
        .name = nm, .default_spec = defspec, .init = initfn, .destroy = tq_destroy,                \
        .encode = tq_encode, .decode = tq_decode, .prepare_query = tq_prepare_query,               \
        .score = tq_score, .accumulate = tq_accumulate, .accum_finish = tq_finish,                 \
        .values = tq_values, .dot_query = 1,                                                       \
    }

TQ_OPS(vq_codec_turboquant_rvq_ops, "turboquant_rvq", "turboquant_rvq:bits=1", rvq_init);
TQ_OPS(vq_codec_turboquant_mse_ops, "turboquant_mse", "turboquant_mse:bits=2", mse_init);
TQ_OPS(vq_codec_turboquant_prod_ops, "turboquant_prod", "turboquant_prod:bits=3", prod_init);
