/* quants_avx512x.c -- AVX-512 VNNI kernels of the 32-element weight types
 * (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0) against vq_act32 activations: two weight
 * blocks fill one 512-bit register, VPDPBUSD multiplies the unsigned weight
 * codes with the signed activation codes and sums each group of four into
 * 32-bit lanes (lanes 0-7: the first block, 8-15: the second), and a
 * multiply and an FMA apply both blocks' weight and activation scales. Compiled with -mavx512vnni (and F/BW/VL/DQ);
 * only reached through quants.c's table when cpu.h reports
 * VQ_CPU_AVX512_VNNI. Results equal the scalar reference's up to float
 * rounding (tests/test_quants.c). */
#include <immintrin.h>
#include <string.h>

#include "model/quants_impl.h"

static inline float h2f(uint16_t h) { return _cvtsh_ss(h); }

/* 16 bytes of nibbles -> 32 codes: bytes 0..15 low nibbles, 16..31 high. */
static inline __m256i nibbles32(const uint8_t *qs)
{
    __m128i b = _mm_loadu_si128((const __m128i *)(const void *)qs);
    __m256i v = _mm256_set_m128i(_mm_srli_epi16(b, 4), b);
    return _mm256_and_si256(v, _mm256_set1_epi8(0x0f));
}

/* 32 bits -> 32 bytes, byte i = 0x10 if bit i is set, else 0. */
static inline __m256i bits_to_0x10(const uint8_t *qh4)
{
    uint32_t bits;
    memcpy(&bits, qh4, 4);
    return _mm256_maskz_mov_epi8((__mmask32)bits, _mm256_set1_epi8(0x10));
}

static inline __m512i join(__m256i lo, __m256i hi) { return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1); }

/* [a x8 | b x8] */
static inline __m512 scales2(float a, float b)
{
    return _mm512_mask_broadcastss_ps(_mm512_set1_ps(a), 0xFF00, _mm_set_ss(b));
}

/* bytes per block and offset of the codes of Q4_0, Q4_1, Q5_0, Q5_1 */
#define Q4Q5_BB(kind) ((kind) == 0 ? 18u : (kind) == 1 ? 20u : (kind) == 2 ? 22u : 24u)
#define Q4Q5_QOFF(kind) ((kind) == 0 ? 2u : (kind) == 1 ? 4u : (kind) == 2 ? 6u : 8u)

/* one pair of weight blocks at p (the second only if two): the codes as
 * unsigned bytes, the scales [d0 x8 | d1 x8], and each block's constant
 * term per activation sum (the min, or the offset times d) */
typedef struct {
    __m512i u;
    __m512 dw;
    float mw0, mw1;
} q4q5_pair;

static inline __attribute__((always_inline)) q4q5_pair q4q5_decode_pair(const uint8_t *p, int two, int kind)
{
    const size_t bb = Q4Q5_BB(kind), qoff = Q4Q5_QOFF(kind);
    const float off = kind == 0 ? -8.0f : kind == 2 ? -16.0f : 0.0f;
    uint16_t d0, d1 = 0, m0 = 0, m1 = 0;
    memcpy(&d0, p, 2);
    if (two)
        memcpy(&d1, p + bb, 2);
    if (kind == 1 || kind == 3) {
        memcpy(&m0, p + 2, 2);
        if (two)
            memcpy(&m1, p + bb + 2, 2);
    }
    __m256i u0 = nibbles32(p + qoff), u1 = two ? nibbles32(p + bb + qoff) : _mm256_setzero_si256();
    if (kind >= 2) {
        size_t hoff = kind == 2 ? 2 : 4;
        u0 = _mm256_or_si256(u0, bits_to_0x10(p + hoff));
        if (two)
            u1 = _mm256_or_si256(u1, bits_to_0x10(p + bb + hoff));
    }
    float dw0 = h2f(d0), dw1 = two ? h2f(d1) : 0.0f;
    q4q5_pair r;
    r.u = join(u0, u1);
    r.dw = scales2(dw0, dw1);
    r.mw0 = (kind == 1 || kind == 3) ? h2f(m0) : off * dw0;
    r.mw1 = two ? ((kind == 1 || kind == 3) ? h2f(m1) : off * dw1) : 0.0f;
    return r;
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
    float extra[VQ_DOT_MULTI_MAX];
    _Pragma("GCC unroll 4") for (int j = 0; j < m; j++) {
        a[j] = (const vq_act32 *)(const void *)((const uint8_t *)act + (size_t)j * stride);
        acc[j] = _mm512_setzero_ps();
        extra[j] = 0.0f;
    }
    const size_t nb = n / 32;
    for (size_t b = 0; b < nb; b += 2, p += 2 * bb) {
        const int two = b + 1 < nb; /* an odd last block pairs with zeros */
        q4q5_pair wp = q4q5_decode_pair(p, two, kind);
        const __m512i u = wp.u;
        const float mw0 = wp.mw0, mw1 = wp.mw1;
        const __m512 dw = wp.dw;
        _Pragma("GCC unroll 4") for (int j = 0; j < m; j++) {
            const vq_act32 *x0 = &a[j][b];
            __m256i s0 = _mm256_loadu_si256((const __m256i *)(const void *)x0->qs);
            __m256i s1 = two ? _mm256_loadu_si256((const __m256i *)(const void *)x0[1].qs) : _mm256_setzero_si256();
            __m512i isum = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u, join(s0, s1));
            float ad1 = two ? x0[1].d : 0.0f, as1 = two ? x0[1].s : 0.0f;
            __m512 t = _mm512_mul_ps(_mm512_cvtepi32_ps(isum), dw);
            acc[j] = _mm512_fmadd_ps(scales2(x0->d, ad1), t, acc[j]);
            extra[j] += mw0 * x0->s + mw1 * as1;
        }
    }
    for (int j = 0; j < m; j++)
        out[j] = _mm512_reduce_add_ps(acc[j]) + extra[j];
}

