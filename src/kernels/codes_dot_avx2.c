/* codes_dot_avx2.c -- AVX2 + FMA twins of kernels.h codes_dot and
 * kivi_fold: scores from packed codes against float queries (KIVI keys
 * with the block's scales folded into the query, TurboQuant's code
 * levels).
 *
 * codes_dot: four rows and up to three queries, or two rows and four
 * queries, at a time (at most 12 accumulators of eight lanes); each row's
 * 16 codes are decoded once (codes_avx2.h) for all the queries, as integers (lut NULL) or as their levels by a permute.
 * codes_dot_pair: the same loop with a second set of 1-bit codes decoded
 * beside the first, the pair's index a + 2b permuting the four levels.
 * Every score is summed in lanes e % 8, then by vq_hsum4x256's tree, so it
 * is the same whatever its place in the tile (another order than the
 * reference's: within kernels.h's tolerance, test_kernels.c).
 *
 * kivi_fold: the reference's bits -- one multiply per folded channel, and
 * the mins' part in the 16 lanes e % 16 (a multiply, then an add), reduced
 * by vq_sum16_lanes' tree (the tail below D in its lane, as the
 * reference). */
#include <immintrin.h>

#include "core/vexp.h"
#include "kernels/codes_avx2.h"
#include "kernels/kernels.h"

/* NJ queries (1..4) and R rows (4 for NJ <= 3, 2 for NJ = 4: at most 12
 * accumulators, constants after inlining) over all rows, R at a time (past
 * the end: the last row again, its scores not stored). PAIR (BITS 1): the
 * second set off bytes into the row, the levels of index a + 2b */
static inline __attribute__((always_inline)) void codes_dot_rows(const int NJ, const int R, const int BITS,
                                                                 const int PAIR, const uint8_t *codes, size_t rstride,
                                                                 size_t off, size_t nt, size_t E, const float *lut,
                                                                 const float *const qj[4], float *s, size_t sstride)
{
    const __m256i sh0 = vq_codes_shifts(BITS, 0), sh1 = vq_codes_shifts(BITS, 1), mask = vq_codes_mask(BITS);
    const __m256i one = _mm256_set1_epi32(1);
    const __m256 lv0 = lut ? vq_levels8(lut, PAIR ? 2 : BITS < 4 ? BITS : 3) : _mm256_setzero_ps();
    const __m256 lv1 = lut && BITS == 4 ? _mm256_loadu_ps(lut + 8) : _mm256_setzero_ps();
    /* no table, b <= 3: the integer levels, taken by a permute of the codes'
     * low 3 bits (no mask, no convert: the same values) */
    const __m256 ints = vq_int_levels8(BITS < 4 ? BITS : 3);
    for (size_t i = 0; i < nt; i += (size_t)R) {
        const uint8_t *r[4];
        for (int k = 0; k < R; k++)
            r[k] = codes + (i + (size_t)k < nt ? i + (size_t)k : nt - 1) * rstride;
        __m256 a[4][4];
        _Pragma("GCC unroll 4") for (int j = 0; j < NJ; j++)
            _Pragma("GCC unroll 4") for (int k = 0; k < R; k++) a[j][k] = _mm256_setzero_ps();
        for (size_t e = 0; e < E; e += 16) {
            _Pragma("GCC unroll 4") for (int k = 0; k < R; k++) {
                __m256i lo, hi;
                vq_codes16(r[k] + e / 8 * (size_t)BITS, BITS, sh0, sh1, &lo, &hi);
                if (PAIR) { /* bit 0: a; bits 1 and up: b and what lies above it (the levels repeat every 4) */
                    __m256i blo, bhi;
                    vq_codes16(r[k] + off + e / 8, 1, sh0, sh1, &blo, &bhi);
                    lo = _mm256_or_si256(_mm256_and_si256(lo, one), _mm256_slli_epi32(blo, 1));
                    hi = _mm256_or_si256(_mm256_and_si256(hi, one), _mm256_slli_epi32(bhi, 1));
                }
                __m256 c0, c1;
                if (PAIR) {
                    c0 = _mm256_permutevar8x32_ps(lv0, lo);
                    c1 = _mm256_permutevar8x32_ps(lv0, hi);
                } else if (lut) {
                    c0 = vq_level_of(lo, BITS, lv0, lv1);
                    c1 = vq_level_of(hi, BITS, lv0, lv1);
                } else if (BITS <= 3) {
                    c0 = _mm256_permutevar8x32_ps(ints, lo);
                    c1 = _mm256_permutevar8x32_ps(ints, hi);
                } else {
                    c0 = _mm256_cvtepi32_ps(_mm256_and_si256(lo, mask));
                    c1 = _mm256_cvtepi32_ps(_mm256_and_si256(hi, mask));
                }
                _Pragma("GCC unroll 4") for (int j = 0; j < NJ; j++) {
                    a[j][k] = _mm256_fmadd_ps(_mm256_loadu_ps(qj[j] + e), c0, a[j][k]);
                    a[j][k] = _mm256_fmadd_ps(_mm256_loadu_ps(qj[j] + e + 8), c1, a[j][k]);
                }
            }
        }
        if (R == 4) {
            _Pragma("GCC unroll 4") for (int j = 0; j < NJ; j++)
                vq_store4_upto(s + (size_t)j * sstride, i, nt, vq_hsum4x256(a[j][0], a[j][1], a[j][2], a[j][3]));
        } else { /* two rows of two queries per sum */
            _Pragma("GCC unroll 2") for (int j = 0; j < NJ; j += 2) {
                float t[4];
                _mm_storeu_ps(t, vq_hsum4x256(a[j][0], a[j][1], a[j + 1][0], a[j + 1][1]));
                float *s0 = s + (size_t)j * sstride + i, *s1 = s0 + sstride;
                s0[0] = t[0], s1[0] = t[2];
                if (i + 1 < nt)
                    s0[1] = t[1], s1[1] = t[3];
            }
        }
    }
}

