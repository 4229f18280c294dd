/* quants_avx512x.c -- AVX-512 VNNI kernels of the 32-element weight types
 * (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0) against vq_act32 activations: two weight
 * blocks fill one 512-bit register, VPDPBUSD multiplies the unsigned weight
 * codes with the signed activation codes and sums each group of four into
 * 32-bit lanes, and a multiply and an FMA apply both blocks' weight and
 * activation scales (the lane order of each type is described at its
 * kernels). Compiled with -mavx512vnni (and F/BW/VL/DQ);
 * only reached through quants.c's table when cpu.h reports
 * VQ_CPU_AVX512_VNNI. Results equal the scalar reference's up to float
 * rounding (tests/test_quants.c). */
#include <immintrin.h>
#include <string.h>

#include "model/quants_impl.h"

/* Software prefetch distances. Decode streams the weights from memory once
 * per token; one core's demand misses alone reach ~7.5 GB/s there, with
 * these prefetches ~11 (measured on 256 MB matrices, n = 576 and 1536;
 * from L3 no change). Rows kernels: the same position PF_ROWS rows ahead
 * (the next calls' rows); single-row kernels: PF_BYTES ahead in the row's
 * stream. A prefetch never faults, so running past the matrix is harmless. */
#define PF_ROWS 8
#define PF_BYTES 2048

static inline float h2f(uint16_t h) { return _cvtsh_ss(h); }

static inline __m512i join(__m256i lo, __m256i hi) { return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1); }

/* [a x8 | b x8] */
static inline __m512 scales2(float a, float b)
{
    return _mm512_mask_broadcastss_ps(_mm512_set1_ps(a), 0xFF00, _mm_set_ss(b));
}

/* The 4- and 5-bit types take two blocks (b0, b1) per 512-bit register in
 * the byte order [b0 0..15 | b1 0..15 | b0 16..31 | b1 16..31], so that one
 * shift and one mask unpack both blocks' nibbles (a block's low nibbles are
 * its elements 0..15, the high ones 16..31). The activation codes are
 * permuted to the same order once per pair. After VPDPBUSD, 32-bit lanes
 * 0-3 and 8-11 hold partial sums of b0, lanes 4-7 and 12-15 of b1; a
 * per-block float is spread to those lanes by a permute. Per block:
 *   dot = d_a * (d_w * sum (q - off) a + m * sum a),
 * the offset (8 for Q4_0, 16 for Q5_0) subtracted in the integer sums and the
 * min term (Q4_1, Q5_1) added per lane before the activation scale. */

/* bytes per block and offset of the codes of Q4_0, Q4_1, Q5_0, Q5_1 */
#define Q4Q5_BB(kind) ((kind) == 0 ? 18u : (kind) == 1 ? 20u : (kind) == 2 ? 22u : 24u)
#define Q4Q5_QOFF(kind) ((kind) == 0 ? 2u : (kind) == 1 ? 4u : (kind) == 2 ? 6u : 8u)
#define Q4Q5_HAS_MIN(kind) ((kind) == 1 || (kind) == 3)

/* lanes of b0 take element 0 of a 128-bit vector, lanes of b1 element 1 or 2 */
static inline __m512i pair_index(int b1) { return _mm512_setr_epi32(0, 0, 0, 0, b1, b1, b1, b1, 0, 0, 0, 0, b1, b1, b1, b1); }
static inline __m512 spread(__m128 v, int first, int second)
{
    return _mm512_permutexvar_ps(_mm512_add_epi32(pair_index(second - first), _mm512_set1_epi32(first)),
                                 _mm512_castps128_ps512(v));
}

/* one pair of activation blocks (the second zero if !two) in pair order */
typedef struct {
    __m512i x;   /* codes */
    __m512 d;    /* activation scales per lane */
    __m512i off; /* -off * (sum of the lane's four codes): Q4_0, Q5_0 */
    __m512 sum;  /* sum of the lane's four codes: Q4_1, Q5_1 */
} act_pair;