static inline __attribute__((always_inline)) void
dot_q8_0_m(const void *w, const void *act, size_t stride, int m, size_t n, float *out)
{
    const vq_blk_q8_0 *x = w;
    const vq_act32 *a[VQ_DOT_MULTI_MAX];
    __m512 acc[VQ_DOT_MULTI_MAX];
    _Pragma("GCC unroll 4") for (int j = 0; j < m; j++) {
        a[j] = (const vq_act32 *)(const void *)((const uint8_t *)act + (size_t)j * stride);
        acc[j] = _mm512_setzero_ps();
    }
    const size_t nb = n / 32;
    for (size_t b = 0; b < nb; b += 2) {
        const int two = b + 1 < nb;
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
 * dot_<type>), the activation blocks and scales loaded once for the four,
 * and four independent rows in flight. */
static inline __attribute__((always_inline)) void
rows4_q4q5(const void *w, size_t rstride, const void *act, size_t n, float *out, int kind)
{
    const size_t bb = Q4Q5_BB(kind);
    const vq_act32 *a = act;
    __m512 acc[4];
    float extra[4];
    for (int r = 0; r < 4; r++)
        acc[r] = _mm512_setzero_ps(), extra[r] = 0.0f;
    const size_t nb = n / 32;
    for (size_t b = 0; b < nb; b += 2) {
        const int two = b + 1 < nb;
        const vq_act32 *x0 = &a[b];
        __m256i s0 = _mm256_loadu_si256((const __m256i *)(const void *)x0->qs);
        __m256i s1 = two ? _mm256_loadu_si256((const __m256i *)(const void *)x0[1].qs) : _mm256_setzero_si256();
        const __m512i sx = join(s0, s1);
        const float ad1 = two ? x0[1].d : 0.0f, as1 = two ? x0[1].s : 0.0f;
        const __m512 ad = scales2(x0->d, ad1);
        _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++) {
            q4q5_pair wp = q4q5_decode_pair((const uint8_t *)w + (size_t)r * rstride + b * bb, two, kind);
            __m512i isum = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wp.u, sx);
            __m512 t = _mm512_mul_ps(_mm512_cvtepi32_ps(isum), wp.dw);
            acc[r] = _mm512_fmadd_ps(ad, t, acc[r]);
            extra[r] += wp.mw0 * x0->s + wp.mw1 * as1;
        }
    }
    for (int r = 0; r < 4; r++)
        out[r] = _mm512_reduce_add_ps(acc[r]) + extra[r];
}

static void rows4_q4_0(const void *w, size_t rs, const void *a, size_t n, float *o) { rows4_q4q5(w, rs, a, n, o, 0); }
static void rows4_q4_1(const void *w, size_t rs, const void *a, size_t n, float *o) { rows4_q4q5(w, rs, a, n, o, 1); }
static void rows4_q5_0(const void *w, size_t rs, const void *a, size_t n, float *o) { rows4_q4q5(w, rs, a, n, o, 2); }
static void rows4_q5_1(const void *w, size_t rs, const void *a, size_t n, float *o) { rows4_q4q5(w, rs, a, n, o, 3); }

/* Q8_0 has none: four rows at a time measured slower than one (its
 * single-row kernel already streams at ~18 GB/s from L2, 7.5 from L3) */
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