/* one bit width (a constant after inlining: the decode has no branch) */
static inline __attribute__((always_inline)) void codes_dot_bits(const int BITS, const int PAIR, const uint8_t *codes,
                                                                 size_t rstride, size_t off, size_t nt, size_t E,
                                                                 const float *lut, const float *q, size_t qstride,
                                                                 int n_q, float *s, size_t sstride)
{
    for (int j0 = 0; j0 < n_q; j0 += 4) {
        const int nj = n_q - j0 < 4 ? n_q - j0 : 4;
        const float *qj[4];
        for (int j = 0; j < 4; j++)
            qj[j] = q + (size_t)(j0 + (j < nj ? j : nj - 1)) * qstride;
        float *o = s + (size_t)j0 * sstride;
        switch (nj) {
        case 4: codes_dot_rows(4, 2, BITS, PAIR, codes, rstride, off, nt, E, lut, qj, o, sstride); break;
        case 3: codes_dot_rows(3, 4, BITS, PAIR, codes, rstride, off, nt, E, lut, qj, o, sstride); break;
        case 2: codes_dot_rows(2, 4, BITS, PAIR, codes, rstride, off, nt, E, lut, qj, o, sstride); break;
        default: codes_dot_rows(1, 4, BITS, PAIR, codes, rstride, off, nt, E, lut, qj, o, sstride); break;
        }
    }
}

void vq_codes_dot_avx2(const uint8_t *codes, size_t rstride, int bits, size_t nt, size_t E, const float *lut,
                       const float *q, size_t qstride, int n_q, float *s, size_t sstride)
{
    if (bits < 1 || bits > 4 || E % 16) {
        vq_codes_dot_ref(codes, rstride, bits, nt, E, lut, q, qstride, n_q, s, sstride);
        return;
    }
    if (nt == 0)
        return;
    switch (bits) {
    case 1: codes_dot_bits(1, 0, codes, rstride, 0, nt, E, lut, q, qstride, n_q, s, sstride); break;
    case 2: codes_dot_bits(2, 0, codes, rstride, 0, nt, E, lut, q, qstride, n_q, s, sstride); break;
    case 3: codes_dot_bits(3, 0, codes, rstride, 0, nt, E, lut, q, qstride, n_q, s, sstride); break;
    default: codes_dot_bits(4, 0, codes, rstride, 0, nt, E, lut, q, qstride, n_q, s, sstride); break;
    }
}

void vq_codes_dot_pair_avx2(const uint8_t *codes, size_t rstride, size_t off, size_t nt, size_t E, const float *lut4,
                            const float *q, size_t qstride, int n_q, float *s, size_t sstride)
{
    if (E % 16) {
        vq_codes_dot_pair_ref(codes, rstride, off, nt, E, lut4, q, qstride, n_q, s, sstride);
        return;
    }
    if (nt == 0)
        return;
    codes_dot_bits(1, 1, codes, rstride, off, nt, E, lut4, q, qstride, n_q, s, sstride);
}

void vq_kivi_fold_avx2(const float *q, size_t qstride, int n_q, const float *s, const float *m, size_t D, float *qs,
                       float *base)
{
    const size_t D16 = D - D % 16;
    for (int j = 0; j < n_q; j++) {
        const float *qj = q + (size_t)j * qstride;
        float *o = qs + (size_t)j * D;
        __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps(); /* lanes 0-7, 8-15 */
        for (size_t e = 0; e < D16; e += 16) {
            const __m256 x0 = _mm256_loadu_ps(qj + e), x1 = _mm256_loadu_ps(qj + e + 8);
            _mm256_storeu_ps(o + e, _mm256_mul_ps(x0, _mm256_loadu_ps(s + e)));
            _mm256_storeu_ps(o + e + 8, _mm256_mul_ps(x1, _mm256_loadu_ps(s + e + 8)));
            lo = _mm256_add_ps(lo, _mm256_mul_ps(x0, _mm256_loadu_ps(m + e)));
            hi = _mm256_add_ps(hi, _mm256_mul_ps(x1, _mm256_loadu_ps(m + e + 8)));
        }
        if (D16 == D) {
            base[j] = vq_sum16x256(lo, hi);
            continue;
        }
        float lane[16];
        _mm256_storeu_ps(lane, lo);
        _mm256_storeu_ps(lane + 8, hi);
        for (size_t e = D16; e < D; e++) {
            o[e] = qj[e] * s[e];
            const float t = qj[e] * m[e];
            lane[e % 16] = lane[e % 16] + t;
        }
        base[j] = vq_sum16_lanes(lane);
    }
}