static inline __attribute__((always_inline)) act_pair act_pair_load(const vq_act32 *x0, int two, int kind)
{
    act_pair a;
    __m256i s0 = _mm256_loadu_si256((const __m256i *)(const void *)x0->qs);
    __m256i s1 = two ? _mm256_loadu_si256((const __m256i *)(const void *)x0[1].qs) : _mm256_setzero_si256();
    a.x = _mm512_shuffle_i64x2(join(s0, s1), join(s0, s1), 0xD8);
    __m128 ds = _mm_set_ps(0.0f, 0.0f, two ? x0[1].d : 0.0f, x0->d);
    a.d = spread(ds, 0, 1);
    a.off = _mm512_setzero_si512();
    a.sum = _mm512_setzero_ps();
    if (kind == 0 || kind == 2)
        a.off = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(kind == 0 ? 8 : 16),
                                    _mm512_sub_epi8(_mm512_setzero_si512(), a.x));
    else
        a.sum = _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(1), a.x));
    return a;
}

/* one pair of weight blocks at p (the second only if two): unsigned codes
 * in pair order, the scales and (Q4_1, Q5_1) the mins per lane */
typedef struct {
    __m512i u;
    __m512 d, m;
} w_pair;

static inline __attribute__((always_inline)) w_pair w_pair_load(const uint8_t *p, int two, int kind)
{
    const size_t bb = Q4Q5_BB(kind), qoff = Q4Q5_QOFF(kind);
    w_pair r;
    __m128i q0 = _mm_loadu_si128((const __m128i *)(const void *)(p + qoff));
    __m256i y = two ? _mm256_inserti128_si256(_mm256_castsi128_si256(q0),
                                              _mm_loadu_si128((const __m128i *)(const void *)(p + bb + qoff)), 1)
                    : _mm256_zextsi128_si256(q0);
    r.u = _mm512_and_si512(join(y, _mm256_srli_epi16(y, 4)), _mm512_set1_epi8(0x0f));
    if (kind >= 2) { /* fifth bits: qh bit i belongs to element i */
        uint32_t h0, h1 = 0;
        const size_t hoff = kind == 2 ? 2 : 4;
        memcpy(&h0, p + hoff, 4);
        if (two)
            memcpy(&h1, p + bb + hoff, 4);
        __mmask64 k = (uint64_t)(h0 & 0xffffu) | (uint64_t)(h1 & 0xffffu) << 16 | (uint64_t)(h0 >> 16) << 32 |
                      (uint64_t)(h1 >> 16) << 48;
        r.u = _mm512_mask_add_epi8(r.u, k, r.u, _mm512_set1_epi8(0x10));
    }
    if (Q4Q5_HAS_MIN(kind)) { /* d, m at the block's start */
        uint32_t dm0, dm1 = 0;
        memcpy(&dm0, p, 4);
        if (two)
            memcpy(&dm1, p + bb, 4);
        __m128 f = _mm_cvtph_ps(_mm_insert_epi32(_mm_cvtsi32_si128((int)dm0), (int)dm1, 1)); /* d0 m0 d1 m1 */
        r.d = spread(f, 0, 2);
        r.m = spread(f, 1, 3);
    } else {
        uint16_t d0, d1 = 0;
        memcpy(&d0, p, 2);
        if (two)
            memcpy(&d1, p + bb, 2);
        r.d = spread(_mm_cvtph_ps(_mm_cvtsi32_si128((int)((uint32_t)d0 | (uint32_t)d1 << 16))), 0, 1);
        r.m = _mm512_setzero_ps();
    }
    return r;
}

/* acc += one pair's contribution (the arithmetic every 4/5-bit kernel here
 * shares, so that one row gives the same bits through any of them) */
static inline __attribute__((always_inline)) __m512 pair_fma(const w_pair *w, const act_pair *a, __m512 acc, int kind)
{
    __m512i isum = _mm512_dpbusd_epi32(a->off, w->u, a->x);
    __m512 t = _mm512_mul_ps(_mm512_cvtepi32_ps(isum), w->d);
    if (Q4Q5_HAS_MIN(kind))
        t = _mm512_fmadd_ps(w->m, a->sum, t);
    return _mm512_fmadd_ps(a->d, t, acc);
}

