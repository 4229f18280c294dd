/* rows_avx512.c -- AVX-512 twins of the row decoders (kernels.h):
 * bit-identical to rows_ref.c (the same multiply and add per element).
 *
 * Sixteen codes of b bits (b <= 4) fill 2b bytes and nothing past them is
 * read: for b = 2 every lane takes the one dword and shifts it by 2*lane;
 * for b = 4 lanes 0-7 take the low 32 bits and lanes 8-15 the high ones,
 * shifted by 4*(lane mod 8); b = 1 and 3 read their 2 or 6 bytes with a
 * masked load into every 128-bit lane, and one byte shuffle gives lane i
 * the two bytes that hold bits b*i .. b*i + b - 1, shifted by (b*i) mod 8
 * (no trip through a general register). The codes are left unmasked: a
 * permute reads an index's low 4 bits, so a code's level -- a table's, the
 * integer itself, or a scale times either -- is picked by one permute from a
 * register whose 2^b levels repeat over the 16 lanes (no mask, no convert;
 * the same values and products as the reference's). codes_dot of 2- to 4-bit
 * KIVI keys (no table) puts sixteen tokens in the lanes instead
 * (codes_dot_lanes): a different order of the sums than the reference's,
 * within kernels.h's float rounding. */
#include <immintrin.h>
#include <string.h>

#include "core/vexp.h"
#include "kernels/avx512_sums.h"
#include "kernels/kernels.h"
#include "kernels/prefetch.h"
#include "kernels/rows16_avx512.h"

/* b = 1 or 3: the byte shuffle that gives dword i the bytes (b*i)/8 and
 * (b*i)/8 + 1 of the codes (-128: a zero byte; none past the 2b bytes) */
static const int8_t k_pick1[64] = {
    0, 1, -128, -128, 0, 1, -128, -128, 0, 1, -128, -128, 0, 1, -128, -128,
    0, 1, -128, -128, 0, 1, -128, -128, 0, 1, -128, -128, 0, 1, -128, -128,
    1, -128, -128, -128, 1, -128, -128, -128, 1, -128, -128, -128, 1, -128, -128, -128,
    1, -128, -128, -128, 1, -128, -128, -128, 1, -128, -128, -128, 1, -128, -128, -128,
};
static const int8_t k_pick3[64] = {
    0, 1, -128, -128, 0, 1, -128, -128, 0, 1, -128, -128, 1, 2, -128, -128,
    1, 2, -128, -128, 1, 2, -128, -128, 2, 3, -128, -128, 2, 3, -128, -128,
    3, 4, -128, -128, 3, 4, -128, -128, 3, 4, -128, -128, 4, 5, -128, -128,
    4, 5, -128, -128, 4, 5, -128, -128, 5, -128, -128, -128, 5, -128, -128, -128,
};

/* lane i: the dword holding the 16 codes' code i shifted down to bit 0
 * (higher codes' bits above it: the low 4 bits index a permute table of
 * 2^4 entries, each entry's level from its low b bits) */
static inline __m512i codes16_shifted(const uint8_t *p, int b, __m512i shifts)
{
    __m512i v;
    if (b == 2) { /* 32 bits: every lane gets them */
        uint32_t x;
        memcpy(&x, p, 4);
        v = _mm512_set1_epi32((int)x);
    } else if (b == 4) { /* 64 bits: lanes 0-7 the low half, 8-15 the high */
        long long x;
        memcpy(&x, p, 8);
        v = _mm512_permutexvar_epi32(_mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0),
                                     _mm512_set1_epi64(x));
    } else { /* 1 or 3 bits: 2 or 6 bytes, read with a masked load */
        const __m128i raw = _mm_maskz_loadu_epi8((__mmask16)((1u << (2 * b)) - 1u), p);
        v = _mm512_shuffle_epi8(_mm512_broadcast_i32x4(raw), _mm512_loadu_si512(b == 1 ? k_pick1 : k_pick3));
    }
    return _mm512_srlv_epi32(v, shifts);
}

/* lane k: k mod 2^b, the code whose level a table keeps in lane k (a
 * permute indexed by codes16_shifted reads the low 4 bits, so a table of
 * 2^b levels is repeated over the 16 lanes) */
static inline __m512i level_index(int b)
{
    return _mm512_and_si512(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                            _mm512_set1_epi32((1 << b) - 1));
}

/* the integer levels: lane k holds (float)(k mod 2^b) */
static inline __m512 int_levels(int b) { return _mm512_cvtepi32_ps(level_index(b)); }

/* lane i shifts by 2*i for b = 2 (all 16 lanes read one dword), by
 * 4*(i mod 8) for b = 4 (lanes 8-15 read the second part), by (b*i) mod 8
 * for b = 1 and 3 (the two bytes k_pick1 / k_pick3 give it) */
