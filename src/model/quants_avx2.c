/* quants_avx2.c -- AVX2 dot kernels for the weight types the default models
 * use (smollm2: Q4_1, Q8_0, F32; gemma3: Q5_0, Q8_0, Q4_K, Q6_K, F32), plus
 * Q4_0, Q5_1, Q2_K, Q3_K, Q5_K, F16 and BF16 (every supported type has an
 * AVX2 kernel). Compiled with -mavx2 -mfma -mf16c; reached only through
 * vq_dot_avx2_kernel() after the CPU reported AVX2 (quants.c).
 *
 * Integer core: _mm256_maddubs_epi16(u, s) multiplies unsigned weight codes
 * u (0..63) with signed int8 activations s (|s| <= 127) and adds pairs into
 * int16: at most 2*63*127 = 16002, no saturation. Signed Q8_0 codes go
 * through the sign trick (|w| as unsigned, sign moved onto s): 2*128*127 =
 * 32512 still fits. Offsets of the codes (Q4_0's -8, Q6_K's -32, ...) and
 * mins are applied once per block from the activation sums (s, bsums), as in
 * the scalar reference (quants_ref.c), which these kernels are tested against.
 * Also the 32-element activation quantizer's twin (vq_act_quantize32_avx2). */
#include <immintrin.h>
#include <string.h>

#include "core/fp16.h"
#include "model/quants_impl.h"

/* Software prefetch distance of the block loops: decode streams each
 * weight row once from memory; one core's demand misses alone fall well
 * short of the memory's rate (quants_avx512x.c measures the same). A
 * prefetch never faults, so running past the row is harmless. */
#define PF_BYTES 2048

static inline float h2f(uint16_t h) { return _cvtsh_ss(h); }

static inline float hsum_ps(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* 16 bytes of nibbles -> 32 codes: lanes 0..15 low nibbles, 16..31 high. */
static inline __m256i nibbles32(const uint8_t *qs)
{
    __m128i b = _mm_loadu_si128((const __m128i *)qs);
    __m256i v = _mm256_set_m128i(_mm_srli_epi16(b, 4), b);
    return _mm256_and_si256(v, _mm256_set1_epi8(0x0f));
}

/* 32 bits -> 32 bytes, byte i = 0x10 if bit i is set, else 0. */
static inline __m256i bits_to_0x10(const uint8_t *qh4)
{
    uint32_t bits;
    memcpy(&bits, qh4, 4);
    const __m256i pick = _mm256_set_epi64x(0x0303030303030303ll, 0x0202020202020202ll,
                                           0x0101010101010101ll, 0x0000000000000000ll);
    __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)bits), pick);
    const __m256i mask = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    v = _mm256_cmpeq_epi8(_mm256_and_si256(v, mask), mask);
    return _mm256_and_si256(v, _mm256_set1_epi8(0x10));
}

/* sum of u*s over 32 bytes as 8 int32 lanes */
static inline __m256i dot_u8s8(__m256i u, __m256i s)
{
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}

/* ---- 32-element types ------------------------------------------------------ */

/* Every quantized kernel body below computes the dots of one weight row with
 * m (1..VQ_DOT_MULTI_MAX) activation vectors at act + j*stride, decoding each
 * weight block once. It is always inlined with a constant m: m = 1 gives the
 * single-row kernel, m = 4 the multi kernel (prefill), so there is one body
 * per format. */

