/* lut8_scan_avx512x.c -- AVX-512 BW + VBMI twin of vq_lut8_scan
 * (kernels/lut8_scan.h): the reference's bits.
 *
 * Tokens are taken 64 at a time: their codes are copied into a piece-major
 * block (byte t of row m = piece m of token t; tokens past n read code 0
 * and are not stored), so that one register holds one piece of all 64
 * tokens: by a register transpose when the pass is whole and M a multiple
 * of 16, else byte by byte. Per query and piece, the table's 256 bytes sit in four
 * registers; VPERMI2B looks up the codes' low 7 bits in the first and the
 * second half, and the codes' top bits (one VPMOVB2M per piece, shared by
 * the queries) pick between them. Even and odd tokens' bytes are summed in
 * 16-bit lanes (at most 64 * 255), interleaved back in token order, and
 * converted to floats for the reference's multiply and add. */
#include "kernels/lut8_scan.h"

#include <immintrin.h>
#include <string.h>

#include "kernels/wq_avx512x.h"

#define L8_TOK 64 /* tokens per pass */
#define L8_MAXM 64

/* pieces 16g..16g+15 of 64 whole tokens (token t at codes + t*stride) into
 * tr[16g + p][t]: four tokens' 16 bytes per register, transposed to
 * piece-major words by one VPERMB (word p = piece p of the four tokens,
 * vq_quad_bytes), then a 16 x 16 transpose of words (32-bit, 64-bit, then
 * 128-bit interleaves) */
static inline void transpose16(const uint8_t *codes, size_t stride, size_t g, __m512i tidx, uint8_t tr[][L8_TOK])
{
    __m512i a[16], b[16], c[16];
    for (int r = 0; r < 16; r++) {
        const uint8_t *p[4];
        for (int l = 0; l < 4; l++)
            p[l] = codes + (size_t)(4 * r + l) * stride;
        a[r] = vq_quad_bytes(p, 16 * g, tidx); /* word p: piece 16g + p of tokens 4r..4r+3 */
    }
    for (int i = 0; i < 8; i++) {
        b[2 * i] = _mm512_unpacklo_epi32(a[2 * i], a[2 * i + 1]);
        b[2 * i + 1] = _mm512_unpackhi_epi32(a[2 * i], a[2 * i + 1]);
    }
    for (int i = 0; i < 4; i++) { /* c[4i+k], lane L: word 4L+k of rows 4i..4i+3 */
        c[4 * i] = _mm512_unpacklo_epi64(b[4 * i], b[4 * i + 2]);
        c[4 * i + 1] = _mm512_unpackhi_epi64(b[4 * i], b[4 * i + 2]);
        c[4 * i + 2] = _mm512_unpacklo_epi64(b[4 * i + 1], b[4 * i + 3]);
        c[4 * i + 3] = _mm512_unpackhi_epi64(b[4 * i + 1], b[4 * i + 3]);
    }
    for (int k = 0; k < 4; k++) { /* words 4L+k of all rows: lanes L of c[k], c[4+k], c[8+k], c[12+k] */
        const __m512i e0 = _mm512_shuffle_i32x4(c[k], c[4 + k], 0x44), e1 = _mm512_shuffle_i32x4(c[k], c[4 + k], 0xEE);
        const __m512i e2 = _mm512_shuffle_i32x4(c[8 + k], c[12 + k], 0x44),
                      e3 = _mm512_shuffle_i32x4(c[8 + k], c[12 + k], 0xEE);
        _mm512_store_si512((void *)tr[16 * g + (size_t)k], _mm512_shuffle_i32x4(e0, e2, 0x88));
        _mm512_store_si512((void *)tr[16 * g + 4 + (size_t)k], _mm512_shuffle_i32x4(e0, e2, 0xDD));
        _mm512_store_si512((void *)tr[16 * g + 8 + (size_t)k], _mm512_shuffle_i32x4(e1, e3, 0x88));
        _mm512_store_si512((void *)tr[16 * g + 12 + (size_t)k], _mm512_shuffle_i32x4(e1, e3, 0xDD));
    }
}