static inline __m512i lane_shifts(int b)
{
    const __m512i i16 = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    const __m512i i8 = _mm512_set_epi32(7, 6, 5, 4, 3, 2, 1, 0, 7, 6, 5, 4, 3, 2, 1, 0);
    if (b == 1 || b == 3)
        return _mm512_and_si512(_mm512_mullo_epi32(i16, _mm512_set1_epi32(b)), _mm512_set1_epi32(7));
    return _mm512_mullo_epi32(b == 2 ? i16 : i8, _mm512_set1_epi32(b));
}

void vq_lut_row_avx512(const uint8_t *codes, int bits, size_t n, const float *lut, float scale, int add, float *out)
{
    const __m512i sh = lane_shifts(bits);
    /* scale * lut[k mod 2^bits] in lane k, one multiply each as the reference
     * (a vector: a table built by scalar stores would stall its reload) */
    const __m512 levels = _mm512_mul_ps(
        _mm512_set1_ps(scale),
        _mm512_permutexvar_ps(level_index(bits), _mm512_maskz_loadu_ps((__mmask16)((1u << (1 << bits)) - 1u), lut)));
    for (size_t i = 0; i < n; i += 16) {
        __m512 x = _mm512_permutexvar_ps(codes16_shifted(codes + i / 8 * (size_t)bits, bits, sh), levels);
        if (add)
            x = _mm512_add_ps(_mm512_loadu_ps(out + i), x);
        _mm512_storeu_ps(out + i, x);
    }
}

void vq_kivi_row_avx512(const uint8_t *row, int bits, size_t n, const float *s, const float *m, float *out)
{
    const __m512i sh = lane_shifts(bits);
    const __m512 ints = int_levels(bits);
    for (size_t i = 0; i < n; i += 16) {
        __m512 c = _mm512_permutexvar_ps(codes16_shifted(row + i / 8 * (size_t)bits, bits, sh), ints);
        __m512 t = _mm512_mul_ps(_mm512_loadu_ps(s + i), c);
        _mm512_storeu_ps(out + i, _mm512_add_ps(t, _mm512_loadu_ps(m + i)));
    }
}

void vq_lut8_row_avx512(const uint8_t *c8, size_t n, const float *lut, const float *s, const float *m, float *out)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512i idx = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(const void *)(c8 + i)));
        __m512 v = lut ? _mm512_i32gather_ps(idx, lut, 4) : _mm512_cvtepi32_ps(idx);
        __m512 t = _mm512_mul_ps(_mm512_loadu_ps(s + i), v);
        _mm512_storeu_ps(out + i, _mm512_add_ps(t, _mm512_loadu_ps(m + i)));
    }
    for (; i < n; i++) {
        float t = s[i] * (lut ? lut[c8[i]] : (float)c8[i]);
        out[i] = t + m[i];
    }
}

static inline float half_at(const uint8_t *p, size_t k)
{
    uint16_t h;
    memcpy(&h, p + 2 * k, 2);
    return _cvtsh_ss(h);
}

void vq_kivi_group_row_avx512(const uint8_t *row, int bits, size_t n, size_t group, const uint8_t *gs16,
                              const uint8_t *gm16, float *out)
{
    const __m512i sh = lane_shifts(bits);
    const __m512 ints = int_levels(bits);
    for (size_t g0 = 0; g0 < n; g0 += group) {
        const __m512 s = _mm512_set1_ps(half_at(gs16, g0 / group)), m = _mm512_set1_ps(half_at(gm16, g0 / group));
        for (size_t i = g0; i < g0 + group; i += 16) {
            __m512 c = _mm512_permutexvar_ps(codes16_shifted(row + i / 8 * (size_t)bits, bits, sh), ints);
            _mm512_storeu_ps(out + i, _mm512_add_ps(_mm512_mul_ps(s, c), m));
        }
    }
}

void vq_fp16_row_avx512(const uint8_t *src, float *dst, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(src + 2 * i))));
    if (i < n) {
        __mmask16 k = (__mmask16)((1u << (n - i)) - 1u);
        __m256i h = _mm256_maskz_loadu_epi16(k, src + 2 * i);
        _mm512_mask_storeu_ps(dst + i, k, _mm512_cvtph_ps(h));
    }
}

/* 16 tokens per step: one gather of each token's 4 header bytes, the low
 * and the high half converted (exact), then the reference's multiply and
 * division */