/* kind: 0 = Q4_0, 1 = Q4_1, 2 = Q5_0, 3 = Q5_1 (a constant after inlining). */
static inline __attribute__((always_inline)) void
dot_q4q5_m(const void *w, const void *act, size_t stride, int m, size_t n, float *out, int kind)
{
    const uint8_t *p = w;
    const size_t bb = kind == 0 ? 18 : kind == 1 ? 20 : kind == 2 ? 22 : 24;
    const float off = kind == 0 ? -8.0f : kind == 2 ? -16.0f : 0.0f;
    const vq_act32 *a[VQ_DOT_MULTI_MAX];
    __m256 acc[VQ_DOT_MULTI_MAX];
    float extra[VQ_DOT_MULTI_MAX];
    for (int j = 0; j < m; j++) {
        a[j] = (const vq_act32 *)(const void *)((const uint8_t *)act + (size_t)j * stride);
        acc[j] = _mm256_setzero_ps();
        extra[j] = 0.0f;
    }
    for (size_t b = 0; b < n / 32; b++, p += bb) {
        _mm_prefetch((const char *)p + PF_BYTES, _MM_HINT_T0);
        uint16_t dh, mh = 0;
        memcpy(&dh, p, 2);
        if (kind == 1 || kind == 3)
            memcpy(&mh, p + 2, 2);
        const uint8_t *qs = p + (kind == 0 ? 2 : kind == 1 ? 4 : kind == 2 ? 6 : 8);
        __m256i u = nibbles32(qs);
        if (kind >= 2)
            u = _mm256_or_si256(u, bits_to_0x10(p + (kind == 2 ? 2 : 4)));
        float dw = h2f(dh);
        float mw = (kind == 1 || kind == 3) ? h2f(mh) : off * dw;
        for (int j = 0; j < m; j++) {
            __m256i s = _mm256_loadu_si256((const __m256i *)a[j][b].qs);
            __m256 prod = _mm256_cvtepi32_ps(dot_u8s8(u, s));
            acc[j] = _mm256_fmadd_ps(_mm256_set1_ps(dw * a[j][b].d), prod, acc[j]);
            extra[j] += mw * a[j][b].s;
        }
    }
    for (int j = 0; j < m; j++)
        out[j] = hsum_ps(acc[j]) + extra[j];
}

static inline __attribute__((always_inline)) void
dot_q8_0_m(const void *w, const void *act, size_t stride, int m, size_t n, float *out)
{
    const vq_blk_q8_0 *x = w;
    const vq_act32 *a[VQ_DOT_MULTI_MAX];
    __m256 acc[VQ_DOT_MULTI_MAX];
    for (int j = 0; j < m; j++) {
        a[j] = (const vq_act32 *)(const void *)((const uint8_t *)act + (size_t)j * stride);
        acc[j] = _mm256_setzero_ps();
    }
    for (size_t b = 0; b < n / 32; b++) {
        _mm_prefetch((const char *)(x + b) + PF_BYTES, _MM_HINT_T0);
        __m256i q = _mm256_loadu_si256((const __m256i *)x[b].qs);
        __m256i aq = _mm256_sign_epi8(q, q);
        float dw = h2f(x[b].d);
        for (int j = 0; j < m; j++) {
            __m256i s = _mm256_loadu_si256((const __m256i *)a[j][b].qs);
            __m256i prod = dot_u8s8(aq, _mm256_sign_epi8(s, q));
            acc[j] = _mm256_fmadd_ps(_mm256_set1_ps(dw * a[j][b].d), _mm256_cvtepi32_ps(prod), acc[j]);
        }
    }
    for (int j = 0; j < m; j++)
        out[j] = hsum_ps(acc[j]);
}

/* ---- K types ------------------------------------------------------------------ */

/* Q4_K and Q5_K (has_qh): per 64-element chunk c the low nibbles are
 * sub-block 2c and the high nibbles 2c+1; Q5_K's fifth bits are bits 2c and
 * 2c+1 of qh[0..32). */