/* the m activation vectors at act + j*stride, and zeroed accumulators */
static inline __attribute__((always_inline)) void act_vectors(const void *act, size_t stride, int m,
                                                              const vq_act32 **a, __m512 *acc)
{
    _Pragma("GCC unroll 4") for (int j = 0; j < m; j++) {
        a[j] = (const vq_act32 *)(const void *)((const uint8_t *)act + (size_t)j * stride);
        acc[j] = _mm512_setzero_ps();
    }
}

/* kind: 0 = Q4_0, 1 = Q4_1, 2 = Q5_0, 3 = Q5_1 (a constant after inlining);
 * m activation vectors at act + j*stride, as quants_avx2.c's bodies. */
static inline __attribute__((always_inline)) void
dot_q4q5_m(const void *w, const void *act, size_t stride, int m, size_t n, float *out, int kind)
{
    const uint8_t *p = w;
    const size_t bb = Q4Q5_BB(kind);
    const vq_act32 *a[VQ_DOT_MULTI_MAX];
    __m512 acc[VQ_DOT_MULTI_MAX];
    act_vectors(act, stride, m, a, acc);
    const size_t nb = n / 32;
    size_t b = 0;
    for (; b + 2 <= nb; b += 2, p += 2 * bb) { /* whole pairs: no branch in the loop */
        _mm_prefetch((const char *)p + PF_BYTES, _MM_HINT_T0);
        const w_pair wp = w_pair_load(p, 1, kind);
        _Pragma("GCC unroll 4") for (int j = 0; j < m; j++) {
            const act_pair ap = act_pair_load(&a[j][b], 1, kind);
            acc[j] = pair_fma(&wp, &ap, acc[j], kind);
        }
    }
    if (b < nb) { /* an odd last block pairs with zeros */
        const w_pair wp = w_pair_load(p, 0, kind);
        for (int j = 0; j < m; j++) {
            const act_pair ap = act_pair_load(&a[j][b], 0, kind);
            acc[j] = pair_fma(&wp, &ap, acc[j], kind);
        }
    }
    for (int j = 0; j < m; j++)
        out[j] = _mm512_reduce_add_ps(acc[j]);
}

/* Q8_0: two blocks per register in element order (32-bit lanes 0-7: the
 * first block, 8-15: the second); the weights' signs move onto the
 * activations so that VPDPBUSD sees unsigned |q|. */
static inline __attribute__((always_inline)) void
dot_q8_0_m(const void *w, const void *act, size_t stride, int m, size_t n, float *out)
{
    const vq_blk_q8_0 *x = w;
    const vq_act32 *a[VQ_DOT_MULTI_MAX];
    __m512 acc[VQ_DOT_MULTI_MAX];
    act_vectors(act, stride, m, a, acc);
    const size_t nb = n / 32;
    for (size_t b = 0; b < nb; b += 2) {
        const int two = b + 1 < nb;
        _mm_prefetch((const char *)(x + b) + PF_BYTES, _MM_HINT_T0);
        __m256i q0 = _mm256_loadu_si256((const __m256i *)(const void *)x[b].qs);
        __m256i q1 = two ? _mm256_loadu_si256((const __m256i *)(const void *)x[b + 1].qs) : _mm256_setzero_si256();
        __m512i q = join(q0, q1);
        /* |q| (unsigned) times the activation with q's sign */
        __m512i aq = _mm512_abs_epi8(q);
        __mmask64 neg = _mm512_movepi8_mask(q);
        const __m512 dw = scales2(h2f(x[b].d), two ? h2f(x[b + 1].d) : 0.0f);
        _Pragma("GCC unroll 4") for (int j = 0; j < m; j++) {
            const vq_act32 *x0 = &a[j][b];
            __m256i s0 = _mm256_loadu_si256((const __m256i *)(const void *)x0->qs);
            __m256i s1 = two ? _mm256_loadu_si256((const __m256i *)(const void *)x0[1].qs) : _mm256_setzero_si256();
            __m512i s = join(s0, s1);
            s = _mm512_mask_sub_epi8(s, neg, _mm512_setzero_si512(), s);
            __m512i isum = _mm512_dpbusd_epi32(_mm512_setzero_si512(), aq, s);
            __m512 t = _mm512_mul_ps(_mm512_cvtepi32_ps(isum), dw);
            acc[j] = _mm512_fmadd_ps(scales2(x0->d, two ? x0[1].d : 0.0f), t, acc[j]);
        }
    }
    for (int j = 0; j < m; j++)
        out[j] = _mm512_reduce_add_ps(acc[j]);
}