void vq_half_ratio_avx512(const uint8_t *base, size_t stride, size_t n, float c, float *out)
{
    if (stride < 4 || stride >= (1u << 27)) {
        vq_half_ratio_ref(base, stride, n, c, out);
        return;
    }
    const __m512i ix = vq_rows16_index(stride);
    const __m512 vc = _mm512_set1_ps(c);
    for (size_t i = 0; i < n; i += 16) {
        const __mmask16 live = vq_rows16_live(n - i);
        const __m512i w = vq_rows16_words(base + i * stride, ix, live);
        const __m512 h0 = vq_low_halves16(w), h1 = vq_low_halves16(_mm512_srli_epi32(w, 16));
        _mm512_mask_storeu_ps(out + i, live, _mm512_div_ps(h0, _mm512_mul_ps(h1, vc)));
    }
}

/* NJ queries (1..4, a constant: no work for absent ones) over all rows,
 * four tokens per pass (up to 16 accumulators): each token's codes are
 * decoded once per 16 channels for all the queries. SIGN: one-bit codes
 * with a table, picked from its two levels by the code bits as a mask (the
 * values the permute would give) */
static inline __attribute__((always_inline)) void
codes_dot_rows(const int NJ, const int SIGN, const uint8_t *codes, size_t rstride, int bits, size_t nt, size_t E,
               const float *lut, const float *const qj[4], float *s, size_t sstride)
{
    const __m512i sh = lane_shifts(bits);
    /* lane k: the level of code k mod 2^bits (lut's, or the integer), looked up
     * by one permute indexed by the shifted codes */
    const __m512 L = lut ? _mm512_permutexvar_ps(level_index(bits),
                                                 _mm512_maskz_loadu_ps((__mmask16)((1u << (1 << bits)) - 1u), lut))
                         : int_levels(bits);
    const __m512 L0 = _mm512_set1_ps(SIGN ? lut[0] : 0.0f), L1 = _mm512_set1_ps(SIGN ? lut[1] : 0.0f);
    for (size_t i = 0; i < nt; i += 4) {
        const uint8_t *r[4];
        for (size_t k = 0; k < 4; k++) /* past the end: the last row again */
            r[k] = codes + (i + k < nt ? i + k : nt - 1) * rstride;
        __m512 a[4][4];
        _Pragma("GCC unroll 4") for (int j = 0; j < NJ; j++)
            _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++) a[j][k] = _mm512_setzero_ps();
        for (size_t e = 0; e < E; e += 16) {
            __m512 c[4];
            _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++) {
                const uint8_t *p = r[k] + e / 8 * (size_t)bits;
                if (SIGN) {
                    uint16_t m;
                    memcpy(&m, p, 2);
                    c[k] = _mm512_mask_blend_ps((__mmask16)m, L0, L1);
                } else {
                    c[k] = _mm512_permutexvar_ps(codes16_shifted(p, bits, sh), L);
                }
            }
            _Pragma("GCC unroll 4") for (int j = 0; j < NJ; j++) {
                __m512 x = _mm512_loadu_ps(qj[j] + e);
                _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++) a[j][k] = _mm512_fmadd_ps(x, c[k], a[j][k]);
            }
        }
        _Pragma("GCC unroll 4") for (int j = 0; j < NJ; j++)
            vq_store4_upto(s + (size_t)j * sstride, i, nt, vq_hsum4x512(a[j][0], a[j][1], a[j][2], a[j][3]));
    }
}

/* lut NULL, 2, 3 or 4 bits: sixteen tokens in the lanes of a register. Dword
 * u of the 16 rows is gathered into U[u] (lane t: row t), each channel's
 * codes are one shift and one mask of it, and each query's sum is four
 * chains of FMAs (channel e in chain e % 4, the query element broadcast),
 * added (c0 + c1) + (c2 + c3) at the end: no horizontal sums. Each lane's
 * sum is the same whatever the rows around it (rows past nt repeat the
 * last; their lanes are not stored). 3-bit codes are read three dwords
 * (32 channels) at a time (lanes_unit3). */
/* channel K of 16 tokens whose code sits in the low bits of X's lanes
 * (bits above it ignored): the codes as floats by one permute of LV (lane
 * k: k & mask, as a float; a permute reads the low 4 bits), then one FMA
 * per query */
static inline __attribute__((always_inline)) void lanes_code(const int NJ, const int K, __m512i X, __m512 LV,
                                                             const float *const qe[4], __m512 a[4][4])
{
    const __m512 v = _mm512_permutexvar_ps(X, LV);
    _Pragma("GCC unroll 4") for (int j = 0; j < NJ; j++) a[j][K % 4] =
        _mm512_fmadd_ps(_mm512_set1_ps(qe[j][K]), v, a[j][K % 4]);
}