static inline __attribute__((always_inline)) void
dot_q45_K_m(const void *w, const void *act, size_t stride, int m, size_t n, float *out, int has_qh)
{
    const uint8_t *p = w;
    const size_t bb = has_qh ? sizeof(vq_blk_q5_K) : sizeof(vq_blk_q4_K);
    const __m256i m4 = _mm256_set1_epi8(0x0f), one = _mm256_set1_epi8(1);
    const vq_act256 *a[VQ_DOT_MULTI_MAX];
    __m256 acc[VQ_DOT_MULTI_MAX];
    __m128 acc_min[VQ_DOT_MULTI_MAX];
    for (int j = 0; j < m; j++) {
        a[j] = (const vq_act256 *)(const void *)((const uint8_t *)act + (size_t)j * stride);
        acc[j] = _mm256_setzero_ps();
        acc_min[j] = _mm_setzero_ps();
    }
    for (size_t b = 0; b < n / 256; b++, p += bb) {
        _mm_prefetch((const char *)p + PF_BYTES, _MM_HINT_T0);
        _mm_prefetch((const char *)p + PF_BYTES + 64, _MM_HINT_T0);
        _mm_prefetch((const char *)p + PF_BYTES + 128, _MM_HINT_T0);
        uint16_t dh, mh;
        memcpy(&dh, p, 2);
        memcpy(&mh, p + 2, 2);
        const uint8_t *qh = p + 16;
        const uint8_t *qs = p + (has_qh ? 48 : 16);
        /* the 12 scale bytes as words A, B, C: scales 0..3 = A & 63,
         * mins 0..3 = B & 63, scales 4..7 = low nibbles of C with A's top
         * two bits, mins 4..7 = high nibbles of C with B's top two bits
         * (the layout of vq_k4_scale_min, four at a time) */
        uint32_t w3[3], sc4[2], mn4[2];
        memcpy(w3, p + 4, 12);
        sc4[0] = w3[0] & 0x3f3f3f3fu;
        mn4[0] = w3[1] & 0x3f3f3f3fu;
        sc4[1] = (w3[2] & 0x0f0f0f0fu) | (((w3[0] >> 6) & 0x03030303u) << 4);
        mn4[1] = ((w3[2] >> 4) & 0x0f0f0f0fu) | (((w3[1] >> 6) & 0x03030303u) << 4);
        uint8_t sc[8];
        memcpy(sc, sc4, 8);
        float d = h2f(dh), dmin = h2f(mh);
        __m128i mins = _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)(const void *)mn4));
        __m256i isum[VQ_DOT_MULTI_MAX];
        for (int j = 0; j < m; j++) {
            /* mins: sum_k min_k * (bsums[2k] + bsums[2k+1]) */
            __m128i bs = _mm_hadd_epi16(_mm_loadu_si128((const __m128i *)a[j][b].bsums),
                                        _mm_loadu_si128((const __m128i *)(a[j][b].bsums + 8)));
            __m128i msum = _mm_madd_epi16(mins, bs);
            acc_min[j] = _mm_fmadd_ps(_mm_set1_ps(-dmin * a[j][b].d), _mm_cvtepi32_ps(msum), acc_min[j]);
            isum[j] = _mm256_setzero_si256();
        }
        __m256i hbits = has_qh ? _mm256_loadu_si256((const __m256i *)qh) : _mm256_setzero_si256();
        for (int c = 0; c < 4; c++) {
            __m256i q = _mm256_loadu_si256((const __m256i *)(qs + 32 * c));
            __m256i lo = _mm256_and_si256(q, m4);
            __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
            if (has_qh) {
                __m256i h0 = _mm256_and_si256(hbits, one);
                __m256i h1 = _mm256_and_si256(_mm256_srli_epi16(hbits, 1), one);
                lo = _mm256_or_si256(lo, _mm256_slli_epi16(h0, 4));
                hi = _mm256_or_si256(hi, _mm256_slli_epi16(h1, 4));
                hbits = _mm256_srli_epi16(hbits, 2);
            }
            __m256i s0 = _mm256_set1_epi16((short)sc[2 * c]);
            __m256i s1 = _mm256_set1_epi16((short)sc[2 * c + 1]);
            for (int j = 0; j < m; j++) {
                const int8_t *s = a[j][b].qs + 64 * c;
                __m256i p0 = _mm256_maddubs_epi16(lo, _mm256_loadu_si256((const __m256i *)s));
                __m256i p1 = _mm256_maddubs_epi16(hi, _mm256_loadu_si256((const __m256i *)(s + 32)));
                p0 = _mm256_madd_epi16(p0, s0);
                p1 = _mm256_madd_epi16(p1, s1);
                isum[j] = _mm256_add_epi32(isum[j], _mm256_add_epi32(p0, p1));
            }
        }
        for (int j = 0; j < m; j++)
            acc[j] = _mm256_fmadd_ps(_mm256_set1_ps(d * a[j][b].d), _mm256_cvtepi32_ps(isum[j]), acc[j]);
    }
    for (int j = 0; j < m; j++) {
        __m128 mm = _mm_add_ps(acc_min[j], _mm_movehl_ps(acc_min[j], acc_min[j]));
        mm = _mm_add_ss(mm, _mm_movehdup_ps(mm));
        out[j] = hsum_ps(acc[j]) + _mm_cvtss_f32(mm);
    }
}

