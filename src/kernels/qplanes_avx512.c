/* qplanes_avx512.c -- AVX-512 (F/BW) twin of vq_qplanes_encode
 * (kernels/qplanes.h): the reference's bytes for finite y.
 *
 * lo and hi by vector minima and maxima (exact in any order; only a zero
 * can differ in bits from an equal value, so a zero extreme is taken as
 * the reference's running comparison takes it, the first in order), the
 * levels 16 at a time with the reference's one subtraction and division
 * and its half-up rounding (x - trunc(x) >= 0.5, exact), the bit planes 64
 * levels at a time by byte tests (bit d of the mask = level d), and the
 * nibble tables four at a time: each 128-bit lane one table, its 16
 * entries the sum of the level bytes that VPSHUFB picks where entry e has
 * bit k set, two such registers per unit of 32 levels split into its even
 * and odd tables by two lane shuffles. */
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

void vq_qplanes_encode_avx512(const float *y, int D, int qbits, uint8_t *qbuf)
{
    if (D <= 0 || D % 32 || qbits < 1 || qbits > 8) {
        vq_qplanes_encode_ref(y, D, qbits, qbuf);
        return;
    }
    __m512 mn = _mm512_loadu_ps(y), mx = mn;
    for (int d = 16; d < D; d += 16) {
        const __m512 v = _mm512_loadu_ps(y + d);
        mn = _mm512_min_ps(mn, v), mx = _mm512_max_ps(mx, v);
    }
    const float lo = first_equal(y, D, _mm512_reduce_min_ps(mn)), hi = first_equal(y, D, _mm512_reduce_max_ps(mx));
    const unsigned vmax = (1u << qbits) - 1u;
    const float delta = hi > lo ? (hi - lo) / (float)vmax : 1.0f;
    uint8_t *planes = qbuf + 12, *tables = planes + (size_t)qbits * (size_t)D / 8;
    const __m512 vl = _mm512_set1_ps(lo), vd = _mm512_set1_ps(delta), vm = _mm512_set1_ps((float)vmax);
    /* the tables' lookups: lane L of index k picks level 4L + k (VPSHUFB
     * within the lane), mask k is 0xFF at the entries e with bit k set */
    const __m512i lane4 = _mm512_set_epi32(12, 12, 12, 12, 8, 8, 8, 8, 4, 4, 4, 4, 0, 0, 0, 0);
    const __m512i entry = _mm512_broadcast_i32x4(_mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
    __m512i ix[4], mk[4];
    for (int k = 0; k < 4; k++) {
        /* every byte of lane L: 4L + k */
        ix[k] = _mm512_mullo_epi32(_mm512_add_epi32(lane4, _mm512_set1_epi32(k)), _mm512_set1_epi32(0x01010101));
        mk[k] = _mm512_movm_epi8(_mm512_test_epi8_mask(entry, _mm512_set1_epi8((char)(1 << k))));
    }
    __m512i sum = _mm512_setzero_si512();
    for (int d0 = 0; d0 < D; d0 += 64) {
        const int n = D - d0 < 64 ? D - d0 : 64; /* 64 or 32 */
        __m128i b[4];
        __m512i U = _mm512_setzero_si512();
        for (int t = 0; 16 * t < n; t++) {
            __m512 x = _mm512_div_ps(_mm512_sub_ps(_mm512_loadu_ps(y + d0 + 16 * t), vl), vd);
            x = _mm512_min_ps(x, vm);
            __m512 r = _mm512_roundscale_ps(x, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
            const __mmask16 up = _mm512_cmp_ps_mask(_mm512_sub_ps(x, r), _mm512_set1_ps(0.5f), _CMP_GE_OQ);
            r = _mm512_mask_add_ps(r, up, r, _mm512_set1_ps(1.0f));
            const __m512i ui = _mm512_cvttps_epi32(r);
            sum = _mm512_add_epi32(sum, ui);
            b[t] = _mm512_cvtepi32_epi8(ui);
        }
        U = _mm512_inserti32x4(U, b[0], 0);
        U = _mm512_inserti32x4(U, b[1], 1);
        if (n == 64)
            U = _mm512_inserti32x4(_mm512_inserti32x4(U, b[2], 2), b[3], 3);
        for (int j = 0; j < qbits; j++) {
            const uint64_t bits = _mm512_test_epi8_mask(U, _mm512_set1_epi8((char)(1 << j)));
            uint8_t le[8];
            for (int k = 0; k < 8; k++)
                le[k] = (uint8_t)(bits >> (8 * k));
            memcpy(planes + (size_t)j * (size_t)D / 8 + (size_t)d0 / 8, le, (size_t)n / 8);
        }
        if (qbits > VQ_NIBBLE_QBITS)
            continue;
        for (int t = 0; 16 * t < n; t += 2) { /* a unit of 32 levels: tables 0..3 in e[0], 4..7 in e[1] */
            __m512i e[2];
            for (int h = 0; h < 2; h++) {
                const __m512i src = _mm512_broadcast_i32x4(b[t + h]);
                e[h] = _mm512_setzero_si512();
                for (int k = 0; k < 4; k++)
                    e[h] = _mm512_add_epi8(e[h], _mm512_and_si512(_mm512_shuffle_epi8(src, ix[k]), mk[k]));
            }
            /* the even tables, then the odd (kernels/nibble_tables.h) */
            uint8_t *dst = tables + 4 * (size_t)(d0 + 16 * t);
            _mm512_storeu_si512((void *)dst, _mm512_shuffle_i64x2(e[0], e[1], 0x88));
            _mm512_storeu_si512((void *)(dst + 64), _mm512_shuffle_i64x2(e[0], e[1], 0xDD));
        }
    }
    vq_put_f32(qbuf, lo);
    vq_put_f32(qbuf + 4, delta);
    vq_put_f32(qbuf + 8, (float)(unsigned long)_mm512_reduce_add_epi32(sum));
}