/* channel K at bit SH of the dwords U */
static inline __attribute__((always_inline)) void lanes_channel(const int NJ, const int K, const int SH, __m512i U,
                                                                __m512 LV, const float *const qe[4], __m512 a[4][4])
{
    lanes_code(NJ, K, SH ? _mm512_srli_epi32(U, (unsigned)SH) : U, LV, qe, a);
}

/* 3 bits: 32 channels fill three dwords U0, U1, U2 (channel K at bit 3K
 * of the 96); channels 10 and 21 straddle two dwords and are joined by a
 * shift of each */
static inline __attribute__((always_inline)) void lanes_unit3(const int NJ, __m512i U0, __m512i U1, __m512i U2,
                                                              __m512 LV, const float *const qe[4], __m512 a[4][4])
{
#define LANES3(K, U, SH) lanes_channel(NJ, (K), (SH), (U), LV, qe, a)
    LANES3(0, U0, 0), LANES3(1, U0, 3), LANES3(2, U0, 6), LANES3(3, U0, 9), LANES3(4, U0, 12), LANES3(5, U0, 15);
    LANES3(6, U0, 18), LANES3(7, U0, 21), LANES3(8, U0, 24), LANES3(9, U0, 27);
    lanes_code(NJ, 10, _mm512_or_si512(_mm512_srli_epi32(U0, 30), _mm512_slli_epi32(U1, 2)), LV, qe, a);
    LANES3(11, U1, 1), LANES3(12, U1, 4), LANES3(13, U1, 7), LANES3(14, U1, 10), LANES3(15, U1, 13);
    LANES3(16, U1, 16), LANES3(17, U1, 19), LANES3(18, U1, 22), LANES3(19, U1, 25), LANES3(20, U1, 28);
    lanes_code(NJ, 21, _mm512_or_si512(_mm512_srli_epi32(U1, 31), _mm512_slli_epi32(U2, 1)), LV, qe, a);
    LANES3(22, U2, 2), LANES3(23, U2, 5), LANES3(24, U2, 8), LANES3(25, U2, 11), LANES3(26, U2, 14);
    LANES3(27, U2, 17), LANES3(28, U2, 20), LANES3(29, U2, 23), LANES3(30, U2, 26), LANES3(31, U2, 29);
#undef LANES3
}

static inline __attribute__((always_inline)) void codes_dot_lanes(const int NJ, const int BITS, const uint8_t *codes,
                                                                 size_t rstride, size_t nt, size_t E,
                                                                 const float *const qj[4], const float *mins,
                                                                 float *s, size_t sstride)
{
    const size_t nu = E * BITS / 32;
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512 LV = int_levels(BITS);
    for (size_t i = 0; i < nt; i += 16) {
        const size_t live = nt - i < 16 ? nt - i : 16;
        const __m512i rows = _mm512_min_epi32(lane, _mm512_set1_epi32((int)live - 1));
        const __m512i off = _mm512_mullo_epi32(rows, _mm512_set1_epi32((int)rstride));
        const uint8_t *base = codes + i * rstride;
        __m512 a[4][4];
        _Pragma("GCC unroll 4") for (int j = 0; j < NJ; j++)
            _Pragma("GCC unroll 4") for (int c = 0; c < 4; c++) a[j][c] = _mm512_setzero_ps();
        if (BITS == 3)
            for (size_t u = 0; u < nu; u += 3) { /* 32 channels a step */
                const __m512i U0 = _mm512_i32gather_epi32(off, (const void *)(base + 4 * u), 1);
                const __m512i U1 = _mm512_i32gather_epi32(off, (const void *)(base + 4 * u + 4), 1);
                const __m512i U2 = _mm512_i32gather_epi32(off, (const void *)(base + 4 * u + 8), 1);
                const float *qe[4];
                _Pragma("GCC unroll 4") for (int j = 0; j < NJ; j++) qe[j] = qj[j] + u / 3 * 32;
                lanes_unit3(NJ, U0, U1, U2, LV, qe, a);
            }
        else
            for (size_t u = 0; u < nu; u++) {
                const __m512i U = _mm512_i32gather_epi32(off, (const void *)(base + 4 * u), 1);
                const float *qe[4];
                _Pragma("GCC unroll 4") for (int j = 0; j < NJ; j++) qe[j] = qj[j] + u * (32 / BITS);
#define LANES_CH(K) lanes_channel(NJ, (K), (K) * BITS, U, LV, qe, a)
                LANES_CH(0), LANES_CH(1), LANES_CH(2), LANES_CH(3), LANES_CH(4), LANES_CH(5), LANES_CH(6), LANES_CH(7);
                if (BITS == 2)
                    LANES_CH(8), LANES_CH(9), LANES_CH(10), LANES_CH(11), LANES_CH(12), LANES_CH(13), LANES_CH(14),
                        LANES_CH(15);
#undef LANES_CH
            }
        const __mmask16 st = (__mmask16)((1u << live) - 1u);
        _Pragma("GCC unroll 4") for (int j = 0; j < NJ; j++) {
            __m512 t = _mm512_add_ps(_mm512_add_ps(a[j][0], a[j][1]), _mm512_add_ps(a[j][2], a[j][3]));
            if (mins) /* kivi_kdot: the mins' part, one add */
                t = _mm512_add_ps(t, _mm512_set1_ps(mins[j]));
            _mm512_mask_storeu_ps(s + (size_t)j * sstride + i, st, t);
        }
    }
}

