/* rabitq.c -- `rabitq`: RaBitQ (Gao & Long, "RaBitQ: Quantizing
 * High-Dimensional Vectors with a Theoretical Error Bound for Approximate
 * Nearest Neighbor Search", SIGMOD 2024) and, for bits 2..4, extended
 * RaBitQ (Gao et al., "Practical and Asymptotically Optimal Quantization of
 * High-Dimensional Vectors in Euclidean Space for Approximate Nearest
 * Neighbor Search", 2024).
 *
 * Parameters: bits b in 1..4 (default 1); qbits in {0, 4..8}: bits of the
 * quantized query for the popcount kernel (default 4, as in the paper;
 * only with bits=1), 0 = float query (the reference estimator); mse 0|1
 * (default 0): 1 stores ||k|| corr^2 in the norm field, so every decoder
 * and kernel below (they read ||k|| / corr) reconstructs
 * k_hat = ||k|| corr R^T x_bar, the least-squares point on the code's line
 * instead of the unbiased one (see "Estimator").
 *
 * Encode k (no centroid: keys are quantized around 0):
 *   o = k/||k||, y = R o (rotation.h: seeded signs + normalised Hadamard).
 *   Codes u_d in [0, 2^b - 1], c_d = 2 u_d - (2^b - 1) (odd integers);
 *   x_bar = c/||c|| is the quantized unit vector.
 *     b = 1: c = sign(y).
 *     b >= 2: c_d = clamp(nearest odd integer to t*y_d, +-(2^b-1)), with the
 *       rescale factor t chosen from a grid of 64 values to maximise
 *       <x_bar, y> (the per-vector rescaling of extended RaBitQ; the paper
 *       enumerates all critical t exactly, the grid is within a fraction of
 *       a percent of it).
 *   corr = <x_bar, y> in (0, 1].
 *   layout: fp16 ||k|| | fp16 corr | D codes of b bits, LSB first
 *                                                   bytes = 4 + b*D/8
 *   (D=128: b=1 20 B (12.8x), b=2 36 B, b=4 68 B)
 * Estimator: <q, k> ~ ||k|| <x_bar, R q> / corr, unbiased over the random
 * rotation (RaBitQ Theorem 3.2, error O(1/sqrt(D))). Its price: the
 * decoded vector's error is ||k||^2 (1/corr^2 - 1) in squared norm (0.57
 * ||k||^2 at 1 bit, corr^2 ~ 2/pi) against ||k||^2 (1 - corr^2) (0.36) for
 * the least-squares reconstruction (mse=1), and attention's softmax turns
 * the larger score noise into weight on wrong tokens: on smollm2-135m
 * (1-bit keys, 4-bit values) +812% PPL unbiased, docs/quality.md for mse=1.
 * decode returns
 * k_hat = ||k||/corr * R^T x_bar, so the float estimator is exactly
 * <q, decode(k)>.
 * Popcount kernel (b=1, qbits=B): R q is quantized uniformly,
 * q' = lo + delta*v with v in [0, 2^B - 1] (round to nearest; the paper
 * uses randomized rounding -- ours is deterministic, so the query error is
 * a fixed, not a zero-mean, perturbation of size <= delta/2 per coordinate);
 * with z_d in {0,1} the sign bits, <c, q'> = 2(lo*|z| + delta*sum_j 2^j
 * popcount(z & v_j)) - (D lo + delta*sum v), v_j the bit planes of v.
 * The prepared query: f32 lo, f32 delta, f32 sum(v), then B planes of D/8
 * bytes; or D floats (R q) when qbits=0.
 * Shared state: the sign diagonal, D/8 bytes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/bitstream.h"
#include "codec/codec.h"
#include "codec/halves.h"
#include "kernels/qplanes.h"
#include "codec/rotation.h"
#include "codec/vecops.h"
#include "core/fp16.h"
#include "core/io.h"
#include "kernels/kernels.h"
#include "kernels/prefetch.h"

#define RQ_GRID 64

typedef struct {
    int bits, qbits, mse;
    int fused;      /* float query scored from the codes (rq_score_levels) */
    vq_rotation r;
    float *y;       /* D floats */
    float *c;       /* D floats */
    float *ones;    /* D ones: the query that sums a code row's squared levels */
    float lut[16];  /* the levels c = 2u - L of the codes u */
    float sq[16];   /* their squares */
} rabitq;

