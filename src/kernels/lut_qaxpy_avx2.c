/* lut_qaxpy_avx2.c -- AVX2 + FMA twin of vq_lut_qaxpy
 * (kernels/lut_qaxpy.h): the reference's bits.
 *
 * The integer sums I_e = sum_i q_i lev[c_ie] of a block are taken in float
 * registers: every product is an integer of at most 127 * 127 and every
 * partial sum of at most 32 of them stays below 2^24, so each FMA of a
 * weight q_i (as a float) and a level (as a float, picked by a permute of
 * the codes, codes_avx2.h) is exact and the block's sum is I_e itself.
 * Per block the weights are made as the other int8-weight twins make
 * them (kernels/wq_avx2.h: the reference's rounding), then F = fmaf(s, I,
 * F). Sixteen channels and up to four weight rows at a time; each row's
 * codes are decoded once for the four. */
#include <immintrin.h>
#include <string.h>

#include "kernels/codes_avx2.h"
#include "kernels/kivi_qaxpy.h"
#include "kernels/lut_qaxpy.h"
#include "kernels/prefetch.h"
#include "kernels/wq_avx2.h"

#define LQ2_MAXQ 4

/* the block's weights of weight row j (w at its row b) as floats q[0..32)
 * (0 past the m rows) for the factors fb (0 past m): kernels/wq_avx2.h's
 * rounding of a_i = w_i * f_i; returns s = (A / 127) * step */
static float block_weights(const float *w, size_t wstride, int j, size_t b, size_t m, const float fb[VQ_KQ_BLOCK],
                           const __m256i live[4], float step, float q[VQ_KQ_BLOCK])
{
    __m256 W[1][4], a[4];
    vq_wq_load(w, wstride, j, 1, b, m, W);
    _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++) a[k] = _mm256_mul_ps(W[0][k], _mm256_loadu_ps(fb + 8 * k));
    int8_t q8[VQ_KQ_BLOCK];
    int32_t sum;
    const float d = vq_wq_round32(a, live, q8, NULL, &sum);
    for (size_t i = 0; i < VQ_KQ_BLOCK; i += 8)
        _mm256_storeu_ps(q + i, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(q8 + i)))));
    return d * step;
}

/* channels [c0, c0 + 16) for weight rows 0 .. NQ-1 (NQ 1..4, a constant) */
static inline __attribute__((always_inline)) void
lut_qaxpy16(const int NQ, const int BITS, const uint8_t *codes, size_t stride, size_t nt, size_t c0, const float *levf,
            float step, const float *f, const float *ftab, ptrdiff_t foff, const float *w, size_t wstride, float *acc,
            size_t astride, int pf)
{
    const __m256i sh0 = vq_codes_shifts(BITS, 0), sh1 = vq_codes_shifts(BITS, 1);
    const __m256 L0 = vq_levels8(levf, BITS < 4 ? BITS : 3), L1 = BITS == 4 ? _mm256_loadu_ps(levf + 8) : L0;
    __m256 F[LQ2_MAXQ][2];
    _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++) F[j][0] = F[j][1] = _mm256_setzero_ps();
    const size_t at = c0 / 8 * (size_t)BITS;
    for (size_t b = 0; b < nt; b += VQ_KQ_BLOCK) {
        const size_t m = nt - b < VQ_KQ_BLOCK ? nt - b : VQ_KQ_BLOCK;
        float fb[VQ_KQ_BLOCK] = { 0 }, q[LQ2_MAXQ][VQ_KQ_BLOCK], s[LQ2_MAXQ];
        for (size_t i = 0; i < m; i++)
            fb[i] = f ? f[b + i] : ftab[codes[(b + i) * stride + foff]];
        __m256i live[4];
        vq_wq_live(m, live);
        for (int j = 0; j < NQ; j++)
            s[j] = block_weights(w, wstride, j, b, m, fb, live, step, q[j]);
        __m256 I[LQ2_MAXQ][2];
        _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++) I[j][0] = I[j][1] = _mm256_setzero_ps();
        for (size_t i = 0; i < m; i++) {
            const uint8_t *r = codes + (b + i) * stride;
            if (pf) /* the first pass over the rows streams them */
                vq_prefetch_span(r, VQ_PF_AHEAD, 1);
            __m256i lo, hi;
            vq_codes16(r + at, BITS, sh0, sh1, &lo, &hi);
            const __m256 v0 = vq_level_of(lo, BITS, L0, L1), v1 = vq_level_of(hi, BITS, L0, L1);
            _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++)
            {
                const __m256 qj = _mm256_broadcast_ss(&q[j][i]);
                I[j][0] = _mm256_fmadd_ps(qj, v0, I[j][0]); /* exact: integers below 2^24 */
                I[j][1] = _mm256_fmadd_ps(qj, v1, I[j][1]);
            }
        }
        _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++)
        {
            const __m256 sj = _mm256_set1_ps(s[j]);
            F[j][0] = _mm256_fmadd_ps(sj, I[j][0], F[j][0]);
            F[j][1] = _mm256_fmadd_ps(sj, I[j][1], F[j][1]);
        }
    }
    _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++)
    {
        float *a = acc + (size_t)j * astride + c0;
        _mm256_storeu_ps(a, _mm256_add_ps(_mm256_loadu_ps(a), F[j][0]));
        _mm256_storeu_ps(a + 8, _mm256_add_ps(_mm256_loadu_ps(a + 8), F[j][1]));
    }
}