/* Four weight rows (at w + r*rstride) against one activation vector: per
 * row exactly dot_q4q5_m's arithmetic with m = 1 (so the same bits as
 * dot_<type>), the activation pair prepared once for the four rows, and
 * four independent rows in flight. */
static inline __attribute__((always_inline)) void
rows4_q4q5(const void *w, size_t rstride, const void *act, size_t n, float *out, int kind)
{
    const size_t bb = Q4Q5_BB(kind);
    const vq_act32 *a = act;
    __m512 acc[4];
    for (int r = 0; r < 4; r++)
        acc[r] = _mm512_setzero_ps();
    const size_t nb = n / 32;
    size_t b = 0;
    for (; b + 2 <= nb; b += 2) { /* whole pairs: no branch in the loop */
        const act_pair ap = act_pair_load(&a[b], 1, kind);
        _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++) {
            _mm_prefetch((const char *)w + (size_t)(r + PF_ROWS) * rstride + b * bb, _MM_HINT_T0);
            const w_pair wp = w_pair_load((const uint8_t *)w + (size_t)r * rstride + b * bb, 1, kind);
            acc[r] = pair_fma(&wp, &ap, acc[r], kind);
        }
    }
    if (b < nb) { /* an odd last block pairs with zeros */
        const act_pair ap = act_pair_load(&a[b], 0, kind);
        for (int r = 0; r < 4; r++) {
            const w_pair wp = w_pair_load((const uint8_t *)w + (size_t)r * rstride + b * bb, 0, kind);
            acc[r] = pair_fma(&wp, &ap, acc[r], kind);
        }
    }
    for (int r = 0; r < 4; r++)
        out[r] = _mm512_reduce_add_ps(acc[r]);
}

/* Four weight rows against four activation vectors (the j-th at act +
 * j*astride): out[j*ostride + r] for r, j < 4, per (row, vector) exactly
 * dot_q4q5_m's arithmetic (the same bits as dot_<type>), each weight pair
 * decoded once for the four vectors and each activation pair prepared once
 * for the four rows: batched prefill. */
static inline __attribute__((always_inline)) void
tile4_q4q5(const void *w, size_t rstride, const void *act, size_t astride, size_t n, float *out,
           size_t ostride, int kind)
{
    const size_t bb = Q4Q5_BB(kind);
    const vq_act32 *a[4];
    __m512 acc[4][4];
    for (int j = 0; j < 4; j++) {
        a[j] = (const vq_act32 *)(const void *)((const uint8_t *)act + (size_t)j * astride);
        for (int r = 0; r < 4; r++)
            acc[r][j] = _mm512_setzero_ps();
    }
    const size_t nb = n / 32;
    for (size_t b = 0; b < nb; b += 2) {
        const int two = b + 1 < nb; /* an odd last block pairs with zeros */
        w_pair wp[4];
        _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++)
            wp[r] = w_pair_load((const uint8_t *)w + (size_t)r * rstride + b * bb, two, kind);
        _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) {
            const act_pair ap = act_pair_load(&a[j][b], two, kind);
            _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++)
                acc[r][j] = pair_fma(&wp[r], &ap, acc[r][j], kind);
        }
    }
    for (int j = 0; j < 4; j++)
        for (int r = 0; r < 4; r++)
            out[(size_t)j * ostride + (size_t)r] = _mm512_reduce_add_ps(acc[r][j]);
}

#define TILE4(name, kind)                                                                                  \
    static void tile4_##name(const void *w, size_t rs, const void *a, size_t as, size_t n, float *o, size_t os) \
    {                                                                                                      \
        tile4_q4q5(w, rs, a, as, n, o, os, kind);                                                          \
    }
TILE4(q4_0, 0)
TILE4(q4_1, 1)
TILE4(q5_0, 2)
TILE4(q5_1, 3)