static vq_status rq_init(vq_codec *c, vq_spec *spec)
{
    const int D = c->head_dim;
    long bits, qbits, mse;
    VQ_TRY(vq_spec_int(spec, "bits", 1, 1, 4, &bits, c->err));
    VQ_TRY(vq_spec_int(spec, "mse", 0, 0, 1, &mse, c->err));
    VQ_TRY(vq_spec_int(spec, "qbits", bits == 1 ? 4 : 0, 0, 8, &qbits, c->err));
    if (qbits != 0 && (qbits < 4 || bits != 1))
        return vq_fail(c->err, VQ_ERR_INVALID_ARG,
                       "rabitq: parameter qbits=%ld unsupported (0, or 4..8 with bits=1)", qbits);
    rabitq *q = calloc(1, sizeof *q);
    if (!q)
        return vq_fail(c->err, VQ_ERR_NOMEM, "rabitq: out of memory");
    c->impl = q;
    q->bits = (int)bits;
    q->qbits = (int)qbits;
    q->mse = (int)mse;
    q->y = malloc(sizeof(float) * (size_t)D);
    q->c = malloc(sizeof(float) * (size_t)D);
    q->ones = malloc(sizeof(float) * (size_t)D);
    if (!q->y || !q->c || !q->ones)
        return vq_fail(c->err, VQ_ERR_NOMEM, "rabitq: out of memory");
    for (int d = 0; d < D; d++)
        q->ones[d] = 1.0f;
    for (int u = 0, L = (1 << q->bits) - 1; u <= L; u++) {
        q->lut[u] = (float)(2 * u - L);
        q->sq[u] = q->lut[u] * q->lut[u];
    }
    if (vq_rot_init(&q->r, D, c->seed) != 0)
        return vq_fail(c->err, VQ_ERR_UNSUPPORTED, "rabitq: head_dim %d cannot be rotated", D);
    c->block_tokens = 1;
    c->block_bytes = 4 + (size_t)q->bits * D / 8;
    c->shared_bytes = vq_rot_shared_bytes(&q->r);
    c->query_bytes = q->qbits ? vq_qplanes_bytes(D, q->qbits) : sizeof(float) * (size_t)D;
    c->accum_size = (size_t)D;
    /* float queries scored from the codes (kernels.h codes_dot) and values
     * summed from them in registers (lut_axpy) where the kernel table has
     * SIMD twins; else through the tile (rq_values) */
    const vq_kernels *k = vq_kernels_get();
    q->fused = !q->qbits && D % 16 == 0 && k->codes_dot != vq_codes_dot_ref;
    c->score_own = q->qbits != 0 || q->fused;
    c->accum_own = D % 16 == 0 && k->lut_axpy != vq_lut_axpy_ref;
    if (q->mse)
        snprintf(c->canon, sizeof c->canon, "rabitq:bits=%d,qbits=%d,mse=1", q->bits, q->qbits);
    else
        snprintf(c->canon, sizeof c->canon, "rabitq:bits=%d,qbits=%d", q->bits, q->qbits);
    return VQ_OK;
}

static void rq_destroy(vq_codec *c)
{
    rabitq *q = c->impl;
    if (q) {
        free(q->y);
        free(q->c);
        free(q->ones);
    }
    free(q);
    c->impl = NULL;
}

/* the odd integer nearest to v, 2 floor(v / 2) + 1, clamped to [-L, L]
 * (NaN gives -L): v / 2 is held to [-(L+1)/2, (L-1)/2] (integers, L odd)
 * first, which is the same clamp and keeps the cast in range; in integers,
 * so that the grid search below vectorizes without library calls */
static inline int nearest_odd(float v, int L)
{
    const float lo = (float)(-(L + 1) / 2), hi = (float)((L - 1) / 2);
    float h = 0.5f * v;
    h = h >= lo ? h : lo;
    h = h <= hi ? h : hi;
    int i = (int)h;
    i -= (float)i > h; /* floor */
    return 2 * i + 1;
}

#define RQ_LANES 8 /* grid points searched side by side (independent sums) */

