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
#include "kernels/transpose_avx2.h"

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
    const float d0 = vq_dist8(cent, p); /* lane 0's first distance: the same sums */
    for (size_t j0 = 0; j0 < k8; j0 += 8) {
        __m256 r[8];
        _Pragma("GCC unroll 8") for (int l = 0; l < 8; l++)
            r[l] = _mm256_loadu_ps(cent + 8 * (j0 + (size_t)l));
        vq_transpose8_ps(r);
        __m256 s = _mm256_setzero_ps();
        _Pragma("GCC unroll 8") for (int d = 0; d < 8; d++) {
            const __m256 t = _mm256_sub_ps(r[d], pd[d]);
            const __m256 sq = _mm256_mul_ps(t, t);
            s = _mm256_add_ps(s, sq);
        }
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