void vq_lut8_scan_avx512x(const uint8_t *codes, size_t stride, size_t n, size_t M, const uint8_t *tab,
                          size_t qstride, int n_q, float *s, size_t sstride)
{
    if (M > L8_MAXM || M == 0) {
        vq_lut8_scan_ref(codes, stride, n, M, tab, qstride, n_q, s, sstride);
        return;
    }
    _Alignas(64) uint8_t tr[L8_MAXM][L8_TOK];
    __mmask64 top[L8_MAXM];
    const __m512i low8 = _mm512_set1_epi16(0x00FF), tidx = vq_quad_index();
    for (size_t i0 = 0; i0 < n; i0 += L8_TOK) {
        const size_t nb = n - i0 < L8_TOK ? n - i0 : L8_TOK;
        if (nb == L8_TOK && M % 16 == 0) {
            for (size_t g = 0; g < M / 16; g++)
                transpose16(codes + i0 * stride, stride, g, tidx, tr);
        } else {
            if (nb < L8_TOK)
                memset(tr, 0, sizeof tr);
            for (size_t t = 0; t < nb; t++) {
                const uint8_t *row = codes + (i0 + t) * stride;
                for (size_t m = 0; m < M; m++)
                    tr[m][t] = row[m];
            }
        }
        for (size_t m = 0; m < M; m++)
            top[m] = _mm512_movepi8_mask(_mm512_load_si512((const void *)tr[m]));
        for (int j = 0; j < n_q; j++) {
            const uint8_t *q = tab + (size_t)j * qstride, *T = q + VQ_L8_HEAD;
            float bias, delta;
            memcpy(&bias, q, sizeof bias);
            memcpy(&delta, q + sizeof bias, sizeof delta);
            __m512i even = _mm512_setzero_si512(), odd = _mm512_setzero_si512();
            for (size_t m = 0; m < M; m++) {
                const uint8_t *Tm = T + m * 256;
                const __m512i idx = _mm512_load_si512((const void *)tr[m]);
                const __m512i lo = _mm512_permutex2var_epi8(_mm512_loadu_si512((const void *)Tm), idx,
                                                            _mm512_loadu_si512((const void *)(Tm + 64)));
                const __m512i hi = _mm512_permutex2var_epi8(_mm512_loadu_si512((const void *)(Tm + 128)), idx,
                                                            _mm512_loadu_si512((const void *)(Tm + 192)));
                const __m512i v = _mm512_mask_blend_epi8(top[m], lo, hi);
                even = _mm512_add_epi16(even, _mm512_and_si512(v, low8));
                odd = _mm512_add_epi16(odd, _mm512_srli_epi16(v, 8));
            }
            /* 128-bit lane L: tokens 16L..16L+7 (lo), 16L+8..16L+15 (hi) */
            const __m512i lo = _mm512_unpacklo_epi16(even, odd), hi = _mm512_unpackhi_epi16(even, odd);
            const __m512 vb = _mm512_set1_ps(bias), vd = _mm512_set1_ps(delta);
            float *out = s + (size_t)j * sstride + i0;
            for (size_t L = 0; 16 * L < nb; L++) {
                /* lane L of lo, then of hi (the lane index must be a constant) */
                __m256i h;
                if (L == 0)
                    h = _mm256_setr_m128i(_mm512_extracti32x4_epi32(lo, 0), _mm512_extracti32x4_epi32(hi, 0));
                else if (L == 1)
                    h = _mm256_setr_m128i(_mm512_extracti32x4_epi32(lo, 1), _mm512_extracti32x4_epi32(hi, 1));
                else if (L == 2)
                    h = _mm256_setr_m128i(_mm512_extracti32x4_epi32(lo, 2), _mm512_extracti32x4_epi32(hi, 2));
                else
                    h = _mm256_setr_m128i(_mm512_extracti32x4_epi32(lo, 3), _mm512_extracti32x4_epi32(hi, 3));
                const __m512 sum = _mm512_cvtepi32_ps(_mm512_cvtepu16_epi32(h));
                const __m512 r = _mm512_add_ps(vb, _mm512_mul_ps(vd, sum));
                const size_t left = nb - 16 * L;
                _mm512_mask_storeu_ps(out + 16 * L, left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1u), r);
            }
        }
    }
}
