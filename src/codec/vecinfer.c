/* vecinfer.c -- VecInfer: smoothing + randomized Hadamard + product
 * quantization with calibrated k-means codebooks (Yao et al., "VecInfer:
 * Efficient LLM Inference with Low-Bit KV Cache via Outlier-Suppressed
 * Vector Quantization", 2025; METHODS.md).
 *
 * Parameters: sub_dim in {4, 8} (default 8), bits in [1, 12] (default 8)
 * bits per piece code. Canonical spec "vecinfer:sub_dim=S,bits=B".
 * M = D/sub_dim pieces, K = 2^bits centroids per piece position.
 *
 * Transform T (keys): y = H(sigma * (x / lambda)), lambda_c =
 * sqrt(max_t |K_tc|) over the calibration samples (1 where that is 0),
 * sigma a seeded random +-1 diagonal, H the orthonormal Walsh-Hadamard
 * transform (block-diagonal on 32-wide blocks for head_dim 160 and 224,
 * which vq_fwht does not cover). The query gets q~ = H(sigma * (q *
 * lambda)), so <q~, y> = <q, x>.
 * Values: the same without smoothing (lambda = 1). We keep the rotation for
 * values: it spreads per-channel energy evenly over the pieces, so each
 * piece's codebook sees similar statistics, and it costs one FWHT per
 * accumulate_finish only.
 *
 * Packed layout (block_tokens = 1, block_bytes = ceil(M*bits/8)): piece m's
 * code at bits [m*bits, (m+1)*bits) of the block, LSB-first little-endian
 * bit stream; unused high bits of the last byte are zero.
 *
 * Calibration: lambda from the samples, then per piece position a k-means
 * (k-means++ init, VQ_VECINFER_ITERS Lloyd iterations, seeded from the codec
 * seed and the piece index) on the transformed samples, at most
 * VQ_VECINFER_MAX_TRAIN of them (an even stride through the set). Without
 * calibration the codec refuses to encode (VQ_ERR_NEEDS_CALIBRATION); there
 * is no random-codebook fallback. Calibration time is O(n K D iters): with
 * 12-bit codes (K = 4096) expect minutes.
 *
 * Query: query_bytes = M*K floats, the table LUT[m][k] = <q~_m, C_m,k>;
 * score = sum_m LUT[m][code_m].
 * Accumulate: the centroids added in the rotated domain, acc += w * [C_0,
 * code_0 | ... | C_M-1,code_M-1] (accum_size = D; finish inverts T):
 * kernels.h pq_axpy for one-byte codes where the table has a SIMD twin,
 * else the tiled path (the `values` op writes those rows; codec/tiled.h)
 * with vecinfer_accumulate's own loop as the scalar reference. (A
 * histogram of weights per piece and code, M*K floats a query, took four
 * times as long: docs/codecs-calibrated.md.)
 *
 * Shared state (shared_bytes): codebooks M*K*sub_dim fp32 plus lambda D
 * fp32. State payload: docs/FORMATS.md, "vecinfer". */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/bitstream.h"
#include "codec/codec.h"
#include "codec/vecops.h"
#include "codec/kmeans.h"
#include "kernels/kernels.h"
#include "core/hadamard.h"
#include "core/io.h"
#include "core/rng.h"

#define VQ_VECINFER_ITERS 10
#define VQ_VECINFER_MAX_TRAIN 8192

typedef struct {
    int sub_dim, bits, qbits, M, K;
    int smooth;         /* 1 for keys */
    uint64_t rot_seed;  /* seed of the +-1 diagonal */
    float *sign;        /* D */
    float *lambda;      /* D */
    float *cb;          /* M*K*sub_dim */
    float *cbt;         /* cb piece by piece transposed: cbt[(m*sub_dim + d)*K + k] = cb[(m*K + k)*sub_dim + d] */
    float *tmp;         /* D scratch */
    float *lut;         /* qbits=8: M*K, the float table before rounding */
    float *work;        /* keys' float tables, K > 16: kernels.h pq_score's work, else NULL */
} vecinfer_state;

