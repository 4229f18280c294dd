/* matvec_avx512.c -- the AVX-512 twin of vq_ordered_matvec
 * (kernels/matvec.h): up to 128 rows a pass (eight registers of sums, one
 * per 16 rows), each column's slice loaded, multiplied by its broadcast
 * x[j], then added (VMULPS, VADDPS: the reference's roundings); the last
 * register of a matrix whose rows are not a multiple of 16 masked. */
#include <immintrin.h>

#include "kernels/matvec.h"

static inline __attribute__((always_inline)) void pass(const int NR, const float *mt, size_t rows, size_t n,
                                                       const float *x, float *y, __mmask16 last)
{
    __m512 s[8];
    _Pragma("GCC unroll 8") for (int u = 0; u < NR; u++)
        s[u] = _mm512_setzero_ps();
    for (size_t j = 0; j < n; j++) {
        const __m512 b = _mm512_set1_ps(x[j]);
        const float *col = mt + j * rows;
        _Pragma("GCC unroll 8") for (int u = 0; u < NR; u++)
        {
            const __m512 m = u == NR - 1 ? _mm512_maskz_loadu_ps(last, col + 16 * u) : _mm512_loadu_ps(col + 16 * u);
            s[u] = _mm512_add_ps(s[u], _mm512_mul_ps(m, b));
        }
    }
    _Pragma("GCC unroll 8") for (int u = 0; u < NR; u++)
    {
        if (u == NR - 1)
            _mm512_mask_storeu_ps(y + 16 * u, last, s[u]);
        else
            _mm512_storeu_ps(y + 16 * u, s[u]);
    }
}

void vq_ordered_matvec_avx512(const float *mt, size_t rows, size_t n, const float *x, float *y)
{
    for (size_t i0 = 0; i0 < rows; i0 += 128) {
        const size_t left = rows - i0, nr = left < 128 ? (left + 15) / 16 : 8;
        const size_t tail = left < 128 ? left - 16 * (nr - 1) : 16; /* rows in the last register */
        const __mmask16 last = (__mmask16)((1u << tail) - 1u);
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
