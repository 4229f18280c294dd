/* outlier_adds_avx512.c -- AVX-512 twin of kernels.h outlier_adds: the
 * reference's bits. Compiled with -mavx512f; reached through the kernel
 * table.
 *
 * The table is taken in pieces of VQ_OA_PIECE entries (outlier_pieces.h).
 * Sixteen entries at a time: element indices and values by one load, token
 * and channel by a shift and a mask (D a power of two, 16..128; other head
 * sizes go to the AVX2 twin), the dense codes by one gather, the channels'
 * scales and mins by in-register permutes of the D-float rows, the
 * corrections (a subtraction after the reference's multiply and add);
 * entries past the block are packed out. Then per group of up to VQ_OA_QS
 * queries their products (permutes of the query rows, one multiply), and
 * the adds in one scalar pass over the piece's tokens (vq_oa_adds). */
#include <immintrin.h>

#include "kernels/kernels.h"
#include "kernels/outlier_pieces.h"

/* row[c] for the 16 channels c < D (D 16, 32, 64 or 128) */
static inline __attribute__((always_inline)) __m512 row_at(const float *row, size_t D, __m512i c, __mmask16 b5,
                                                           __mmask16 b6)
{
    if (D == 16)
        return _mm512_permutexvar_ps(c, _mm512_loadu_ps(row));
    const __m512 v = _mm512_permutex2var_ps(_mm512_loadu_ps(row), c, _mm512_loadu_ps(row + 16));
    if (D == 32)
        return v;
    const __m512 v64 = _mm512_mask_blend_ps(
        b5, v, _mm512_permutex2var_ps(_mm512_loadu_ps(row + 32), c, _mm512_loadu_ps(row + 48)));
    if (D == 64)
        return v64;
    const __m512 lo2 = _mm512_permutex2var_ps(_mm512_loadu_ps(row + 64), c, _mm512_loadu_ps(row + 80));
    const __m512 hi = _mm512_mask_blend_ps(
        b5, lo2, _mm512_permutex2var_ps(_mm512_loadu_ps(row + 96), c, _mm512_loadu_ps(row + 112)));
    return _mm512_mask_blend_ps(b6, v64, hi);
}

void vq_outlier_adds_avx512(const uint8_t *tab, int n_o, const uint8_t *dense, int bits, const float *sm, size_t D,
                            size_t entries, const float *q, size_t qstride, int n_q, float *s, size_t sstride)
{
    if (D < 16 || D > 128 || (D & (D - 1)) || n_o > VQ_OUTLIERS_MAX) { /* the AVX2 twin's gathers, or its reference */
        vq_outlier_adds_avx2(tab, n_o, dense, bits, sm, D, entries, q, qstride, n_q, s, sstride);
        return;
    }
    const __m512i low16 = _mm512_set1_epi32(0xffff), chan = _mm512_set1_epi32((int)D - 1);
    const __m512i nent = _mm512_set1_epi32((int)(entries < 65536 ? entries : 65536)); /* el < 65536 */
    const __m512i cmask = _mm512_set1_epi32((1 << bits) - 1), vbits = _mm512_set1_epi32(bits);
    const __m512i b5bit = _mm512_set1_epi32(32), b6bit = _mm512_set1_epi32(64);
    const unsigned lg = (unsigned)__builtin_ctzll(D);
    uint32_t tok[VQ_OA_PIECE], ch[VQ_OA_PIECE];
    float dx[VQ_OA_PIECE], prod[VQ_OA_QS][VQ_OA_PIECE];
    for (int p0 = 0; p0 < n_o; p0 += VQ_OA_PIECE) {
        const int pend = n_o - p0 < VQ_OA_PIECE ? n_o : p0 + VQ_OA_PIECE;
        int cnt = 0; /* the piece's entries inside the block */
        for (int k0 = p0; k0 < pend; k0 += 16) {
            const int nk = pend - k0 < 16 ? pend - k0 : 16;
            const __mmask16 live = (__mmask16)(0xffffu >> (16 - nk));
            const __m512i e = _mm512_maskz_loadu_epi32(live, tab + 4 * (size_t)k0);
            const __m512i el = _mm512_and_si512(e, low16);
            const __mmask16 ok = _mm512_mask_cmplt_epu32_mask(live, el, nent);
            if (!ok)
                continue;
            const __m512 x = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(e, 16)));
            const __m512i bit = _mm512_mullo_epi32(el, vbits);
            const __m512i word = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), ok, _mm512_srli_epi32(bit, 3),
                                                             dense, 1);
            const __m512i code =
                _mm512_and_si512(_mm512_srlv_epi32(word, _mm512_and_si512(bit, _mm512_set1_epi32(7))), cmask);
            __m512i c = _mm512_and_si512(el, chan), t = _mm512_srli_epi32(el, lg);
            const __mmask16 b5 = _mm512_test_epi32_mask(c, b5bit), b6 = _mm512_test_epi32_mask(c, b6bit);
            const __m512 v = _mm512_add_ps(_mm512_mul_ps(row_at(sm, D, c, b5, b6), _mm512_cvtepi32_ps(code)),
                                           row_at(sm + D, D, c, b5, b6));
            __m512 d = _mm512_sub_ps(x, v);
            if (ok != live) /* entries past the block left out, the rest packed in order */
                c = _mm512_maskz_compress_epi32(ok, c), t = _mm512_maskz_compress_epi32(ok, t),
                d = _mm512_maskz_compress_ps(ok, d);
            const __mmask16 put = (__mmask16)(0xffffu >> (16 - __builtin_popcount(ok)));
            _mm512_mask_storeu_epi32(tok + cnt, put, t);
            _mm512_mask_storeu_epi32(ch + cnt, put, c);
            _mm512_mask_storeu_ps(dx + cnt, put, d);
            cnt += __builtin_popcount(ok);
        }
        for (int j0 = 0; j0 < n_q; j0 += VQ_OA_QS) {
            const int nj = n_q - j0 < VQ_OA_QS ? n_q - j0 : VQ_OA_QS;
            for (int k = 0; k < cnt; k += 16) {
                const __mmask16 m = (__mmask16)(0xffffu >> (16 - (cnt - k < 16 ? cnt - k : 16)));
                const __m512i c = _mm512_maskz_loadu_epi32(m, ch + k);
                const __m512 d = _mm512_maskz_loadu_ps(m, dx + k);
                const __mmask16 b5 = _mm512_test_epi32_mask(c, b5bit), b6 = _mm512_test_epi32_mask(c, b6bit);
                for (int j = 0; j < nj; j++)
                    _mm512_mask_storeu_ps(prod[j] + k, m,
                                          _mm512_mul_ps(row_at(q + (size_t)(j0 + j) * qstride, D, c, b5, b6), d));
            }
            vq_oa_adds_n(nj, tok, cnt, (const float (*)[VQ_OA_PIECE])prod, s + (size_t)j0 * sstride, sstride);
        }
    }
}