/* ---- transform ---------------------------------------------------------- */

static void vi_fwht(float *y, size_t D)
{
    const vq_kernels *k = vq_kernels_get(); /* kernels/fwht.h: the reference's bits */
    if (vq_fwht_supported(D)) {
        k->fwht(y, D);
        return;
    }
    for (size_t o = 0; o < D; o += 32)
        k->fwht(y + o, 32);
}

static void vi_make_signs(vecinfer_state *st, int D)
{
    vq_rng r;
    vq_rng_seed(&r, st->rot_seed);
    for (int i = 0; i < D; i++)
        st->sign[i] = vq_rng_sign(&r);
}

/* cbt from cb (after every change of cb): each piece's K x sub_dim
 * codebook transposed */
static void vi_transpose(vecinfer_state *st)
{
    const size_t K = (size_t)st->K, sd = (size_t)st->sub_dim;
    for (size_t m = 0; m < (size_t)st->M; m++)
        vq_transpose(st->cb + m * K * sd, K, sd, st->cbt + m * sd * K);
}

/* y = H(sigma * x * f), f = 1/lambda (keys) or lambda (queries) or 1 */
static void vi_forward(const vecinfer_state *st, int D, const float *x, int mode, float *y)
{
    for (int i = 0; i < D; i++) {
        float v = x[i];
        if (mode < 0)
            v /= st->lambda[i];
        else if (mode > 0)
            v *= st->lambda[i];
        y[i] = st->sign[i] * v;
    }
    vi_fwht(y, (size_t)D);
}

/* inverse of vi_forward(mode = -1) in place: x = lambda * sigma * H(y) */
static void vi_inverse(const vecinfer_state *st, int D, float *y)
{
    vi_fwht(y, (size_t)D);
    for (int i = 0; i < D; i++)
        y[i] *= st->sign[i] * st->lambda[i];
}

/* ---- init --------------------------------------------------------------- */

static void vecinfer_destroy(vq_codec *c)
{
    vecinfer_state *st = c->impl;
    if (st) {
        free(st->sign);
        free(st->lambda);
        free(st->cb);
        free(st->cbt);
        free(st->tmp);
        free(st->lut);
        free(st->work);
    }
    free(st);
    c->impl = NULL;
}

/* a handle with its own copy of the state (clone op, codec.h) */
static vq_status vecinfer_clone(const vq_codec *src, vq_codec *dst)
{
    const vecinfer_state *s = src->impl;
    const size_t D = (size_t)src->head_dim;
    vecinfer_state *st = malloc(sizeof *st);
    dst->impl = st;
    if (!st)
        return vq_fail(dst->err, VQ_ERR_NOMEM, "vecinfer: out of memory");
    *st = *s;
    st->sign = vq_vec_dup(s->sign, D);
    st->lambda = vq_vec_dup(s->lambda, D);
    st->cb = vq_vec_dup(s->cb, (size_t)s->K * D);
    st->cbt = vq_vec_dup(s->cbt, (size_t)s->K * D);
    st->tmp = vq_vec_dup(s->tmp, D);
    st->lut = s->lut ? vq_vec_dup(s->lut, (size_t)s->M * s->K) : NULL;
    st->work = s->work ? malloc(sizeof(float) * VQ_PQ_SCORE_WORK(s->M, s->K)) : NULL;
    if (!st->sign || !st->lambda || !st->cb || !st->cbt || !st->tmp || (s->lut && !st->lut) || (s->work && !st->work))
        return vq_fail(dst->err, VQ_ERR_NOMEM, "vecinfer: out of memory");
    return VQ_OK;
}