/* codes_dot_lanes for nj (1..4) queries and 2, 3 or 4 bits given at run time
 * (mins: NULL, or kivi_kdot's per-query mins' parts) */
static void codes_dot_lanes_any(int nj, int bits, const uint8_t *codes, size_t rstride, size_t nt, size_t E,
                                const float *const qj[4], const float *mins, float *s, size_t sstride)
{
#define LANES_PASS(NJ)                                                                                               \
    (bits == 2   ? codes_dot_lanes(NJ, 2, codes, rstride, nt, E, qj, mins, s, sstride)                              \
     : bits == 3 ? codes_dot_lanes(NJ, 3, codes, rstride, nt, E, qj, mins, s, sstride)                              \
                 : codes_dot_lanes(NJ, 4, codes, rstride, nt, E, qj, mins, s, sstride))
    switch (nj) {
    case 4: LANES_PASS(4); break;
    case 3: LANES_PASS(3); break;
    case 2: LANES_PASS(2); break;
    default: LANES_PASS(1); break;
    }
#undef LANES_PASS
}

void vq_codes_dot_avx512(const uint8_t *codes, size_t rstride, int bits, size_t nt, size_t E, const float *lut,
                         const float *q, size_t qstride, int n_q, float *s, size_t sstride)
{
    /* KIVI keys (no table, 2-4 bits): tokens in lanes (codes_dot_lanes) */
    const int lanes = !lut && bits >= 2 && E % 32 == 0 && rstride < (1u << 26);
    if (bits < 1 || bits > 4 || E % 16) {
        vq_codes_dot_ref(codes, rstride, bits, nt, E, lut, q, qstride, n_q, s, sstride);
        return;
    }
    const int sign = bits == 1 && lut;
    for (int j0 = 0; j0 < n_q; j0 += 4) {
        const int nj = n_q - j0 < 4 ? n_q - j0 : 4;
        const float *qj[4];
        for (int j = 0; j < 4; j++)
            qj[j] = q + (size_t)(j0 + (j < nj ? j : nj - 1)) * qstride;
        float *o = s + (size_t)j0 * sstride;
        if (lanes) {
            codes_dot_lanes_any(nj, bits, codes, rstride, nt, E, qj, NULL, o, sstride);
            continue;
        }
#define CODES_DOT_PASS(NJ)                                                                                           \
    (sign ? codes_dot_rows(NJ, 1, codes, rstride, bits, nt, E, lut, qj, o, sstride)                                  \
          : codes_dot_rows(NJ, 0, codes, rstride, bits, nt, E, lut, qj, o, sstride))
        switch (nj) {
        case 4: CODES_DOT_PASS(4); break;
        case 3: CODES_DOT_PASS(3); break;
        case 2: CODES_DOT_PASS(2); break;
        default: CODES_DOT_PASS(1); break;
        }
#undef CODES_DOT_PASS
    }
}

/* kivi_fold of n_q (1..4) queries against the block's IEEE-half scales and
 * mins at hdr (D a multiple of 16): the reference's products and lane sums */
static inline void kivi_fold_halves(const float *q, size_t qstride, int n_q, const uint8_t *hdr, size_t D, float *qs,
                                    float *base)
{
    for (int j = 0; j < n_q; j++) {
        const float *qj = q + (size_t)j * qstride;
        __m512 lane = _mm512_setzero_ps();
        for (size_t e = 0; e < D; e += 16) {
            const __m512 x = _mm512_loadu_ps(qj + e);
            const __m512 sc = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(hdr + 2 * e)));
            const __m512 mn = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(hdr + 2 * (D + e))));
            _mm512_storeu_ps(qs + (size_t)j * D + e, _mm512_mul_ps(x, sc));
            lane = _mm512_add_ps(lane, _mm512_mul_ps(x, mn));
        }
        float l[16];
        _mm512_storeu_ps(l, lane);
        base[j] = vq_sum16_lanes(l);
    }
}

