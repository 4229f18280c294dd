/* lut_axpy_avx2.c -- AVX2 + FMA + F16C twin of kernels.h lut_axpy
 * (weighted sums of rows of code levels: TurboQuant's values), with the
 * reference's bits: per row the levels scaled by the factor (f_i * lut[k],
 * one multiply each, as the reference's f_i * lut[c]), the code's level
 * picked by a permute (codes_avx2.h), the second set's added (one add),
 * then one FMA w * v per accumulator element, row after row.
 *
 * Sixteen channels and up to four weight rows at a time (8 accumulators
 * that stay in registers over all the rows); each row's codes are decoded
 * once for the four. */
#include <immintrin.h>
#include <string.h>

#include "kernels/codes_avx2.h"
#include "kernels/kernels.h"
#include "kernels/prefetch.h"

/* the row's factor: f[i], or the IEEE half at r + hoff (exact) */
static inline float factor(const float *f, size_t i, const uint8_t *r, size_t hoff)
{
    if (f)
        return f[i];
    uint16_t h;
    memcpy(&h, r + hoff, 2);
    return _cvtsh_ss(h);
}

/* channels [c0, c0 + 16) for weight rows 0 .. NQ-1 (NQ 1..4, a constant) */
static inline __attribute__((always_inline)) void
lut_axpy16(const int NQ, const int BITS, const int TWO, const uint8_t *codes, size_t stride, size_t nt, size_t c0,
           const size_t *offs, const float *lut, const float *f, size_t hoff, const float *w, size_t wstride,
           float *acc, size_t astride, int pf)
{
    const __m256i sh0 = vq_codes_shifts(BITS, 0), sh1 = vq_codes_shifts(BITS, 1);
    const size_t L = (size_t)1 << BITS;
    /* the levels as permute tables (vq_level_of) */
    const __m256 A0 = vq_levels8(lut, BITS < 4 ? BITS : 3), A1 = BITS == 4 ? _mm256_loadu_ps(lut + 8) : A0;
    const __m256 B0 = TWO ? vq_levels8(lut + L, BITS < 4 ? BITS : 3) : A0;
    const __m256 B1 = TWO && BITS == 4 ? _mm256_loadu_ps(lut + L + 8) : A0;
    __m256 A[4][2];
    _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++) {
        A[j][0] = _mm256_loadu_ps(acc + (size_t)j * astride + c0);
        A[j][1] = _mm256_loadu_ps(acc + (size_t)j * astride + c0 + 8);
    }
    const size_t at = c0 / 8 * (size_t)BITS;
    for (size_t i = 0; i < nt; i++) {
        const uint8_t *r = codes + i * stride;
        if (pf) /* the first pass over the rows streams them */
            vq_prefetch_span(r, VQ_PF_AHEAD, 1);
        const __m256 fi = _mm256_set1_ps(factor(f, i, r, hoff));
        __m256i lo, hi;
        vq_codes16(r + offs[0] + at, BITS, sh0, sh1, &lo, &hi);
        const __m256 a0 = _mm256_mul_ps(fi, A0), a1 = BITS == 4 ? _mm256_mul_ps(fi, A1) : a0;
        __m256 v0 = vq_level_of(lo, BITS, a0, a1), v1 = vq_level_of(hi, BITS, a0, a1);
        if (TWO) {
            vq_codes16(r + offs[1] + at, BITS, sh0, sh1, &lo, &hi);
            const __m256 b0 = _mm256_mul_ps(fi, B0), b1 = BITS == 4 ? _mm256_mul_ps(fi, B1) : b0;
            v0 = _mm256_add_ps(v0, vq_level_of(lo, BITS, b0, b1));
            v1 = _mm256_add_ps(v1, vq_level_of(hi, BITS, b0, b1));
        }
        _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++) {
            const __m256 wj = _mm256_broadcast_ss(w + (size_t)j * wstride + i);
            A[j][0] = _mm256_fmadd_ps(wj, v0, A[j][0]);
            A[j][1] = _mm256_fmadd_ps(wj, v1, A[j][1]);
        }
    }
    _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++) {
        _mm256_storeu_ps(acc + (size_t)j * astride + c0, A[j][0]);
        _mm256_storeu_ps(acc + (size_t)j * astride + c0 + 8, A[j][1]);
    }
}

/* one bit width and set count (constants after inlining) */
static inline __attribute__((always_inline)) void
lut_axpy_bits(const int BITS, const int TWO, const uint8_t *codes, size_t stride, size_t nt, size_t D,
              const size_t *offs, const float *lut, const float *f, size_t hoff, const float *w, size_t wstride,
              int n_q, float *acc, size_t astride)
{
    for (size_t c0 = 0; c0 < D; c0 += 16)
        for (int j0 = 0; j0 < n_q; j0 += 4) {
            const float *wj = w + (size_t)j0 * wstride;
            float *aj = acc + (size_t)j0 * astride;
            const int pf = c0 == 0 && j0 == 0;
            switch (n_q - j0 < 4 ? n_q - j0 : 4) {
            case 4: lut_axpy16(4, BITS, TWO, codes, stride, nt, c0, offs, lut, f, hoff, wj, wstride, aj, astride, pf); break;
            case 3: lut_axpy16(3, BITS, TWO, codes, stride, nt, c0, offs, lut, f, hoff, wj, wstride, aj, astride, pf); break;
            case 2: lut_axpy16(2, BITS, TWO, codes, stride, nt, c0, offs, lut, f, hoff, wj, wstride, aj, astride, pf); break;
            default: lut_axpy16(1, BITS, TWO, codes, stride, nt, c0, offs, lut, f, hoff, wj, wstride, aj, astride, pf); break;
            }
        }
}

#define LUT_AXPY_BITS(B, T) lut_axpy_bits(B, T, codes, stride, nt, D, offs, lut, f, hoff, w, wstride, n_q, acc, astride)

void vq_lut_axpy_avx2(const uint8_t *codes, size_t stride, size_t nt, size_t D, const size_t *offs, int bits,
                      const float *lut, int n_sets, const float *f, size_t hoff, const float *w, size_t wstride,
                      int n_q, float *acc, size_t astride)
{
    if (D % 16 || bits < 1 || bits > 4) {
        vq_lut_axpy_ref(codes, stride, nt, D, offs, bits, lut, n_sets, f, hoff, w, wstride, n_q, acc, astride);
        return;
    }
    const int two = n_sets > 1;
    switch (bits) {
    case 1: two ? LUT_AXPY_BITS(1, 1) : LUT_AXPY_BITS(1, 0); break;
    case 2: two ? LUT_AXPY_BITS(2, 1) : LUT_AXPY_BITS(2, 0); break;
    case 3: two ? LUT_AXPY_BITS(3, 1) : LUT_AXPY_BITS(3, 0); break;
    default: two ? LUT_AXPY_BITS(4, 1) : LUT_AXPY_BITS(4, 0); break;
    }
}