static vq_status vecinfer_init(vq_codec *c, vq_spec *spec)
{
    long sub, bits;
    VQ_TRY(vq_spec_int(spec, "sub_dim", 8, 1, 256, &sub, c->err));
    if (sub != 4 && sub != 8)
        return vq_fail(c->err, VQ_ERR_INVALID_ARG, "vecinfer: parameter sub_dim=%ld unsupported (4 or 8)", sub);
    VQ_TRY(vq_spec_int(spec, "bits", 8, 1, 12, &bits, c->err));
    long qbits;
    VQ_TRY(vq_spec_int(spec, "qbits", 0, 0, 8, &qbits, c->err));
    if (qbits != 0 && (qbits != 8 || bits != 8))
        return vq_fail(c->err, VQ_ERR_INVALID_ARG, "vecinfer: parameter qbits=%ld unsupported (0, or 8 with bits=8)",
                       qbits);
    const int D = c->head_dim;
    vecinfer_state *st = calloc(1, sizeof *st);
    if (!st)
        return vq_fail(c->err, VQ_ERR_NOMEM, "vecinfer: out of memory");
    c->impl = st;
    st->sub_dim = (int)sub;
    st->bits = (int)bits;
    st->qbits = (int)qbits;
    st->M = D / st->sub_dim;
    st->K = 1 << st->bits;
    st->smooth = c->role == VQ_ROLE_KEY;
    st->rot_seed = vq_seed_mix(c->seed, 0x7665633031ull); /* "vec01" */
    st->sign = malloc((size_t)D * sizeof(float));
    st->lambda = malloc((size_t)D * sizeof(float));
    st->cb = calloc((size_t)st->K * D, sizeof(float));
    st->cbt = calloc((size_t)st->K * D, sizeof(float));
    st->tmp = malloc((size_t)D * sizeof(float));
    if (!st->sign || !st->lambda || !st->cb || !st->cbt || !st->tmp)
        return vq_fail(c->err, VQ_ERR_NOMEM, "vecinfer: out of memory (codebooks of %d x %d)", st->K, D);
    vi_make_signs(st, D);
    for (int i = 0; i < D; i++)
        st->lambda[i] = 1.0f;
    c->block_tokens = 1;
    c->block_bytes = ((size_t)st->M * (size_t)st->bits + 7) / 8;
    c->shared_bytes = sizeof(float) * ((size_t)st->K * D + (size_t)D);
    /* qbits=8: the byte tables (kernels/lut8_scan.h); the float table is
     * made in tmp first, so the buffer holds the larger of the two */
    c->query_bytes = sizeof(float) * (size_t)st->M * st->K;
    c->accum_size = (size_t)D;
    /* one-byte codes: the SIMD pq_axpy where the table has it (no tile) */
    c->accum_own = st->bits == 8 && D % 16 == 0 && vq_kernels_get()->pq_axpy != vq_pq_axpy_ref;
    st->lut = st->qbits ? malloc(sizeof(float) * (size_t)st->M * st->K) : NULL;
    /* the keys' pq_score scratch (values are summed, not scored) */
    const int pq_scored = st->smooth && !st->qbits && st->K > 16 && st->bits <= 8;
    st->work = pq_scored ? malloc(sizeof(float) * VQ_PQ_SCORE_WORK(st->M, st->K)) : NULL;
    if ((st->qbits && !st->lut) || (pq_scored && !st->work))
        return vq_fail(c->err, VQ_ERR_NOMEM, "vecinfer: out of memory");
    if (st->qbits) {
        c->query_bytes = vq_lut8_tables_size(st->M);
        snprintf(c->canon, sizeof c->canon, "vecinfer:sub_dim=%d,bits=%d,qbits=8", st->sub_dim, st->bits);
    } else {
        snprintf(c->canon, sizeof c->canon, "vecinfer:sub_dim=%d,bits=%d", st->sub_dim, st->bits);
    }
    return VQ_OK;
}

/* ---- encode / decode ---------------------------------------------------- */