/* 2-4 bits: per block and four queries the fold (kivi_fold_halves),
 * then codes_dot_lanes with the base added at its store */
void vq_kivi_kdot_avx512(const uint8_t *blocks, size_t bstride, size_t nblk, int bits, size_t G, size_t D,
                         const float *q, size_t qstride, int n_q, float *s, size_t sstride)
{
    const size_t row = D * (size_t)bits / 8;
    if (bits < 2 || bits > 4 || D % 32 || D > VQ_KDOT_MAX_D || row >= (1u << 26)) {
        vq_kivi_kdot_via(vq_fp16_row_avx512, vq_kivi_fold_ref, vq_codes_dot_avx512, blocks, bstride, nblk, bits, G,
                         D, q, qstride, n_q, s, sstride);
        return;
    }
    float qs[4 * VQ_KDOT_MAX_D], base[4];
    for (size_t k = 0; k < nblk; k++) {
        const uint8_t *blk = blocks + k * bstride;
        if (k + 1 < nblk) /* the next block, while this one is scored */
            vq_prefetch_span(blk, bstride, bstride);
        for (int j0 = 0; j0 < n_q; j0 += 4) {
            const int nj = n_q - j0 < 4 ? n_q - j0 : 4;
            kivi_fold_halves(q + (size_t)j0 * qstride, qstride, nj, blk, D, qs, base);
            const float *qj[4];
            for (int j = 0; j < 4; j++)
                qj[j] = qs + (size_t)(j < nj ? j : nj - 1) * D;
            codes_dot_lanes_any(nj, bits, blk + 4 * D, row, G, D, qj, base, s + (size_t)j0 * sstride + k * G,
                                sstride);
        }
    }
}

/* columns [c0, c0 + 16*NV) (NV 1..4) for weight rows j0..j0+NQ-1, in
 * kernels.h's order: per row, t = s * c for the 16 columns of each block
 * (per group met, its scale broadcast by one permute and multiplied by
 * the levels 0, 1, .. (LV: lane k holds k & mask) into a table, from which
 * one permute indexed by the shifted codes takes each column's s * c, the
 * same product), one FMA w * t per accumulator, and wm += w * m for the NQ
 * weights at once (one FMA, lanes = groups); the min sums are added after
 * the last row */
#define KIVI_AXPY_BLOCK(NQ, NV)                                                                               \
    do {                                                                                                      \
        __m512 A[4][4], WM[4];                                                                                \
        _Pragma("GCC unroll 4") for (int jj = 0; jj < (NQ); jj++) {                                             \
            WM[jj] = _mm512_setzero_ps();                                                                     \
            _Pragma("GCC unroll 4") for (int vv = 0; vv < (NV); vv++)                                          \
                A[jj][vv] = _mm512_loadu_ps(acc + (size_t)(j0 + jj) * astride + c0 + 16 * (size_t)vv);         \
        }                                                                                                     \
        __m512i GI[4]; /* each column block's group as a permute index */                                   \
        int NEWG[4];   /* its group differs from the previous block's */                                     \
        _Pragma("GCC unroll 4") for (int vv = 0; vv < (NV); vv++) {                                            \
            GI[vv] = _mm512_set1_epi32((int)((c0 + 16 * (size_t)vv) / group));                                \
            NEWG[vv] = vv == 0 || (c0 + 16 * (size_t)vv) / group != (c0 + 16 * (size_t)vv - 16) / group;      \
        }                                                                                                     \
        for (size_t i = 0; i < nt; i++) {                                                                     \
            const uint8_t *r = rows + i * rstride;                                                            \
            if (c0 == 0) /* the first column pass streams the rows */                                        \
                vq_prefetch_span(r, VQ_PF_AHEAD, rstride);                                                    \
            const __m512 S = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(gmask, r));                              \
            const __m512 M = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(gmask, r + 2 * ng));                     \
            __m512 X[4];                                                                                      \
            _Pragma("GCC unroll 4") for (int jj = 0; jj < (NQ); jj++) {                                        \
                X[jj] = _mm512_set1_ps(w[(size_t)(j0 + jj) * wstride + i]);                                   \
                WM[jj] = _mm512_fmadd_ps(X[jj], M, WM[jj]);                                                   \
            }                                                                                                 \
            __m512 T = S;                                                                                     \
            _Pragma("GCC unroll 4") for (int vv = 0; vv < (NV); vv++) {                                        \
                size_t e = c0 + 16 * (size_t)vv;                                                              \
                if (NEWG[vv])                                                                                 \
                    T = _mm512_mul_ps(_mm512_permutexvar_ps(GI[vv], S), LV);                                  \
                __m512 t = _mm512_permutexvar_ps(codes16_shifted(r + 4 * ng + e / 8 * (size_t)BITS, BITS, sh), T); \
                _Pragma("GCC unroll 4") for (int jj = 0; jj < (NQ); jj++)                                      \
                    A[jj][vv] = _mm512_fmadd_ps(X[jj], t, A[jj][vv]);                                         \
            }                                                                                                 \
        }                                                                                                     \
        _Pragma("GCC unroll 4") for (int jj = 0; jj < (NQ); jj++)                                               \
            _Pragma("GCC unroll 4") for (int vv = 0; vv < (NV); vv++)                                          \
                _mm512_storeu_ps(acc + (size_t)(j0 + jj) * astride + c0 + 16 * (size_t)vv,                     \
                                 _mm512_add_ps(A[jj][vv], _mm512_permutexvar_ps(GI[vv], WM[jj])));            \
    } while (0)

