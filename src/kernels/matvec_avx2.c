/* matvec_avx2.c -- the AVX2 twin of vq_ordered_matvec (kernels/matvec.h):
 * up to 64 rows a pass (eight registers of sums, one per 8 rows), each
 * column's slice loaded, multiplied by its broadcast x[j], then added
 * (VMULPS, VADDPS: the reference's roundings); the last register of a
 * matrix whose rows are not a multiple of 8 loaded and stored under a
 * mask. */
#include <immintrin.h>

#include "kernels/matvec.h"

static inline __attribute__((always_inline)) void pass(const int NR, const float *mt, size_t rows, size_t n,
                                                       const float *x, float *y, __m256i last)
{
    __m256 s[8];
    _Pragma("GCC unroll 8") for (int u = 0; u < NR; u++)
        s[u] = _mm256_setzero_ps();
    for (size_t j = 0; j < n; j++) {
        const __m256 b = _mm256_set1_ps(x[j]);
        const float *col = mt + j * rows;
        _Pragma("GCC unroll 8") for (int u = 0; u < NR; u++)
        {
            const __m256 m = u == NR - 1 ? _mm256_maskload_ps(col + 8 * u, last) : _mm256_loadu_ps(col + 8 * u);
            s[u] = _mm256_add_ps(s[u], _mm256_mul_ps(m, b));
        }
    }
    _Pragma("GCC unroll 8") for (int u = 0; u < NR; u++)
    {
        if (u == NR - 1)
            _mm256_maskstore_ps(y + 8 * u, last, s[u]);
        else
            _mm256_storeu_ps(y + 8 * u, s[u]);
    }
}

void vq_ordered_matvec_avx2(const float *mt, size_t rows, size_t n, const float *x, float *y)
{
    for (size_t i0 = 0; i0 < rows; i0 += 64) {
        const size_t left = rows - i0, nr = left < 64 ? (left + 7) / 8 : 8;
        const int tail = (int)(left < 64 ? left - 8 * (nr - 1) : 8); /* rows in the last register */
        const __m256i last = _mm256_cmpgt_epi32(_mm256_set1_epi32(tail), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        const float *m = mt + i0;
        switch (nr) { /* a constant count: the sums stay in registers */
        case 8: pass(8, m, rows, n, x, y + i0, last); break;
        case 7: pass(7, m, rows, n, x, y + i0, last); break;
        case 6: pass(6, m, rows, n, x, y + i0, last); break;
        case 5: pass(5, m, rows, n, x, y + i0, last); break;
        case 4: pass(4, m, rows, n, x, y + i0, last); break;
        case 3: pass(3, m, rows, n, x, y + i0, last); break;
        case 2: pass(2, m, rows, n, x, y + i0, last); break;
        default: pass(1, m, rows, n, x, y + i0, last); break;
        }
    }
}