static void vecinfer_encode(vq_codec *c, const float *x, size_t n, uint8_t *dst)
{
    vecinfer_state *st = c->impl;
    const int D = c->head_dim, sd = st->sub_dim;
    const size_t bb = c->block_bytes;
    memset(dst, 0, n * bb);
    for (size_t i = 0; i < n; i++) {
        vi_forward(st, D, x + i * (size_t)D, st->smooth ? -1 : 0, st->tmp);
        for (int m = 0; m < st->M; m++) {
            int code = vq_kmeans_nearest(st->cb + (size_t)m * st->K * sd, st->K, sd, st->tmp + m * sd);
            vq_bits_put(dst + i * bb, (size_t)m, st->bits, (unsigned)code);
        }
    }
}

/* the M piece codes of one token (bytes as they are for 8-bit codes) */
static inline void vi_codes(const vecinfer_state *st, const uint8_t *row, unsigned *code)
{
    if (st->bits == 8)
        for (int m = 0; m < st->M; m++)
            code[m] = row[m];
    else
        for (int m = 0; m < st->M; m++)
            code[m] = vq_bits_get(row, (size_t)m, st->bits);
}

/* the rotated-domain vectors of n tokens: token i's pieces' centroids at
 * y + i*D (the accumulators' domain; codec.h values) */
static inline __attribute__((always_inline)) void vi_values(const vecinfer_state *st, const size_t SD, size_t D,
                                                            size_t bb, const uint8_t *src, size_t n, float *y)
{
    const size_t M = (size_t)st->M, K = (size_t)st->K;
    unsigned code[256];
    for (size_t i = 0; i < n; i++) {
        float *o = y + i * D;
        vi_codes(st, src + i * bb, code);
        for (size_t m = 0; m < M; m++) /* SD constant: the copies are moves */
            memcpy(o + m * SD, st->cb + (m * K + code[m]) * SD, SD * sizeof(float));
    }
}

static void vecinfer_values(vq_codec *c, const uint8_t *src, size_t n, float *y)
{
    const vecinfer_state *st = c->impl;
    if (st->sub_dim == 8)
        vi_values(st, 8, (size_t)c->head_dim, c->block_bytes, src, n, y);
    else
        vi_values(st, 4, (size_t)c->head_dim, c->block_bytes, src, n, y);
}

static void vecinfer_decode(vq_codec *c, const uint8_t *src, size_t n, float *x)
{
    vecinfer_state *st = c->impl;
    const size_t D = (size_t)c->head_dim;
    vecinfer_values(c, src, n, x);
    for (size_t i = 0; i < n; i++)
        vi_inverse(st, (int)D, x + i * D);
}

/* ---- fused kernels ------------------------------------------------------ */

static void vecinfer_prepare_query(vq_codec *c, const float *q, uint8_t *qbuf)
{
    vecinfer_state *st = c->impl;
    const int D = c->head_dim, sd = st->sub_dim;
    float *lut = st->qbits ? st->lut : (float *)(void *)qbuf;
    vi_forward(st, D, q, st->smooth ? 1 : 0, st->tmp);
    /* LUT[m][k] = <q~_m, C_m,k>: piece m's K centroids, transposed into
     * sd rows of K floats, weighted by q~_m (kernels.h dense_axpy: K lanes
     * a step, the sum over d in order; its AVX2 and AVX-512 twins give the
     * same bits, the scalar reference agrees to rounding: kernels/dense.h) */
    const vq_kernels *kt = vq_kernels_get();
    const size_t K = (size_t)st->K;
    memset(lut, 0, sizeof(float) * (size_t)st->M * K);
    for (int m = 0; m < st->M; m++)
        kt->dense_axpy(st->tmp + m * sd, (size_t)sd, 1, st->cbt + (size_t)m * sd * K, VQ_ELEM_F32, (size_t)sd, K,
                       lut + (size_t)m * K, K);
    if (st->qbits) /* byte tables (kernels/lut8_tables.h) */
        vq_kernels_get()->lut8_tables(lut, st->M, qbuf);
}