vq_tile4_kernel vq_tile4_avx512x_kernel(vq_wtype t)
{
    switch (t) {
    case VQ_W_Q4_0: return tile4_q4_0;
    case VQ_W_Q4_1: return tile4_q4_1;
    case VQ_W_Q5_0: return tile4_q5_0;
    case VQ_W_Q5_1: return tile4_q5_1;
    default: return NULL;
    }
}

static void rows4_q4_0(const void *w, size_t rs, const void *a, size_t n, float *o) { rows4_q4q5(w, rs, a, n, o, 0); }
static void rows4_q4_1(const void *w, size_t rs, const void *a, size_t n, float *o) { rows4_q4q5(w, rs, a, n, o, 1); }
static void rows4_q5_0(const void *w, size_t rs, const void *a, size_t n, float *o) { rows4_q4q5(w, rs, a, n, o, 2); }
static void rows4_q5_1(const void *w, size_t rs, const void *a, size_t n, float *o) { rows4_q4q5(w, rs, a, n, o, 3); }

/* Q8_0 has none: four rows at a time measured slower than one (its
 * single-row kernel streams at ~20 GB/s from L3 on one core, ~11 from
 * memory with its prefetch) */
vq_rows4_kernel vq_rows4_avx512x_kernel(vq_wtype t)
{
    switch (t) {
    case VQ_W_Q4_0: return rows4_q4_0;
    case VQ_W_Q4_1: return rows4_q4_1;
    case VQ_W_Q5_0: return rows4_q5_0;
    case VQ_W_Q5_1: return rows4_q5_1;
    default: return NULL;
    }
}

#define ONE_AND_FOUR(name, body)                                                                   \
    static float dot_##name(const void *w, const void *act, size_t n)                               \
    {                                                                                               \
        float r;                                                                                    \
        body(w, act, 0, 1, n, &r);                                                                  \
        return r;                                                                                   \
    }                                                                                               \
    static void dot4_##name(const void *w, const void *act, size_t stride, size_t n, float *out)    \
    {                                                                                               \
        body(w, act, stride, 4, n, out);                                                            \
    }

#define Q4_0_BODY(w, a, s, m, n, o) dot_q4q5_m(w, a, s, m, n, o, 0)
#define Q4_1_BODY(w, a, s, m, n, o) dot_q4q5_m(w, a, s, m, n, o, 1)
#define Q5_0_BODY(w, a, s, m, n, o) dot_q4q5_m(w, a, s, m, n, o, 2)
#define Q5_1_BODY(w, a, s, m, n, o) dot_q4q5_m(w, a, s, m, n, o, 3)
ONE_AND_FOUR(q4_0, Q4_0_BODY)
ONE_AND_FOUR(q4_1, Q4_1_BODY)
ONE_AND_FOUR(q5_0, Q5_0_BODY)
ONE_AND_FOUR(q5_1, Q5_1_BODY)
ONE_AND_FOUR(q8_0, dot_q8_0_m)

vq_dot_kernel vq_dot_avx512x_kernel(vq_wtype t)
{
    switch (t) {
        VQ_DOT_Q32_TYPES(VQ_DOT_CASE)
    default: return NULL;
    }
}

vq_dot4_kernel vq_dot4_avx512x_kernel(vq_wtype t)
{
    switch (t) {
        VQ_DOT_Q32_TYPES(VQ_DOT4_CASE)
    default: return NULL;
    }
}

/* block b's codes, d and s (act_quantize32's steps after amax) */
static inline void act32_block(const float *x, float d, float id, vq_act32 *o)
{
    const __m512 magic = _mm512_set1_ps(12582912.0f), lim = _mm512_set1_ps(127.0f), vid = _mm512_set1_ps(id);
    __m512i q[2];
    for (int h = 0; h < 2; h++) {
        __m512 v = _mm512_sub_ps(_mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(x + 16 * h), vid), magic), magic);
        v = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, v, _CMP_ORD_Q), v); /* NaN -> 0 */
        v = _mm512_min_ps(_mm512_max_ps(v, _mm512_sub_ps(_mm512_setzero_ps(), lim)), lim);
        q[h] = _mm512_cvttps_epi32(v);
    }
    _mm_storeu_si128((__m128i *)(void *)o->qs, _mm512_cvtepi32_epi8(q[0]));
    _mm_storeu_si128((__m128i *)(void *)(o->qs + 16), _mm512_cvtepi32_epi8(q[1]));
    o->d = d;
    o->s = d * (float)_mm512_reduce_add_epi32(_mm512_add_epi32(q[0], q[1]));
}