static inline __attribute__((always_inline)) void lut_qaxpy_bits(const int BITS, const uint8_t *codes, size_t stride,
                                                                 size_t nt, size_t D, const float *levf, float step,
                                                                 const float *f, const float *ftab, ptrdiff_t foff,
                                                                 const float *w, size_t wstride, int n_q, float *acc,
                                                                 size_t astride)
{
    for (size_t c0 = 0; c0 < D; c0 += 16)
        for (int j0 = 0; j0 < n_q; j0 += LQ2_MAXQ) {
            const float *wj = w + (size_t)j0 * wstride;
            float *aj = acc + (size_t)j0 * astride;
            const int pf = c0 == 0 && j0 == 0;
            switch (n_q - j0 < LQ2_MAXQ ? n_q - j0 : LQ2_MAXQ) {
            case 4: lut_qaxpy16(4, BITS, codes, stride, nt, c0, levf, step, f, ftab, foff, wj, wstride, aj, astride, pf); break;
            case 3: lut_qaxpy16(3, BITS, codes, stride, nt, c0, levf, step, f, ftab, foff, wj, wstride, aj, astride, pf); break;
            case 2: lut_qaxpy16(2, BITS, codes, stride, nt, c0, levf, step, f, ftab, foff, wj, wstride, aj, astride, pf); break;
            default: lut_qaxpy16(1, BITS, codes, stride, nt, c0, levf, step, f, ftab, foff, wj, wstride, aj, astride, pf); break;
            }
        }
}

void vq_lut_qaxpy_avx2(const uint8_t *codes, size_t stride, size_t nt, size_t D, int bits, const int8_t *lev,
                       float step, const float *f, const float *ftab, ptrdiff_t foff, const float *w, size_t wstride,
                       int n_q, float *acc, size_t astride)
{
    if (D % 16 || (bits != 1 && bits != 2 && bits != 4)) {
        vq_lut_qaxpy_ref(codes, stride, nt, D, bits, lev, step, f, ftab, foff, w, wstride, n_q, acc, astride);
        return;
    }
    float levf[16];
    for (int k = 0; k < 16; k++)
        levf[k] = (float)lev[k & ((1 << bits) - 1)];
    if (bits == 1)
        lut_qaxpy_bits(1, codes, stride, nt, D, levf, step, f, ftab, foff, w, wstride, n_q, acc, astride);
    else if (bits == 2)
        lut_qaxpy_bits(2, codes, stride, nt, D, levf, step, f, ftab, foff, w, wstride, n_q, acc, astride);
    else
        lut_qaxpy_bits(4, codes, stride, nt, D, levf, step, f, ftab, foff, w, wstride, n_q, acc, astride);
}