/* scores from the float tables: each query's sum of its pieces' entries,
 * in piece order from 0 (kernels.h pq_score; 4-bit codes are nibbles and
 * their tables 16 floats, as kernels.h ftab_score reads them; other codes
 * of fewer than 8 bits unpacked to bytes first by kernels.h bits_unpack,
 * TOK tokens at a time; past 8 bits, K > 256, the same sums here) */
static void vecinfer_score(vq_codec *c, const uint8_t *qbuf, int n_q,
                           const uint8_t *codes, size_t n, float *scores)
{
    enum { TOK = 64 };
    vecinfer_state *st = c->impl;
    const size_t bb = c->block_bytes, M = (size_t)st->M, K = (size_t)st->K, lsz = M * K;
    const vq_kernels *k = vq_kernels_get();
    if (st->qbits) { /* byte tables: kernels/lut8_scan.h */
        k->lut8_scan(codes, bb, n, M, qbuf, c->query_bytes, n_q, scores, n);
        return;
    }
    const float *lut = (const float *)(const void *)qbuf;
    if (st->bits == 8) {
        k->pq_score(codes, bb, n, M, lut, K, lsz, n_q, scores, n, st->work);
        return;
    }
    if (st->bits == 4) { /* the codes are nibbles and the tables 16 floats: kernels.h ftab_score, factor 1 */
        float ones[TOK];
        const float one = 1.0f;
        const size_t off = 0;
        for (size_t i = 0; i < TOK; i++)
            ones[i] = 1.0f;
        for (size_t i0 = 0; i0 < n; i0 += TOK)
            k->ftab_score(codes + i0 * bb, bb, n - i0 < TOK ? n - i0 : TOK, 4 * M, &off, &one, 1, ones, 0, lut, lsz,
                          n_q, scores + i0, n);
        return;
    }
    unsigned code[256]; /* M = D/sub_dim <= 64 */
    if (st->bits > 8) {
        for (size_t i = 0; i < n; i++) {
            vi_codes(st, codes + i * bb, code);
            for (int j = 0; j < n_q; j++) {
                float a = 0.0f;
                for (size_t m = 0; m < M; m++)
                    a = a + lut[(size_t)j * lsz + m * K + code[m]];
                scores[(size_t)j * n + i] = a;
            }
        }
        return;
    }
    /* UNPACK tokens a call: pq_score's K > 16 path lays out the tables
     * once per call (M*K*4 floats), so the calls are kept long */
    enum { UNPACK = 256 };
    uint8_t rows[UNPACK * 64];
    for (size_t i0 = 0; i0 < n; i0 += UNPACK) {
        const size_t nt = n - i0 < UNPACK ? n - i0 : UNPACK;
        for (size_t i = 0; i < nt; i++)
            k->bits_unpack(codes + (i0 + i) * bb, M, st->bits, rows + i * M);
        k->pq_score(rows, M, nt, M, lut, K, lsz, n_q, scores + i0, n, st->work);
    }
}

/* acc_j[e] += w_ji * value_i[e], token after token: kernels.h pq_axpy
 * where the table has a SIMD twin (accum_own), else the scalar reference
 * of it and of the tiled path (vecinfer_values, dense_axpy) */
static void vecinfer_accumulate(vq_codec *c, const float *w, int n_q,
                                const uint8_t *codes, size_t n, float *acc)
{
    const vecinfer_state *st = c->impl;
    if (c->accum_own) {
        vq_kernels_get()->pq_axpy(codes, c->block_bytes, n, (size_t)st->M, (size_t)st->sub_dim, st->cb,
                                  (size_t)st->K, w, n, n_q, acc, c->accum_size);
        return;
    }
    const size_t D = (size_t)c->head_dim;
    float *row = st->tmp;
    for (size_t i = 0; i < n; i++) {
        vecinfer_values(c, codes + i * c->block_bytes, 1, row);
        for (int j = 0; j < n_q; j++) {
            const float wi = w[(size_t)j * n + i];
            float *a = acc + (size_t)j * c->accum_size;
            for (size_t e = 0; e < D; e++)
                a[e] += wi * row[e];
        }
    }
}