/* Q6_K: per 128-element half, code run k (32 elements) takes its low 4 bits
 * from ql[32*(k&1) ..] (high nibble for k >= 2) and its high 2 bits from
 * qh >> 2k; each run spans two 16-element groups with their own scale. The
 * codes are used unsigned (0..63) and the -32 is applied through bsums. */
static inline __attribute__((always_inline)) void
dot_q6_K_m(const void *w, const void *act, size_t stride, int m, size_t n, float *out)
{
    const vq_blk_q6_K *x = w;
    const __m256i m4 = _mm256_set1_epi8(0x0f), m2 = _mm256_set1_epi8(0x03);
    const vq_act256 *a[VQ_DOT_MULTI_MAX];
    __m256 acc[VQ_DOT_MULTI_MAX];
    for (int j = 0; j < m; j++) {
        a[j] = (const vq_act256 *)(const void *)((const uint8_t *)act + (size_t)j * stride);
        acc[j] = _mm256_setzero_ps();
    }
    for (size_t b = 0; b < n / 256; b++) {
        for (size_t o = 0; o < sizeof x[b]; o += 64)
            _mm_prefetch((const char *)(x + b) + PF_BYTES + o, _MM_HINT_T0);
        const int8_t *sc = x[b].scales;
        __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)sc));
        float d = h2f(x[b].d);
        __m256i isum[VQ_DOT_MULTI_MAX];
        for (int j = 0; j < m; j++) {
            /* the -32 offset: -32 * sum_g scale_g * bsums_g, folded into isum */
            __m256i osum = _mm256_madd_epi16(sc16, _mm256_loadu_si256((const __m256i *)a[j][b].bsums));
            isum[j] = _mm256_slli_epi32(_mm256_sub_epi32(_mm256_setzero_si256(), osum), 5);
        }
        for (int h = 0; h < 2; h++) {
            __m256i l0 = _mm256_loadu_si256((const __m256i *)(x[b].ql + 64 * h));
            __m256i l1 = _mm256_loadu_si256((const __m256i *)(x[b].ql + 64 * h + 32));
            __m256i qh = _mm256_loadu_si256((const __m256i *)(x[b].qh + 32 * h));
            __m256i q[4];
            q[0] = _mm256_or_si256(_mm256_and_si256(l0, m4),
                                   _mm256_slli_epi16(_mm256_and_si256(qh, m2), 4));
            q[1] = _mm256_or_si256(_mm256_and_si256(l1, m4),
                                   _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2), m2), 4));
            q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                                   _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 4), m2), 4));
            q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                                   _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 6), m2), 4));
            for (int k = 0; k < 4; k++) {
                int g = 8 * h + 2 * k;
                __m256i scv = _mm256_set_m128i(_mm_set1_epi16(sc[g + 1]), _mm_set1_epi16(sc[g]));
                for (int j = 0; j < m; j++) {
                    const int8_t *s = a[j][b].qs + 128 * h + 32 * k;
                    __m256i pr = _mm256_maddubs_epi16(q[k], _mm256_loadu_si256((const __m256i *)s));
                    isum[j] = _mm256_add_epi32(isum[j], _mm256_madd_epi16(pr, scv));
                }
            }
        }
        for (int j = 0; j < m; j++)
            acc[j] = _mm256_fmadd_ps(_mm256_set1_ps(d * a[j][b].d), _mm256_cvtepi32_ps(isum[j]), acc[j]);
    }
    for (int j = 0; j < m; j++)
        out[j] = hsum_ps(acc[j]);
}

