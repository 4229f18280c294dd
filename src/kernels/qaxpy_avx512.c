/* qaxpy_avx512.c -- AVX-512 twin of vq_qaxpy (kernels/qaxpy.h). Compiled
 * with -mavx512f/bw/vl/dq.
 *
 * Columns two blocks (64 values) at a time, up to four weight rows at a
 * time: the 4 x 4 accumulator registers stay in registers over all rows;
 * each row's two blocks are decoded once (the values of qblock_values.h:
 * q8_0 codes widened to 32 bits, converted exactly, one multiply by the
 * block scale; q4_0 the block scale times the 16 levels -8..7 in one
 * register, from which one permute per 16 values takes each code's
 * product) and added with one FMA per accumulator. */
#include <immintrin.h>

#include "kernels/prefetch.h"
#include "kernels/qaxpy.h"

static inline __m512 scale16(const uint8_t *blk)
{
    return _mm512_set1_ps(_cvtsh_ss((unsigned short)(blk[0] | blk[1] << 8)));
}

/* the 32 values of one block into v[0..1] (levels: lane k holds k - 8) */
static inline void block_values(int bits, const uint8_t *blk, __m512 levels, __m512 *v)
{
    __m512 d = scale16(blk);
    if (bits == 8) {
        __m512i lo = _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(const void *)(blk + 2)));
        __m512i hi = _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(const void *)(blk + 18)));
        v[0] = _mm512_mul_ps(d, _mm512_cvtepi32_ps(lo));
        v[1] = _mm512_mul_ps(d, _mm512_cvtepi32_ps(hi));
    } else { /* a lane's low 4 bits index the table: its byte's low nibble, then (shifted) its high one */
        const __m512 table = _mm512_mul_ps(d, levels);
        const __m512i lo = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(const void *)(blk + 2)));
        v[0] = _mm512_permutexvar_ps(lo, table);
        v[1] = _mm512_permutexvar_ps(_mm512_srli_epi32(lo, 4), table);
    }
}

/* columns [32*b0, 32*b0 + 32*NB) (NB 1 or 2) for weight rows j0..j0+NQ-1 */
#define QAXPY_BLOCK(NQ, NB)                                                                                   \
    do {                                                                                                      \
        __m512 A[4][4];                                                                                       \
        _Pragma("GCC unroll 4") for (int jj = 0; jj < (NQ); jj++)                                               \
            _Pragma("GCC unroll 4") for (int ww = 0; ww < 2 * (NB); ww++)                                      \
                A[jj][ww] = _mm512_loadu_ps(acc + (size_t)(j0 + jj) * astride + 32 * b0 + 16 * (size_t)ww);    \
        for (size_t i = 0; i < nt; i++) {                                                                     \
            __m512 V[4];                                                                                      \
            const uint8_t *row = codes + i * rstride + b0 * bb;                                               \
            if (j0 == 0 && b0 == 0) /* the first pass streams the rows */                                     \
                vq_prefetch_span(row, VQ_PF_AHEAD, rstride);                                                  \
            block_values(bits, row, levels, V);                                                               \
            if ((NB) == 2)                                                                                    \
                block_values(bits, row + bb, levels, V + 2);                                                  \
            _Pragma("GCC unroll 4") for (int jj = 0; jj < (NQ); jj++) {                                        \
                __m512 x = _mm512_set1_ps(w[(size_t)(j0 + jj) * wstride + i]);                                \
                _Pragma("GCC unroll 4") for (int ww = 0; ww < 2 * (NB); ww++)                                  \
                    A[jj][ww] = _mm512_fmadd_ps(x, V[ww], A[jj][ww]);                                         \
            }                                                                                                 \
        }                                                                                                     \
        _Pragma("GCC unroll 4") for (int jj = 0; jj < (NQ); jj++)                                               \
            _Pragma("GCC unroll 4") for (int ww = 0; ww < 2 * (NB); ww++)                                      \
                _mm512_storeu_ps(acc + (size_t)(j0 + jj) * astride + 32 * b0 + 16 * (size_t)ww, A[jj][ww]);    \
    } while (0)

void vq_qaxpy_avx512(int bits, const uint8_t *codes, size_t rstride, size_t nt, size_t D, const float *w,
                     size_t wstride, int n_q, float *acc, size_t astride)
{
    const size_t bb = bits == 8 ? 34 : 18, nb = D / 32;
    const __m512 levels = _mm512_setr_ps(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7);
    for (int j0 = 0; j0 < n_q; j0 += 4) {
        const int nq = n_q - j0 < 4 ? n_q - j0 : 4;
        for (size_t b0 = 0; b0 < nb;) {
            if (b0 + 2 <= nb) {
                switch (nq) {
                case 4: QAXPY_BLOCK(4, 2); break;
                case 3: QAXPY_BLOCK(3, 2); break;
                case 2: QAXPY_BLOCK(2, 2); break;
                default: QAXPY_BLOCK(1, 2); break;
                }
                b0 += 2;
            } else {
                switch (nq) {
                case 4: QAXPY_BLOCK(4, 1); break;
                case 3: QAXPY_BLOCK(3, 1); break;
                case 2: QAXPY_BLOCK(2, 1); break;
                default: QAXPY_BLOCK(1, 1); break;
                }
                b0 += 1;
            }
        }
    }
}