static void vecinfer_finish(vq_codec *c, const float *acc, float *out)
{
    memcpy(out, acc, (size_t)c->head_dim * sizeof(float));
    vi_inverse(c->impl, c->head_dim, out);
}

/* ---- calibration -------------------------------------------------------- */

static vq_status vecinfer_calibrate(vq_codec *c, const float *x, size_t n)
{
    vecinfer_state *st = c->impl;
    const int D = c->head_dim, sd = st->sub_dim;
    for (size_t i = 0; i < n * (size_t)D; i++)
        if (!isfinite(x[i]))
            return vq_fail(c->err, VQ_ERR_INVALID_ARG, "vecinfer: calibration sample %zu has a non-finite value",
                           i / (size_t)D);
    size_t nt = n < VQ_VECINFER_MAX_TRAIN ? n : VQ_VECINFER_MAX_TRAIN;
    float *y = malloc(nt * (size_t)D * sizeof(float));
    float *lambda = malloc((size_t)D * sizeof(float));
    float *cb = malloc((size_t)st->K * D * sizeof(float));
    if (!y || !lambda || !cb) {
        free(y); free(lambda); free(cb);
        return vq_fail(c->err, VQ_ERR_NOMEM, "vecinfer: out of memory for %zu calibration samples", nt);
    }
    for (int d = 0; d < D; d++) {
        float mx = 0.0f;
        if (st->smooth)
            for (size_t i = 0; i < n; i++)
                mx = fmaxf(mx, fabsf(x[i * (size_t)D + d]));
        lambda[d] = mx > 0.0f ? sqrtf(mx) : 1.0f;
    }
    float *keep = st->lambda; /* vi_forward reads st->lambda */
    st->lambda = lambda;
    for (size_t t = 0; t < nt; t++) {
        size_t i = (size_t)((double)t * (double)n / (double)nt); /* even stride */
        vi_forward(st, D, x + i * (size_t)D, st->smooth ? -1 : 0, y + t * (size_t)D);
    }
    st->lambda = keep;
    vq_status s = VQ_OK;
    for (int m = 0; m < st->M && s == VQ_OK; m++)
        s = vq_kmeans(y + m * sd, nt, (size_t)D, sd, st->K, VQ_VECINFER_ITERS,
                      vq_seed_mix(c->seed, 0x6b6d00ull + (uint64_t)m), cb + (size_t)m * st->K * sd, c->err);
    if (s == VQ_OK) {
        memcpy(st->lambda, lambda, (size_t)D * sizeof(float));
        memcpy(st->cb, cb, (size_t)st->K * D * sizeof(float));
        vi_transpose(st);
    }
    free(y); free(lambda); free(cb);
    return s;
}

/* payload v1: u32 D, u32 sub_dim, u32 bits, u32 smooth, u64 rot_seed,
 * f32 lambda[D], f32 codebooks[M][K][sub_dim] (docs/FORMATS.md) */
#define VI_HDR 24

static size_t vi_payload_size(const vq_codec *c)
{
    const vecinfer_state *st = c->impl;
    return VI_HDR + 4 * (size_t)c->head_dim + 4 * (size_t)st->K * (size_t)c->head_dim;
}

