/* outlier_adds_avx2.c -- AVX2 + F16C twin of kernels.h outlier_adds: the
 * reference's bits. Compiled with -mavx2 -mf16c; reached through the
 * kernel table.
 *
 * The table is taken in pieces of VQ_OA_PIECE entries (outlier_pieces.h).
 * Eight entries at a time: element indices and values by one load, token
 * and channel by a shift and a mask (D a power of two), the dense codes,
 * the channels' scales and mins by gathers, the corrections (a subtraction
 * after the reference's multiply and add). Then per group of up to
 * VQ_OA_QS queries their products (a gather of the query values, one
 * multiply), and the adds in one scalar pass over the piece's tokens
 * (vq_oa_adds). AVX2 has no compress: a table with an entry past the block
 * (never one that encode wrote) goes to the reference whole. */
#include <immintrin.h>

#include "kernels/kernels.h"
#include "kernels/outlier_pieces.h"

/* 1 when every one of the n_o entries names an element below entries */
static int entries_inside(const uint8_t *tab, int n_o, size_t entries)
{
    const __m256i low16 = _mm256_set1_epi32(0xffff);
    const __m256i last = _mm256_set1_epi32((int)(entries < 65536 ? entries : 65536) - 1); /* el < 65536 */
    __m256i over = _mm256_setzero_si256();
    int k = 0;
    for (; k + 8 <= n_o; k += 8) {
        const __m256i el = _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(const void *)(tab + 4 * (size_t)k)),
                                            low16);
        over = _mm256_or_si256(over, _mm256_cmpgt_epi32(el, last));
    }
    int inside = _mm256_testz_si256(over, over);
    for (; k < n_o; k++)
        inside &= (size_t)(tab[4 * k] | tab[4 * k + 1] << 8) < entries;
    return inside;
}

void vq_outlier_adds_avx2(const uint8_t *tab, int n_o, const uint8_t *dense, int bits, const float *sm, size_t D,
                          size_t entries, const float *q, size_t qstride, int n_q, float *s, size_t sstride)
{
    if ((D & (D - 1)) || n_o > VQ_OUTLIERS_MAX || !entries_inside(tab, n_o, entries)) {
        vq_outlier_adds_ref(tab, n_o, dense, bits, sm, D, entries, q, qstride, n_q, s, sstride);
        return;
    }
    const __m256i low16 = _mm256_set1_epi32(0xffff), chan = _mm256_set1_epi32((int)D - 1);
    const __m256i cmask = _mm256_set1_epi32((1 << bits) - 1), vbits = _mm256_set1_epi32(bits);
    const __m256i seven = _mm256_set1_epi32(7), lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    /* the values' halves (bytes 2-3 of each entry) to the low 8 bytes of each 128-bit lane */
    const __m256i highs = _mm256_setr_epi8(2, 3, 6, 7, 10, 11, 14, 15, -1, -1, -1, -1, -1, -1, -1, -1, 2, 3, 6, 7, 10,
                                           11, 14, 15, -1, -1, -1, -1, -1, -1, -1, -1);
    const __m128i lg = _mm_cvtsi32_si128(__builtin_ctzll(D));
    uint32_t tok[VQ_OA_PIECE], ch[VQ_OA_PIECE];
    float dx[VQ_OA_PIECE], prod[VQ_OA_QS][VQ_OA_PIECE];
    for (int p0 = 0; p0 < n_o; p0 += VQ_OA_PIECE) {
        const int cnt = n_o - p0 < VQ_OA_PIECE ? n_o - p0 : VQ_OA_PIECE;
        for (int k = 0; k < cnt; k += 8) {
            const __m256i live = _mm256_cmpgt_epi32(_mm256_set1_epi32(cnt - k), lane);
            const __m256i e = _mm256_maskload_epi32((const int *)(const void *)(tab + 4 * (size_t)(p0 + k)), live);
            const __m256i el = _mm256_and_si256(e, low16);
            const __m256i h = _mm256_permute4x64_epi64(_mm256_shuffle_epi8(e, highs), 0x08);
            const __m256 x = _mm256_cvtph_ps(_mm256_castsi256_si128(h));
            const __m256i bit = _mm256_mullo_epi32(el, vbits);
            const __m256i word = _mm256_mask_i32gather_epi32(_mm256_setzero_si256(), (const int *)(const void *)dense,
                                                             _mm256_srli_epi32(bit, 3), live, 1);
            const __m256i code = _mm256_and_si256(_mm256_srlv_epi32(word, _mm256_and_si256(bit, seven)), cmask);
            const __m256i c = _mm256_and_si256(el, chan);
            const __m256 v = _mm256_add_ps(_mm256_mul_ps(_mm256_i32gather_ps(sm, c, 4), _mm256_cvtepi32_ps(code)),
                                           _mm256_i32gather_ps(sm + D, c, 4));
            _mm256_storeu_si256((__m256i *)(void *)(tok + k), _mm256_srl_epi32(el, lg));
            _mm256_storeu_si256((__m256i *)(void *)(ch + k), c);
            _mm256_storeu_ps(dx + k, _mm256_sub_ps(x, v));
        }
        for (int j0 = 0; j0 < n_q; j0 += VQ_OA_QS) {
            const int nj = n_q - j0 < VQ_OA_QS ? n_q - j0 : VQ_OA_QS;
            for (int k = 0; k < cnt; k += 8) {
                const __m256i c = _mm256_loadu_si256((const __m256i *)(const void *)(ch + k));
                const __m256 d = _mm256_loadu_ps(dx + k);
                for (int j = 0; j < nj; j++)
                    _mm256_storeu_ps(prod[j] + k,
                                     _mm256_mul_ps(_mm256_i32gather_ps(q + (size_t)(j0 + j) * qstride, c, 4), d));
            }
            vq_oa_adds_n(nj, tok, cnt, (const float (*)[VQ_OA_PIECE])prod, s + (size_t)j0 * sstride, sstride);
        }
    }
}