/* one bit width (a constant after inlining, so codes16 has no branch) */
static inline __attribute__((always_inline)) void kivi_axpy_bits(const uint8_t *rows, size_t rstride, const int BITS,
                                                                 size_t nt, size_t D, size_t group, const float *w,
                                                                 size_t wstride, int n_q, float *acc, size_t astride)
{
    const __m512i sh = lane_shifts(BITS);
    const __m512 LV = int_levels(BITS);
    const size_t ng = D / group;
    const __mmask16 gmask = (__mmask16)((1u << ng) - 1u);
    for (int j0 = 0; j0 < n_q; j0 += 4) {
        const int nq = n_q - j0 < 4 ? n_q - j0 : 4;
        for (size_t c0 = 0; c0 < D;) {
            size_t left = (D - c0) / 16;
            if (left >= 4) {
                switch (nq) {
                case 4: KIVI_AXPY_BLOCK(4, 4); break;
                case 3: KIVI_AXPY_BLOCK(3, 4); break;
                case 2: KIVI_AXPY_BLOCK(2, 4); break;
                default: KIVI_AXPY_BLOCK(1, 4); break;
                }
                c0 += 64;
            } else {
                switch (nq) {
                case 4: KIVI_AXPY_BLOCK(4, 1); break;
                case 3: KIVI_AXPY_BLOCK(3, 1); break;
                case 2: KIVI_AXPY_BLOCK(2, 1); break;
                default: KIVI_AXPY_BLOCK(1, 1); break;
                }
                c0 += 16;
            }
        }
    }
}

void vq_kivi_axpy_avx512(const uint8_t *rows, size_t rstride, int bits, size_t nt, size_t D, size_t group,
                         const float *w, size_t wstride, int n_q, float *acc, size_t astride)
{
    if (bits < 1 || bits > 4 || D % 16 || group % 16 || D / group > 16) {
        vq_kivi_axpy_ref(rows, rstride, bits, nt, D, group, w, wstride, n_q, acc, astride);
        return;
    }
    switch (bits) { /* codes16 reads each width */
    case 1: kivi_axpy_bits(rows, rstride, 1, nt, D, group, w, wstride, n_q, acc, astride); break;
    case 2: kivi_axpy_bits(rows, rstride, 2, nt, D, group, w, wstride, n_q, acc, astride); break;
    case 3: kivi_axpy_bits(rows, rstride, 3, nt, D, group, w, wstride, n_q, acc, astride); break;
    default: kivi_axpy_bits(rows, rstride, 4, nt, D, group, w, wstride, n_q, acc, astride); break;
    }
}

/* lut_axpy for NQ (1..4) weight rows and the channels [c0, c0 + 16 nc),
 * nc <= 4: the accumulators stay in registers over all rows */