static vq_status vecinfer_state_write(const vq_codec *c, uint8_t *dst, size_t cap, size_t *len)
{
    const vecinfer_state *st = c->impl;
    const int D = c->head_dim;
    size_t need = vi_payload_size(c);
    *len = need;
    if (!dst)
        return VQ_OK;
    if (cap < need)
        return vq_fail(((vq_codec *)c)->err, VQ_ERR_INVALID_ARG, "vecinfer: state buffer %zu < %zu bytes", cap, need);
    vq_put_u32(dst, (uint32_t)D);
    vq_put_u32(dst + 4, (uint32_t)st->sub_dim);
    vq_put_u32(dst + 8, (uint32_t)st->bits);
    vq_put_u32(dst + 12, (uint32_t)st->smooth);
    vq_put_u64(dst + 16, st->rot_seed);
    uint8_t *p = dst + VI_HDR;
    for (int i = 0; i < D; i++, p += 4)
        vq_put_f32(p, st->lambda[i]);
    for (size_t i = 0; i < (size_t)st->K * D; i++, p += 4)
        vq_put_f32(p, st->cb[i]);
    return VQ_OK;
}

static vq_status vecinfer_state_read(vq_codec *c, const uint8_t *src, size_t len)
{
    vecinfer_state *st = c->impl;
    const int D = c->head_dim;
    if (len < VI_HDR)
        return vq_fail(c->err, VQ_ERR_FORMAT, "vecinfer state: %zu bytes, shorter than its %d-byte header", len, VI_HDR);
    uint32_t d = vq_get_u32(src), sd = vq_get_u32(src + 4), bits = vq_get_u32(src + 8), sm = vq_get_u32(src + 12);
    if (d != (uint32_t)D || sd != (uint32_t)st->sub_dim || bits != (uint32_t)st->bits || sm != (uint32_t)st->smooth)
        return vq_fail(c->err, VQ_ERR_FORMAT,
                       "vecinfer state: head_dim %u sub_dim %u bits %u smoothing %u, codec has %d %d %d %d", d, sd,
                       bits, sm, D, st->sub_dim, st->bits, st->smooth);
    size_t need = vi_payload_size(c);
    if (len != need)
        return vq_fail(c->err, VQ_ERR_FORMAT, "vecinfer state: payload of %zu bytes, expected %zu", len, need);
    const uint8_t *p = src + VI_HDR;
    for (int i = 0; i < D; i++, p += 4) {
        float l = vq_get_f32(p);
        if (!isfinite(l) || !(l > 0.0f))
            return vq_fail(c->err, VQ_ERR_FORMAT, "vecinfer state: smoothing factor %d is %g", i, (double)l);
    }
    for (size_t i = 0; i < (size_t)st->K * D; i++, p += 4)
        if (!isfinite(vq_get_f32(p)))
            return vq_fail(c->err, VQ_ERR_FORMAT, "vecinfer state: codebook value %zu is not finite", i);
    /* all checked: commit */
    st->rot_seed = vq_get_u64(src + 16);
    vi_make_signs(st, D);
    p = src + VI_HDR;
    for (int i = 0; i < D; i++, p += 4)
        st->lambda[i] = vq_get_f32(p);
    for (size_t i = 0; i < (size_t)st->K * D; i++, p += 4)
        st->cb[i] = vq_get_f32(p);
    vi_transpose(st);
    return VQ_OK;
}

const vq_codec_ops vq_codec_vecinfer_ops = {
    .name = "vecinfer",
    .default_spec = "vecinfer:sub_dim=8,bits=8",
    .needs_calibration = 1,
    .clone = vecinfer_clone,
    .init = vecinfer_init,
    .destroy = vecinfer_destroy,
    .encode = vecinfer_encode,
    .decode = vecinfer_decode,
    .prepare_query = vecinfer_prepare_query,
    .score = vecinfer_score,
    .accumulate = vecinfer_accumulate,
    .accum_finish = vecinfer_finish,
    .values = vecinfer_values,
    .calibrate = vecinfer_calibrate,
    .state_write = vecinfer_state_write,
    .state_read = vecinfer_state_read,
};