/* Q2_K and Q3_K: per 128-element half h, 32 bytes of qs give 4 runs of 32
 * codes (bit pairs at shift 2k); run k spans groups 8h+2k and 8h+2k+1 with
 * their own scales. Q2_K: unsigned codes 0..3, x = d*scale*q - dmin*min.
 * Q3_K: the third bit of run (h, k) is bit 4h+k of hmask[l]; codes are
 * used unsigned (lo + 4*bit, 0..7) and the -4 goes through bsums. */
static inline __attribute__((always_inline)) void
dot_q23_K_m(const void *w, const void *act, size_t stride, int m, size_t n, float *out, int is_q3)
{
    const uint8_t *p = w;
    const size_t bb = is_q3 ? sizeof(vq_blk_q3_K) : sizeof(vq_blk_q2_K);
    const __m256i m2 = _mm256_set1_epi8(0x03), one = _mm256_set1_epi8(1);
    const vq_act256 *a[VQ_DOT_MULTI_MAX];
    __m256 acc[VQ_DOT_MULTI_MAX];
    for (int j = 0; j < m; j++) {
        a[j] = (const vq_act256 *)(const void *)((const uint8_t *)act + (size_t)j * stride);
        acc[j] = _mm256_setzero_ps();
    }
    for (size_t b = 0; b < n / 256; b++, p += bb) {
        for (size_t o = 0; o < bb; o += 64)
            _mm_prefetch((const char *)p + PF_BYTES + o, _MM_HINT_T0);
        int8_t sc[16];
        __m256i offs16; /* per-group term multiplying bsums: -min (Q2_K) or -4*scale (Q3_K) */
        float d, dm;    /* isum scale, and the offset term's scale */
        const uint8_t *qs;
        if (is_q3) {
            const vq_blk_q3_K *x = (const vq_blk_q3_K *)(const void *)p;
            /* scale g: low 4 bits from scales[g] (g < 8) or scales[g-8] >> 4,
             * high 2 bits from scales[8 + g%4] >> 2*(g/4); stored + 32 */
            uint32_t w3[3], s4[4];
            memcpy(w3, x->scales, 12);
            s4[0] = (w3[0] & 0x0f0f0f0fu) | ((w3[2] & 0x03030303u) << 4);
            s4[1] = (w3[1] & 0x0f0f0f0fu) | (((w3[2] >> 2) & 0x03030303u) << 4);
            s4[2] = ((w3[0] >> 4) & 0x0f0f0f0fu) | (((w3[2] >> 4) & 0x03030303u) << 4);
            s4[3] = ((w3[1] >> 4) & 0x0f0f0f0fu) | (((w3[2] >> 6) & 0x03030303u) << 4);
            __m128i s = _mm_sub_epi8(_mm_loadu_si128((const __m128i *)(const void *)s4), _mm_set1_epi8(32));
            _mm_storeu_si128((__m128i *)(void *)sc, s);
            offs16 = _mm256_slli_epi16(_mm256_cvtepi8_epi16(s), 2); /* 4*scale, subtracted */
            d = dm = h2f(x->d);
            qs = x->qs;
        } else {
            const vq_blk_q2_K *x = (const vq_blk_q2_K *)(const void *)p;
            __m128i s = _mm_loadu_si128((const __m128i *)x->scales);
            _mm_storeu_si128((__m128i *)(void *)sc, _mm_and_si128(s, _mm_set1_epi8(0x0f)));
            offs16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(s, 4), _mm_set1_epi8(0x0f)));
            d = h2f(x->d);
            dm = h2f(x->dmin);
            qs = x->qs;
        }
        __m256i isum[VQ_DOT_MULTI_MAX];
        for (int j = 0; j < m; j++) {
            __m256i o = _mm256_madd_epi16(offs16, _mm256_loadu_si256((const __m256i *)a[j][b].bsums));
            acc[j] = _mm256_fmadd_ps(_mm256_set1_ps(-dm * a[j][b].d), _mm256_cvtepi32_ps(o), acc[j]);
            isum[j] = _mm256_setzero_si256();
        }
        __m256i hm = is_q3 ? _mm256_loadu_si256((const __m256i *)(const void *)p) : _mm256_setzero_si256();
        for (int h = 0; h < 2; h++) {
            __m256i q2 = _mm256_loadu_si256((const __m256i *)(qs + 32 * h));
            for (int k = 0; k < 4; k++) {
                __m256i q = _mm256_and_si256(_mm256_srli_epi16(q2, 2 * k), m2);
                if (is_q3) {
                    __m256i hb = _mm256_and_si256(_mm256_srli_epi16(hm, 4 * h + k), one);
                    q = _mm256_or_si256(q, _mm256_slli_epi16(hb, 2));
                }
                int g = 8 * h + 2 * k;
                __m256i scv = _mm256_set_m128i(_mm_set1_epi16(sc[g + 1]), _mm_set1_epi16(sc[g]));
                for (int j = 0; j < m; j++) {
                    const int8_t *s = a[j][b].qs + 128 * h + 32 * k;
                    __m256i pr = _mm256_maddubs_epi16(q, _mm256_loadu_si256((const __m256i *)s));
                    isum[j] = _mm256_add_epi32(isum[j], _mm256_madd_epi16(pr, scv));
                }
            }
        }
        for (int j = 0; j < m; j++)
            acc[j] = _mm256_fmadd_ps(_mm256_set1_ps(d * a[j][b].d), _mm256_cvtepi32_ps(isum[j]), acc[j]);
    }
    for (int j = 0; j < m; j++)
        out[j] = hsum_ps(acc[j]);
}

