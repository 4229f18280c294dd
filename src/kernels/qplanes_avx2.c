/* qplanes_avx2.c -- AVX2 twin of vq_qplanes_encode (kernels/qplanes.h):
 * the reference's bytes for finite y (also the AVX-512 table's entry).
 *
 * lo and hi by vector minima and maxima (exact in any order; only a zero
 * can differ in bits from an equal value, so a zero extreme is taken as
 * the reference's running comparison takes it, the first in order), the
 * levels with the reference's subtraction, division and half-up rounding,
 * 32 of them packed to bytes in order, each plane by one byte shift and
 * VPMOVMSKB, and a unit's 8 nibble tables two per register by VPSHUFB: the
 * even tables (0, 2 | 4, 6) and the odd ones (1, 3 | 5, 7) of each 16
 * levels, stored low-nibble half first (kernels/nibble_tables.h). */
#include <immintrin.h>
#include <string.h>

#include "core/io.h"
#include "kernels/qplanes.h"

/* v as the reference's running comparison leaves it: the first y_d equal
 * to v (v an extreme of y) */
static float first_equal(const float *y, int D, float v)
{
    if (v != 0.0f)
        return v;
    for (int d = 0; d < D; d++)
        if (y[d] == 0.0f)
            return y[d];
    return v;
}

static inline float hmin8(__m256 v)
{
    __m128 x = _mm_min_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    x = _mm_min_ps(x, _mm_movehl_ps(x, x));
    return _mm_cvtss_f32(_mm_min_ss(x, _mm_movehdup_ps(x)));
}

static inline float hmax8(__m256 v)
{
    __m128 x = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    x = _mm_max_ps(x, _mm_movehl_ps(x, x));
    return _mm_cvtss_f32(_mm_max_ss(x, _mm_movehdup_ps(x)));
}

/* the levels of 8 floats at y (the reference's steps) */
static inline __m256i levels8(const float *y, __m256 vl, __m256 vd, __m256 vm)
{
    __m256 x = _mm256_min_ps(_mm256_div_ps(_mm256_sub_ps(_mm256_loadu_ps(y), vl), vd), vm);
    const __m256 r = _mm256_round_ps(x, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m256 up = _mm256_cmp_ps(_mm256_sub_ps(x, r), _mm256_set1_ps(0.5f), _CMP_GE_OQ);
    x = _mm256_add_ps(r, _mm256_and_ps(up, _mm256_set1_ps(1.0f)));
    return _mm256_cvttps_epi32(x);
}

void vq_qplanes_encode_avx2(const float *y, int D, int qbits, uint8_t *qbuf)
{
    if (D <= 0 || D % 32 || qbits < 1 || qbits > 8) {
        vq_qplanes_encode_ref(y, D, qbits, qbuf);
        return;
    }
    __m256 mn = _mm256_loadu_ps(y), mx = mn;
    for (int d = 8; d < D; d += 8) {
        const __m256 v = _mm256_loadu_ps(y + d);
        mn = _mm256_min_ps(mn, v), mx = _mm256_max_ps(mx, v);
    }
    const float lo = first_equal(y, D, hmin8(mn)), hi = first_equal(y, D, hmax8(mx));
    const unsigned vmax = (1u << qbits) - 1u;
    const float delta = hi > lo ? (hi - lo) / (float)vmax : 1.0f;
    uint8_t *planes = qbuf + 12, *tables = planes + (size_t)qbits * (size_t)D / 8;
    const __m256 vl = _mm256_set1_ps(lo), vd = _mm256_set1_ps(delta), vm = _mm256_set1_ps((float)vmax);
    /* the tables' lookups within 16 levels: even tables (lanes 0 | 8 + k),
     * odd ones (4 + k | 12 + k); mask k 0xFF at the entries e with bit k */
    __m256i ev[4], od[4], mk[4];
    for (int k = 0; k < 4; k++) {
        ev[k] = _mm256_setr_m128i(_mm_set1_epi8((char)k), _mm_set1_epi8((char)(8 + k)));
        od[k] = _mm256_setr_m128i(_mm_set1_epi8((char)(4 + k)), _mm_set1_epi8((char)(12 + k)));
        const __m128i e = _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
        const __m128i bit = _mm_set1_epi8((char)(1 << k));
        const __m128i m = _mm_cmpeq_epi8(_mm_and_si128(e, bit), bit);
        mk[k] = _mm256_setr_m128i(m, m);
    }
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    __m256i sum = _mm256_setzero_si256();
    for (int d0 = 0; d0 < D; d0 += 32) { /* a unit of 32 levels */
        __m256i u[4];
        for (int t = 0; t < 4; t++) {
            u[t] = levels8(y + d0 + 8 * t, vl, vd, vm);
            sum = _mm256_add_epi32(sum, u[t]);
        }
        /* the 32 levels as bytes in order (every level <= 255) */
        const __m256i B = _mm256_permutevar8x32_epi32(
            _mm256_packus_epi16(_mm256_packus_epi32(u[0], u[1]), _mm256_packus_epi32(u[2], u[3])), order);
        for (int j = 0; j < qbits; j++) {
            /* bit j of each byte to its top (within 16 bits, nothing else lands on bit 7 or 15) */
            const uint32_t bits = (uint32_t)_mm256_movemask_epi8(_mm256_slli_epi16(B, 7 - j));
            uint8_t le[4] = { (uint8_t)bits, (uint8_t)(bits >> 8), (uint8_t)(bits >> 16), (uint8_t)(bits >> 24) };
            memcpy(planes + (size_t)j * (size_t)D / 8 + (size_t)d0 / 8, le, 4);
        }
        if (qbits > VQ_NIBBLE_QBITS)
            continue;
        uint8_t *dst = tables + 4 * (size_t)d0;
        for (int h = 0; h < 2; h++) { /* levels 16h..16h+15: tables 4h..4h+3 */
            const __m256i src = _mm256_broadcastsi128_si256(h ? _mm256_extracti128_si256(B, 1) : _mm256_castsi256_si128(B));
            __m256i te = _mm256_setzero_si256(), to = _mm256_setzero_si256();
            for (int k = 0; k < 4; k++) {
                te = _mm256_add_epi8(te, _mm256_and_si256(_mm256_shuffle_epi8(src, ev[k]), mk[k]));
                to = _mm256_add_epi8(to, _mm256_and_si256(_mm256_shuffle_epi8(src, od[k]), mk[k]));
            }
            _mm256_storeu_si256((__m256i *)(void *)(dst + 32 * (size_t)h), te);      /* tables 4h, 4h + 2 */
            _mm256_storeu_si256((__m256i *)(void *)(dst + 64 + 32 * (size_t)h), to); /* 4h + 1, 4h + 3 */
        }
    }
    const __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(sum), _mm256_extracti128_si256(sum, 1));
    const __m128i s2 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4E));
    const uint32_t total = (uint32_t)_mm_cvtsi128_si32(_mm_add_epi32(s2, _mm_shuffle_epi32(s2, 0xB1)));
    vq_put_f32(qbuf, lo);
    vq_put_f32(qbuf + 4, delta);
    vq_put_f32(qbuf + 8, (float)(unsigned long)total);
}