/* best code c (odd integers) for unit y; returns <c, y> / ||c|| */
static double choose_codes(int bits, const float *y, int D, float *c)
{
    const int L = (1 << bits) - 1;
    if (bits == 1) {
        double s = 0.0;
        for (int d = 0; d < D; d++) {
            c[d] = y[d] >= 0.0f ? 1.0f : -1.0f;
            s += fabs(y[d]);
        }
        return s / sqrt((double)D);
    }
    float ymax = 0.0f;
    for (int d = 0; d < D; d++)
        ymax = fmaxf(ymax, fabsf(y[d]));
    if (ymax == 0.0f) {
        for (int d = 0; d < D; d++)
            c[d] = 1.0f;
        return 0.0;
    }
    /* t*ymax from ~0 (all codes +-1) to L+1 (largest coordinates clipped);
     * per grid point <o, y> summed in d order (double; the products are
     * exact) and ||o||^2 exactly in integers */
    double best = -1.0;
    float best_t = 0.0f;
    _Static_assert(RQ_GRID % RQ_LANES == 0, "whole groups of grid points");
    for (int g0 = 1; g0 <= RQ_GRID; g0 += RQ_LANES) {
        float t[RQ_LANES];
        double dotp[RQ_LANES] = { 0 };
        int cc[RQ_LANES] = { 0 }; /* <= 225 D */
        for (int k = 0; k < RQ_LANES; k++)
            t[k] = ((float)L + 1.0f) / ymax * (float)(g0 + k) / RQ_GRID;
        for (int d = 0; d < D; d++)
            for (int k = 0; k < RQ_LANES; k++) {
                const int o = nearest_odd(t[k] * y[d], L);
                dotp[k] += (double)o * y[d];
                cc[k] += o * o;
            }
        for (int k = 0; k < RQ_LANES; k++) {
            const double cosv = dotp[k] / sqrt((double)cc[k]);
            if (cosv > best) {
                best = cosv;
                best_t = t[k];
            }
        }
    }
    for (int d = 0; d < D; d++)
        c[d] = (float)nearest_odd(best_t * y[d], L);
    return best;
}

static void rq_encode(vq_codec *c, const float *x, size_t n, uint8_t *dst)
{
    rabitq *q = c->impl;
    const int D = c->head_dim;
    const int L = (1 << q->bits) - 1;
    for (size_t t = 0; t < n; t++) {
        const float *k = x + t * (size_t)D;
        uint8_t *blk = dst + t * c->block_bytes;
        memset(blk, 0, c->block_bytes);
        float norm = vq_vec_norm(k, (size_t)D);
        float inv = norm > 0.0f ? 1.0f / norm : 0.0f;
        for (int d = 0; d < D; d++)
            q->y[d] = k[d] * inv;
        vq_rot_forward(&q->r, q->y);
        double corr = choose_codes(q->bits, q->y, D, q->c);
        /* corr > 0 for any non-zero y; store 1 for the zero vector. mse=1:
         * the norm field holds ||k|| corr^2 (decoders divide by corr) */
        float stored = q->mse && corr > 0.0 ? (float)((double)norm * corr * corr) : norm;
        vq_put_u16(blk, vq_fp32_to_fp16(stored));
        vq_put_u16(blk + 2, vq_fp32_to_fp16(corr > 0.0 ? (float)corr : 1.0f));
        for (int d = 0; d < D; d++)
            vq_bits_put(blk + 4, (size_t)d, q->bits, (unsigned)(((int)q->c[d] + L) / 2));
    }
}

/* centred codes c_d of one block; returns ||c|| */
static float block_codes(const rabitq *q, const uint8_t *blk, int D, float *c)
{
    const int L = (1 << q->bits) - 1;
    double cc = 0.0;
    for (int d = 0; d < D; d++) {
        c[d] = (float)(2 * (int)vq_bits_get(blk + 4, (size_t)d, q->bits) - L);
        cc += (double)c[d] * c[d];
    }
    return (float)sqrt(cc);
}

/* factor f with k_hat = f * R^T c: ||k|| / (corr * ||c||) */
static float block_factor(const uint8_t *blk, float cnorm)
{
    float norm = vq_fp16_to_fp32(vq_get_u16(blk));
    float corr = vq_fp16_to_fp32(vq_get_u16(blk + 2));
    return norm / (corr * cnorm);
}

/* block_factor of nt <= RQ_FTOK blocks stride bytes apart (the same
 * floats: halves.h's exact conversions, ||c|| = sqrt(||c||^2) in float --
 * correctly rounded as the double root rounded to float -- then the same
 * division); ||c||^2 = D at 1 bit, else the sum of the squared levels
 * (kernels.h codes_dot against ones: small integers, exact in any order),
 * into f[0..nt); f holds RQ_FTOK floats, those past nt are scratch */