/* max |x| over the 32 floats at x, as 16 partial maxima (NaN-free) */
static inline __m512 act32_absmax16(const float *x)
{
    return _mm512_max_ps(_mm512_abs_ps(_mm512_loadu_ps(x + 16)),
                         _mm512_max_ps(_mm512_abs_ps(_mm512_loadu_ps(x)), _mm512_setzero_ps()));
}

/* vq_act_quantize32's twin, the same bytes and floats for every input
 * (NaN and infinities included): per block of 32, amax by max over |x|
 * (a NaN never wins: VMAXPS returns its second operand, the running
 * maximum), d = amax / 127, and each code (x * id + 1.5*2^23) - 1.5*2^23
 * as separate rounded multiply, add and subtract (the reference's float
 * operations, no FMA), NaN to 0, clamped to [-127, 127]; s = d * (sum of
 * the codes). Sixteen blocks at a time take their maxima through one
 * transposing tree (a maximum is exact in any order) and their d and
 * 1 / d as vectors: one block at a time, the reduction and two scalar
 * divisions made each block a chain of dependent steps (~1k TSC cycles for
 * decode's 576-wide activation, on the serial path between jobs). */
void vq_act_quantize32_avx512x(const float *x, size_t n, vq_act32 *a)
{
    const size_t nb = n / 32;
    size_t b = 0;
    for (; b + 16 <= nb; b += 16) {
        const float *xb = x + 32 * b;
        __m512 v[8], u[4], w[2];
        for (int i = 0; i < 8; i++) { /* chunks 0-1: block 2i's partial maxima, 2-3: block 2i+1's */
            const __m512 m0 = act32_absmax16(xb + 64 * i), m1 = act32_absmax16(xb + 64 * i + 32);
            v[i] = _mm512_max_ps(_mm512_shuffle_f32x4(m0, m1, 0x44), _mm512_shuffle_f32x4(m0, m1, 0xEE));
        }
        for (int i = 0; i < 4; i++) /* chunk k: block 4i+k */
            u[i] = _mm512_max_ps(_mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], 0x88),
                                 _mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], 0xDD));
        for (int i = 0; i < 2; i++) /* chunk k, lanes 0-1: block 8i+k; lanes 2-3: block 8i+4+k */
            w[i] = _mm512_max_ps(_mm512_shuffle_ps(u[2 * i], u[2 * i + 1], 0x44),
                                 _mm512_shuffle_ps(u[2 * i], u[2 * i + 1], 0xEE));
        /* lane 4k+j: block k+4j; then put in block order */
        const __m512 r = _mm512_max_ps(_mm512_shuffle_ps(w[0], w[1], 0x88), _mm512_shuffle_ps(w[0], w[1], 0xDD));
        const __m512 amax = _mm512_permutexvar_ps(
            _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), r);
        const __m512 d = _mm512_div_ps(amax, _mm512_set1_ps(127.0f));
        const __m512 id = _mm512_maskz_div_ps(_mm512_cmp_ps_mask(d, _mm512_setzero_ps(), _CMP_GT_OQ),
                                              _mm512_set1_ps(1.0f), d);
        float dv[16], iv[16];
        _mm512_storeu_ps(dv, d);
        _mm512_storeu_ps(iv, id);
        for (int k = 0; k < 16; k++)
            act32_block(xb + 32 * k, dv[k], iv[k], &a[b + (size_t)k]);
    }
    for (; b < nb; b++) {
        const float amax = _mm512_reduce_max_ps(act32_absmax16(x + 32 * b));
        const float d = amax / 127.0f, id = d > 0.0f ? 1.0f / d : 0.0f;
        act32_block(x + 32 * b, d, id, &a[b]);
    }
}
