/* nearest8_avx2.c -- AVX2 twin of vq_nearest8 (kernels/nearest8.h).
 *
 * Eight centroids per step: their eight rows loaded and transposed, so
 * that lane l holds centroid j0 + l and register d its coordinate d; the
 * lane's distance is then summed in the reference's order (a subtract, a
 * multiply, an add per coordinate, in separate statements). Each lane
 * keeps its smallest distance and the first centroid that had it (strictly
 * smaller replaces, as the reference); the lanes are then merged by
 * distance, ties to the lower index. A tail of fewer than 8 centroids and
 * the rule for centroid 0 (a NaN or +inf distance kept when nothing is
 * smaller) go through the reference's comparisons. The loops over the 8
 * registers are unrolled (kept in registers, not on the stack). */
#include <immintrin.h>
#include <math.h>

#include "kernels/nearest8.h"

static inline void transpose8(__m256 r[8])
{
    const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
    const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
    const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    r[0] = _mm256_permute2f128_ps(u0, u4, 0x20), r[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
    r[1] = _mm256_permute2f128_ps(u1, u5, 0x20), r[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
    r[2] = _mm256_permute2f128_ps(u2, u6, 0x20), r[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
    r[3] = _mm256_permute2f128_ps(u3, u7, 0x20), r[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

int vq_nearest8_avx2(const float *cent, size_t k, const float *p)
{
    const size_t k8 = k / 8 * 8;
    if (k8 == 0)
        return vq_nearest8_ref(cent, k, p);
    __m256 pd[8];
    _Pragma("GCC unroll 8") for (int d = 0; d < 8; d++)
        pd[d] = _mm256_set1_ps(p[d]);
    __m256 best = _mm256_set1_ps(INFINITY);
    __m256i bidx = _mm256_set1_epi32(-1), idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i step = _mm256_set1_epi32(8);
    float d0 = 0.0f;
    for (size_t j0 = 0; j0 < k8; j0 += 8) {
        __m256 r[8];
        _Pragma("GCC unroll 8") for (int l = 0; l < 8; l++)
            r[l] = _mm256_loadu_ps(cent + 8 * (j0 + (size_t)l));
        transpose8(r);
        __m256 s = _mm256_setzero_ps();
        _Pragma("GCC unroll 8") for (int d = 0; d < 8; d++) {
            const __m256 t = _mm256_sub_ps(r[d], pd[d]);
            const __m256 sq = _mm256_mul_ps(t, t);
            s = _mm256_add_ps(s, sq);
        }
        if (j0 == 0)
            d0 = _mm256_cvtss_f32(s);
        const __m256 lt = _mm256_cmp_ps(s, best, _CMP_LT_OQ);
        best = _mm256_blendv_ps(best, s, lt);
        bidx = _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(bidx), _mm256_castsi256_ps(idx), lt));
        idx = _mm256_add_epi32(idx, step);
    }
    float bv[8];
    int bi[8];
    _mm256_storeu_ps(bv, best);
    _mm256_storeu_si256((__m256i *)(void *)bi, bidx);
    /* centroid 0 first (it wins ties and keeps a NaN / inf start), then the
     * lanes' winners by distance and index, then the tail */
    int win = 0;
    float wd = d0;
    for (int l = 0; l < 8; l++)
        if (bi[l] >= 0 && (bv[l] < wd || (bv[l] == wd && bi[l] < win))) {
            wd = bv[l];
            win = bi[l];
        }
    for (size_t j = k8; j < k; j++) {
        const float s = vq_dist8(cent + 8 * j, p);
        if (s < wd) {
            wd = s;
            win = (int)j;
        }
    }
    return win;
}