#define RQ_FTOK VQ_HALVES_BATCH
static void block_factors(const rabitq *q, const vq_kernels *k, const uint8_t *blk, size_t stride, size_t nt, int D,
                          float *f)
{
    float corr[RQ_FTOK], cc[RQ_FTOK];
    if (q->bits == 1) { /* ||c|| = sqrt(D): the norm over the correction times it, by one kernel */
        k->half_ratio(blk, stride, nt, sqrtf((float)D), f);
        return;
    }
    vq_halves_strided(k, blk, stride, nt, f);
    vq_halves_strided(k, blk + 2, stride, nt, corr);
    k->codes_dot(blk + 4, stride, q->bits, nt, (size_t)D, q->sq, q->ones, 0, 1, cc, RQ_FTOK);
    for (size_t t = 0; t < nt; t++)
        f[t] = f[t] / (corr[t] * sqrtf(cc[t]));
}

static void rq_prepare_query(vq_codec *c, const float *qv, uint8_t *qbuf)
{
    rabitq *q = c->impl;
    const int D = c->head_dim;
    float *y = q->y;
    memcpy(y, qv, sizeof(float) * (size_t)D);
    vq_rot_forward(&q->r, y);
    if (q->qbits == 0) {
        memcpy(qbuf, y, sizeof(float) * (size_t)D);
        return;
    }
    vq_qplanes_encode(y, D, q->qbits, qbuf);
}

/* scores from the sign bits by popcounts (kernels.h signscore, qplanes.h),
 * times the token's factor */
static void rq_score_bits(vq_codec *c, const uint8_t *qbuf, int n_q, const uint8_t *codes, size_t n, float *scores)
{
    enum { TOK = 64, QRY = 16 };
    rabitq *q = c->impl;
    const int D = c->head_dim;
    const vq_kernels *k = vq_kernels_get();
    const size_t off = 4; /* the sign bits follow the fp16 norm and correction */
    const float w = 1.0f;
    float f[TOK], qc[3 * QRY];
    _Static_assert(TOK == RQ_FTOK, "block_factors' batch");
    for (int j0 = 0; j0 < n_q; j0 += QRY) {
        const int nj = n_q - j0 < QRY ? n_q - j0 : QRY;
        const uint8_t *qb0 = qbuf + (size_t)j0 * c->query_bytes;
        for (int j = 0; j < nj; j++)
            vq_qplanes_score_consts(qb0 + (size_t)j * c->query_bytes, D, w, qc + 3 * j);
        for (size_t t0 = 0; t0 < n; t0 += TOK) {
            const size_t nt = n - t0 < TOK ? n - t0 : TOK;
            if (t0 + nt < n) /* the next batch, while this one is scored */
                vq_prefetch_span(codes, (t0 + nt) * c->block_bytes,
                                 (n - t0 - nt < TOK ? n - t0 - nt : TOK) * c->block_bytes);
            block_factors(q, k, codes + t0 * c->block_bytes, c->block_bytes, nt, D, f);
            k->signscore(codes + t0 * c->block_bytes, c->block_bytes, nt, (size_t)D, &off, &w, 1, f, 0, qb0 + 12,
                         c->query_bytes, qc, nj, q->qbits, scores + (size_t)j0 * n + t0, n);
        }
    }
}

/* float queries (R q) against the codes: f_i * sum_e q_e c_ie, the level
 * sums by kernels.h codes_dot, batches of RQ_FTOK tokens */
static void rq_score_levels(vq_codec *c, const uint8_t *qbuf, int n_q, const uint8_t *codes, size_t n,
                            float *scores)
{
    const rabitq *q = c->impl;
    const int D = c->head_dim;
    const size_t bb = c->block_bytes;
    const vq_kernels *k = vq_kernels_get();
    float f[RQ_FTOK];
    for (size_t i0 = 0; i0 < n; i0 += RQ_FTOK) {
        const size_t nt = n - i0 < RQ_FTOK ? n - i0 : RQ_FTOK;
        const uint8_t *blk = codes + i0 * bb;
        block_factors(q, k, blk, bb, nt, D, f);
        k->codes_dot(blk + 4, bb, q->bits, nt, (size_t)D, q->lut, (const float *)(const void *)qbuf, (size_t)D, n_q,
                     scores + i0, n);
        for (int j = 0; j < n_q; j++)
            for (size_t i = 0; i < nt; i++)
                scores[(size_t)j * n + i0 + i] *= f[i];
    }
}