static inline __attribute__((always_inline)) void
lut_axpy_chunk(const int NQ, const uint8_t *codes, size_t stride, size_t nt, size_t c0, size_t nc, const size_t *offs,
               int bits, __m512 L0, __m512 L1, int two, const float *f, size_t hoff, const float *w, size_t wstride,
               float *acc, size_t astride, int pf)
{
    const __m512i sh = lane_shifts(bits);
    __m512 A[4][4];
    _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++)
        _Pragma("GCC unroll 4") for (size_t u = 0; u < 4; u++)
            A[j][u] = u < nc ? _mm512_loadu_ps(acc + (size_t)j * astride + c0 + 16 * u) : _mm512_setzero_ps();
    for (size_t i = 0; i < nt; i++) {
        const uint8_t *r = codes + i * stride;
        if (pf) /* the first pass over the rows streams them */
            vq_prefetch_span(r, VQ_PF_AHEAD, 1);
        const __m512 fi = _mm512_set1_ps(f ? f[i] : half_at(r + hoff, 0));
        const __m512 l0 = _mm512_mul_ps(fi, L0), l1 = _mm512_mul_ps(fi, L1);
        __m512 v[4] = { _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps() };
        if (bits == 1) { /* each set's 16 bits a lane mask choosing between its two levels (lanes 0, 1 of l) */
            const __m512 a0 = _mm512_permutexvar_ps(_mm512_setzero_si512(), l0);
            const __m512 b0 = _mm512_permutexvar_ps(_mm512_set1_epi32(1), l0);
            const __m512 a1 = _mm512_permutexvar_ps(_mm512_setzero_si512(), l1);
            const __m512 b1 = _mm512_permutexvar_ps(_mm512_set1_epi32(1), l1);
            _Pragma("GCC unroll 4") for (size_t u = 0; u < 4; u++)
            {
                if (u >= nc)
                    break;
                const size_t at = (c0 + 16 * u) / 8;
                uint16_t m0, m1;
                memcpy(&m0, r + offs[0] + at, 2);
                v[u] = _mm512_mask_blend_ps((__mmask16)m0, a0, b0);
                if (two) {
                    memcpy(&m1, r + offs[1] + at, 2);
                    v[u] = _mm512_add_ps(v[u], _mm512_mask_blend_ps((__mmask16)m1, a1, b1));
                }
            }
        } else {
            _Pragma("GCC unroll 4") for (size_t u = 0; u < 4; u++)
            {
                if (u >= nc)
                    break;
                const size_t at = (c0 + 16 * u) / 8 * (size_t)bits;
                v[u] = _mm512_permutexvar_ps(codes16_shifted(r + offs[0] + at, bits, sh), l0);
                if (two)
                    v[u] = _mm512_add_ps(v[u], _mm512_permutexvar_ps(codes16_shifted(r + offs[1] + at, bits, sh), l1));
            }
        }
        _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++)
        {
            const __m512 wj = _mm512_set1_ps(w[(size_t)j * wstride + i]);
            _Pragma("GCC unroll 4") for (size_t u = 0; u < 4; u++) if (u < nc) A[j][u] =
                _mm512_fmadd_ps(wj, v[u], A[j][u]);
        }
    }
    _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++)
        _Pragma("GCC unroll 4") for (size_t u = 0; u < 4; u++) if (u < nc)
            _mm512_storeu_ps(acc + (size_t)j * astride + c0 + 16 * u, A[j][u]);
}

void vq_lut_axpy_avx512(const uint8_t *codes, size_t stride, size_t nt, size_t D, const size_t *offs, int bits,
                        const float *lut, int n_sets, const float *f, size_t hoff, const float *w, size_t wstride,
                        int n_q, float *acc, size_t astride)
{
    if (D % 16 || bits < 1 || bits > 4) {
        vq_lut_axpy_ref(codes, stride, nt, D, offs, bits, lut, n_sets, f, hoff, w, wstride, n_q, acc, astride);
        return;
    }
    const int L = 1 << bits, two = n_sets > 1;
    const __mmask16 lm = (__mmask16)((1u << L) - 1u);
    const __m512i rep = level_index(bits); /* lane k holds lut[k mod L] */
    const __m512 L0 = _mm512_permutexvar_ps(rep, _mm512_maskz_loadu_ps(lm, lut));
    const __m512 L1 = two ? _mm512_permutexvar_ps(rep, _mm512_maskz_loadu_ps(lm, lut + L)) : _mm512_setzero_ps();
    for (size_t c0 = 0; c0 < D; c0 += 64) {
        const size_t nc = D - c0 < 64 ? (D - c0) / 16 : 4;
        for (int j0 = 0; j0 < n_q; j0 += 4) {
            const float *wj = w + (size_t)j0 * wstride;
            float *aj = acc + (size_t)j0 * astride;
            const int pf = c0 == 0 && j0 == 0;
            switch (n_q - j0 < 4 ? n_q - j0 : 4) { /* a constant count: the sums stay in registers */
            case 4: lut_axpy_chunk(4, codes, stride, nt, c0, nc, offs, bits, L0, L1, two, f, hoff, wj, wstride, aj, astride, pf); break;
            case 3: lut_axpy_chunk(3, codes, stride, nt, c0, nc, offs, bits, L0, L1, two, f, hoff, wj, wstride, aj, astride, pf); break;
            case 2: lut_axpy_chunk(2, codes, stride, nt, c0, nc, offs, bits, L0, L1, two, f, hoff, wj, wstride, aj, astride, pf); break;
            default: lut_axpy_chunk(1, codes, stride, nt, c0, nc, offs, bits, L0, L1, two, f, hoff, wj, wstride, aj, astride, pf); break;
            }
        }
    }
}