/* Single-row kernels (m = 1) and 4-vector kernels (m = 4) from each body. */
#define KERNELS(name, body_call)                                                       \
    static float dot_##name(const void *w, const void *act, size_t n)                 \
    {                                                                                  \
        float out[1];                                                                  \
        const size_t stride = 0;                                                       \
        const int m = 1;                                                               \
        body_call;                                                                     \
        return out[0];                                                                 \
    }                                                                                  \
    static void dot4_##name(const void *w, const void *act, size_t stride, size_t n,  \
                            float *out)                                                \
    {                                                                                  \
        const int m = 4;                                                               \
        body_call;                                                                     \
    }
KERNELS(q4_0, dot_q4q5_m(w, act, stride, m, n, out, 0))
KERNELS(q4_1, dot_q4q5_m(w, act, stride, m, n, out, 1))
KERNELS(q5_0, dot_q4q5_m(w, act, stride, m, n, out, 2))
KERNELS(q5_1, dot_q4q5_m(w, act, stride, m, n, out, 3))
KERNELS(q8_0, dot_q8_0_m(w, act, stride, m, n, out))
KERNELS(q4_K, dot_q45_K_m(w, act, stride, m, n, out, 0))
KERNELS(q5_K, dot_q45_K_m(w, act, stride, m, n, out, 1))
KERNELS(q6_K, dot_q6_K_m(w, act, stride, m, n, out))
KERNELS(q2_K, dot_q23_K_m(w, act, stride, m, n, out, 0))
KERNELS(q3_K, dot_q23_K_m(w, act, stride, m, n, out, 1))

/* ---- float weights ---------------------------------------------------------------- */