static void rq_score(vq_codec *c, const uint8_t *qbuf, int n_q, const uint8_t *codes, size_t n, float *scores)
{
    rabitq *q = c->impl;
    const int D = c->head_dim;
    float *cv = q->c;
    if (q->qbits) { /* bits == 1: ||c|| = sqrt(D) */
        rq_score_bits(c, qbuf, n_q, codes, n, scores);
        return;
    }
    if (q->fused) {
        rq_score_levels(c, qbuf, n_q, codes, n, scores);
        return;
    }
    for (size_t t = 0; t < n; t++) {
        const uint8_t *blk = codes + t * c->block_bytes;
        float f = block_factor(blk, block_codes(q, blk, D, cv));
        for (int j = 0; j < n_q; j++)
            scores[(size_t)j * n + t] =
                f * vq_vec_dot(cv, (const float *)(const void *)(qbuf + (size_t)j * c->query_bytes), (size_t)D);
    }
}

/* the sums: kernels.h lut_axpy over the levels with the tokens' factors
 * where the table has a SIMD twin (accum_own), else token by token */
static void rq_accumulate(vq_codec *c, const float *w, int n_q, const uint8_t *codes, size_t n, float *acc)
{
    rabitq *q = c->impl;
    const int D = c->head_dim;
    float *cv = q->c;
    if (c->accum_own) {
        const vq_kernels *k = vq_kernels_get();
        const size_t off = 4;
        float f[RQ_FTOK];
        for (size_t i0 = 0; i0 < n; i0 += RQ_FTOK) {
            const size_t nt = n - i0 < RQ_FTOK ? n - i0 : RQ_FTOK;
            const uint8_t *blk = codes + i0 * c->block_bytes;
            block_factors(q, k, blk, c->block_bytes, nt, D, f);
            k->lut_axpy(blk, c->block_bytes, nt, (size_t)D, &off, q->bits, q->lut, 1, f, 0, w + i0, n, n_q, acc,
                        (size_t)D);
        }
        return;
    }
    for (size_t t = 0; t < n; t++) {
        const uint8_t *blk = codes + t * c->block_bytes;
        float f = block_factor(blk, block_codes(q, blk, D, cv));
        for (int j = 0; j < n_q; j++)
            vq_vec_axpy(w[(size_t)j * n + t] * f, cv, (size_t)D, acc + (size_t)j * D);
    }
}

/* accum-domain vectors (rotated domain): f * c with c_d = 2 u_d - L, the
 * vectors rq_accumulate adds (and rq_score's float estimator scores) */
static void rq_values(vq_codec *c, const uint8_t *codes, size_t n, float *out)
{
    rabitq *q = c->impl;
    const int D = c->head_dim;
    const vq_kernels *k = vq_kernels_get();
    float f[RQ_FTOK];
    for (size_t i0 = 0; i0 < n; i0 += RQ_FTOK) {
        const size_t nt = n - i0 < RQ_FTOK ? n - i0 : RQ_FTOK;
        const uint8_t *blk = codes + i0 * c->block_bytes;
        block_factors(q, k, blk, c->block_bytes, nt, D, f);
        for (size_t t = 0; t < nt; t++)
            k->lut_row(blk + t * c->block_bytes + 4, q->bits, (size_t)D, q->lut, f[t], 0, out + (i0 + t) * (size_t)D);
    }
}

/* k_hat = R^T (f c): rq_values' vectors turned back */
static void rq_decode(vq_codec *c, const uint8_t *src, size_t n, float *x)
{
    rabitq *q = c->impl;
    rq_values(c, src, n, x);
    for (size_t t = 0; t < n; t++)
        vq_rot_inverse(&q->r, x + t * (size_t)c->head_dim);
}

static void rq_finish(vq_codec *c, const float *acc, float *out)
{
    rabitq *q = c->impl;
    memcpy(out, acc, sizeof(float) * (size_t)c->head_dim);
    vq_rot_inverse(&q->r, out);
}

const vq_codec_ops vq_codec_rabitq_ops = {
    .name = "rabitq",
    .default_spec = "rabitq:bits=1",
    .init = rq_init,
    .destroy = rq_destroy,
    .encode = rq_encode,
    .decode = rq_decode,
    .prepare_query = rq_prepare_query,
    .score = rq_score,
    .accumulate = rq_accumulate,
    .accum_finish = rq_finish,
    .values = rq_values,
    .dot_query = 1, /* the float query (qbits=0); bit-plane queries score in rq_score */
};