/* kind: 0 = F32, 1 = F16, 2 = BF16 */
static inline __m256 load8(const uint8_t *p, size_t i, int kind)
{
    if (kind == 0)
        return _mm256_loadu_ps((const float *)(const void *)(p + 4 * i));
    __m128i h = _mm_loadu_si128((const __m128i *)(p + 2 * i));
    if (kind == 1)
        return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

static inline float dot_float(const void *w, const void *act, size_t n, int kind)
{
    const uint8_t *p = w;
    const float *x = act;
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    __m256 a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        a0 = _mm256_fmadd_ps(load8(p, i, kind), _mm256_loadu_ps(x + i), a0);
        a1 = _mm256_fmadd_ps(load8(p, i + 8, kind), _mm256_loadu_ps(x + i + 8), a1);
        a2 = _mm256_fmadd_ps(load8(p, i + 16, kind), _mm256_loadu_ps(x + i + 16), a2);
        a3 = _mm256_fmadd_ps(load8(p, i + 24, kind), _mm256_loadu_ps(x + i + 24), a3);
    }
    for (; i + 8 <= n; i += 8)
        a0 = _mm256_fmadd_ps(load8(p, i, kind), _mm256_loadu_ps(x + i), a0);
    float acc = hsum_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    for (; i < n; i++) {
        uint16_t h;
        float v;
        if (kind == 0) {
            memcpy(&v, p + 4 * i, 4);
        } else {
            memcpy(&h, p + 2 * i, 2);
            v = kind == 1 ? _cvtsh_ss(h) : vq_bf16_to_fp32(h);
        }
        acc += v * x[i];
    }
    return acc;
}

static float dot_f32(const void *w, const void *a, size_t n) { return dot_float(w, a, n, 0); }
static float dot_f16(const void *w, const void *a, size_t n) { return dot_float(w, a, n, 1); }
static float dot_bf16(const void *w, const void *a, size_t n) { return dot_float(w, a, n, 2); }

/* ---- activation quantization ------------------------------------------------ */

/* vq_act_quantize32's bytes (quants_ref.c): the block's max |x| by
 * comparisons that a NaN never wins, the same multiply, add and subtract
 * of 1.5 * 2^23 to round to nearest even, NaN to 0, clamp to +-127. The
 * packs leave 32-bit groups in the order 0 4 1 5 2 6 3 7; one permute
 * restores it. */
void vq_act_quantize32_avx2(const float *x, size_t n, vq_act32 *a)
{
    const __m256 magic = _mm256_set1_ps(12582912.0f), lim = _mm256_set1_ps(127.0f), nlim = _mm256_set1_ps(-127.0f);
    const __m256 sign = _mm256_set1_ps(-0.0f);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (size_t b = 0; b < n / 32; b++) {
        __m256 xs[4], m = _mm256_setzero_ps();
        for (int h = 0; h < 4; h++) {
            xs[h] = _mm256_loadu_ps(x + 32 * b + 8 * h);
            m = _mm256_max_ps(_mm256_andnot_ps(sign, xs[h]), m); /* (NaN: m stays) */
        }
        __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
        m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
        m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
        const float amax = _mm_cvtss_f32(m4);
        const float d = amax / 127.0f, id = d > 0.0f ? 1.0f / d : 0.0f;
        const __m256 vid = _mm256_set1_ps(id);
        __m256i q[4];
        for (int h = 0; h < 4; h++) {
            __m256 v = _mm256_sub_ps(_mm256_add_ps(_mm256_mul_ps(xs[h], vid), magic), magic);
            v = _mm256_and_ps(v, _mm256_cmp_ps(v, v, _CMP_ORD_Q)); /* NaN -> 0 */
            q[h] = _mm256_cvttps_epi32(_mm256_min_ps(_mm256_max_ps(v, nlim), lim));
        }
        const __m256i q8 = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
        vq_act32 *o = &a[b];
        _mm256_storeu_si256((__m256i *)(void *)o->qs, _mm256_permutevar8x32_epi32(q8, order));
        __m256i s = _mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3]));
        __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
        s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4e));
        s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xb1));
        o->d = d;
        o->s = d * (float)_mm_cvtsi128_si32(s4);
    }
}

vq_dot_kernel vq_dot_avx2_kernel(vq_wtype t)
{
    switch (t) {
        VQ_DOT_FLOAT_TYPES(VQ_DOT_CASE)
        VQ_DOT_Q32_TYPES(VQ_DOT_CASE)
        VQ_DOT_QK_TYPES(VQ_DOT_CASE)
    default: return NULL;
    }
}

vq_dot4_kernel vq_dot4_avx2_kernel(vq_wtype t)
{
    switch (t) {
        VQ_DOT_Q32_TYPES(VQ_DOT4_CASE)
        VQ_DOT_QK_TYPES(VQ_DOT4_CASE)
    default: return NULL;
    }
}
