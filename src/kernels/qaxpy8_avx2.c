/* qaxpy8_avx2.c -- AVX2 + FMA + F16C twin of vq_qaxpy8 (kernels/qaxpy.h):
 * the reference's bits, without VNNI.
 *
 * Per block of 32 rows: the rows' block scales as columns (F16C), one
 * weight scale per weight row j from the rows' largest |d| over the
 * column blocks, and the int8 weights of every (weight row j, column
 * block g) (kernels/wq_avx2.h).
 * Then per column block and pair of rows (a, b), with value e of the block
 * in 32-bit lane e % 8 of accumulator e / 8 (the reference's order: no
 * shuffle at the end):
 *   q4_0: the pair's 16 code bytes interleaved (128-bit lane L: bytes 8L
 *   .. 8L+7) and the nibbles masked out (low: values 8L + t in 16-bit lane
 *   t, high: 16 + 8L + t) meet the pair's weights as one word in
 *   VPMADDUBSW (nibbles unsigned, weights signed): q_a n_a + q_b n_b is at
 *   most 2 * 15 * 127 = 3810 in size, so it never saturates, and VPADDW
 *   sums of 8 pairs (30480 < 2^15) stay exact before they are widened to
 *   32 bits; 8 * sum q comes off (the nibbles' offset 8);
 *   q8_0: the codes are signed and reach -128, so a VPMADDUBSW of them
 *   (offset to unsigned) could saturate; the pair's bytes are interleaved
 *   and sign-extended (VPMOVSXBW: 32-bit lane e holds the pair's two codes
 *   of value e) and meet the two weights as 16-bit words in VPMADDWD,
 *   exact in 32 bits.
 * F = fma(s, I, F) per block as the reference, acc += F at the end.
 *
 * Covers bits 4 and 8, D a multiple of 32 up to 512; anything else runs the
 * reference. */
#include "kernels/qaxpy.h"

#include <float.h>
#include <immintrin.h>
#include <string.h>

#include "kernels/codes_avx2.h"
#include "kernels/kivi_qaxpy.h"
#include "kernels/wq_avx2.h"

#define Q8_MAXQ 8  /* weight rows per pass over the rows (state on the stack) */
#define Q8_PASSQ 4 /* weight rows per pass over a block (sums in registers) */
#define Q8_MAXB 16 /* column blocks: D <= 512 */
#define Q8_PAIRS (VQ_KQ_BLOCK / 2)

/* one block's int8 weights for up to Q8_MAXQ weight rows */
typedef struct {
    int8_t q[Q8_MAXQ][Q8_MAXB][VQ_KQ_BLOCK];  /* weights of (j, g), rows in order; 0 past the block */
    int16_t q16[Q8_MAXQ][Q8_MAXB][VQ_KQ_BLOCK]; /* the same as 16-bit words (q8_0) */
    float s[Q8_MAXQ];                         /* the weight rows' scales A_j / 127 */
    int32_t off[Q8_MAXQ][Q8_MAXB];            /* 8 * sum_i q_i (q4_0's nibble offset; 0 for q8_0) */
} q8_block;

/* the fp16 scales of rows first .. first+7 of the block at blk (the scale
 * at the start of each row's block; rows rstride apart), 0 for rows from m
 * on: the blocks' first 16 bytes (within their 18 or 34) by vector loads */
static inline __m256 scales8(const uint8_t *blk, size_t rstride, size_t first, size_t m)
{
    __m128i h[8];
    _Pragma("GCC unroll 8") for (size_t r = 0; r < 8; r++)
        h[r] = first + r < m ? _mm_loadu_si128((const __m128i *)(const void *)(blk + (first + r) * rstride))
                             : _mm_setzero_si128();
    return vq_word0_halves8(h);
}

/* One pass of NQ weight rows (block state rows j0 .. j0+NQ-1, float sums
 * F[j] in value order, fstride apart) over the block's np pairs, column
 * block by column block */
static inline __attribute__((always_inline)) void block_pass(const int BITS, const int NQ,
                                                             const uint8_t *const pa[Q8_PAIRS],
                                                             const uint8_t *const pb[Q8_PAIRS], size_t np, size_t nb,
                                                             const q8_block *st, int j0, float *F, size_t fstride)
{
    const size_t bb = BITS == 8 ? 34 : 18;
    const __m256i nib = _mm256_set1_epi8(0x0f);
    for (size_t g = 0; g < nb; g++) {
        const size_t off = g * bb + 2;
        __m256i I[Q8_PASSQ][4], A[Q8_PASSQ][2];
        _Pragma("GCC unroll 8") for (int j = 0; j < NQ; j++)
            for (int r = 0; r < 4; r++)
                I[j][r] = _mm256_setzero_si256();
        if (BITS == 4) {
            for (size_t h = 0; 8 * h < np; h++) { /* at most 8 pairs per 16-bit sum */
                const size_t pend = np < 8 * h + 8 ? np : 8 * h + 8;
                _Pragma("GCC unroll 8") for (int j = 0; j < NQ; j++)
                    A[j][0] = A[j][1] = _mm256_setzero_si256();
                for (size_t p = 8 * h; p < pend; p++) {
                    const __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(pa[p] + off));
                    const __m128i y = _mm_loadu_si128((const __m128i *)(const void *)(pb[p] + off));
                    const __m256i T = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_unpacklo_epi8(x, y)),
                                                              _mm_unpackhi_epi8(x, y), 1);
                    const __m256i lo = _mm256_and_si256(T, nib), hi = _mm256_and_si256(_mm256_srli_epi16(T, 4), nib);
                    _Pragma("GCC unroll 8") for (int j = 0; j < NQ; j++) {
                        int16_t wd;
                        memcpy(&wd, &st->q[j0 + j][g][2 * p], sizeof wd);
                        const __m256i W = _mm256_set1_epi16(wd);
                        A[j][0] = _mm256_add_epi16(A[j][0], _mm256_maddubs_epi16(lo, W));
                        A[j][1] = _mm256_add_epi16(A[j][1], _mm256_maddubs_epi16(hi, W));
                    }
                }
                _Pragma("GCC unroll 8") for (int j = 0; j < NQ; j++)
                    for (int k = 0; k < 2; k++) { /* values 16k + 8L + t */
                        I[j][2 * k] =
                            _mm256_add_epi32(I[j][2 * k], _mm256_cvtepi16_epi32(_mm256_castsi256_si128(A[j][k])));
                        I[j][2 * k + 1] = _mm256_add_epi32(I[j][2 * k + 1],
                                                           _mm256_cvtepi16_epi32(_mm256_extracti128_si256(A[j][k], 1)));
                    }
            }
        } else {
            for (size_t p = 0; p < np; p++) {
                __m256i C[4];
                _Pragma("GCC unroll 8") for (int u = 0; u < 2; u++) { /* values 16u .. 16u+15 */
                    const __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(pa[p] + off + 16 * (size_t)u));
                    const __m128i y = _mm_loadu_si128((const __m128i *)(const void *)(pb[p] + off + 16 * (size_t)u));
                    C[2 * u] = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(x, y));
                    C[2 * u + 1] = _mm256_cvtepi8_epi16(_mm_unpackhi_epi8(x, y));
                }
                _Pragma("GCC unroll 8") for (int j = 0; j < NQ; j++) {
                    int32_t wd;
                    memcpy(&wd, &st->q16[j0 + j][g][2 * p], sizeof wd);
                    const __m256i W = _mm256_set1_epi32(wd);
                    _Pragma("GCC unroll 8") for (int r = 0; r < 4; r++)
                        I[j][r] = _mm256_add_epi32(I[j][r], _mm256_madd_epi16(C[r], W));
                }
            }
        }
        _Pragma("GCC unroll 8") for (int j = 0; j < NQ; j++) {
            const __m256 s = _mm256_set1_ps(st->s[j0 + j]);
            const __m256i o = _mm256_set1_epi32(st->off[j0 + j][g]);
            _Pragma("GCC unroll 8") for (int r = 0; r < 4; r++) {
                float *f = F + (size_t)j * fstride + 32 * g + 8 * (size_t)r;
                const __m256 Iv = _mm256_cvtepi32_ps(_mm256_sub_epi32(I[j][r], o));
                _mm256_storeu_ps(f, _mm256_fmadd_ps(s, Iv, _mm256_loadu_ps(f)));
            }
        }
    }
}

/* the passes over one block for nq weight rows: as many as the sums'
 * registers need (QP rows per pass at most), of balanced sizes */
static inline __attribute__((always_inline)) void block_passes(const int BITS, const uint8_t *const pa[Q8_PAIRS],
                                                               const uint8_t *const pb[Q8_PAIRS], size_t np,
                                                               size_t nb, const q8_block *st, int nq, float *F,
                                                               size_t fstride)
{
    const int QP = BITS == 4 ? 4 : 3;
    for (int j0 = 0; j0 < nq;) {
        const int left = nq - j0, passes = (left + QP - 1) / QP, n = (left + passes - 1) / passes;
        float *Fj = F + (size_t)j0 * fstride;
        switch (n) {
        case 1: block_pass(BITS, 1, pa, pb, np, nb, st, j0, Fj, fstride); break;
        case 2: block_pass(BITS, 2, pa, pb, np, nb, st, j0, Fj, fstride); break;
        case 3: block_pass(BITS, 3, pa, pb, np, nb, st, j0, Fj, fstride); break;
        default: block_pass(BITS, BITS == 4 ? 4 : 3, pa, pb, np, nb, st, j0, Fj, fstride); break;
        }
        j0 += n;
    }
}

static inline __attribute__((always_inline)) void qaxpy8_bits(const int BITS, const uint8_t *codes, size_t rstride,
                                                              size_t nt, size_t D, const float *w, size_t wstride,
                                                              int n_q, float *acc, size_t astride)
{
    const size_t nb = D / 32, bb = BITS == 8 ? 34 : 18;
    const __m256 abs = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    q8_block st;
    float F[Q8_MAXQ][32 * Q8_MAXB];
    for (int j0 = 0; j0 < n_q; j0 += Q8_MAXQ) {
        const int nq = n_q - j0 < Q8_MAXQ ? n_q - j0 : Q8_MAXQ;
        for (int j = 0; j < nq; j++)
            memset(F[j], 0, sizeof(float) * D);
        for (size_t b = 0; b < nt; b += VQ_KQ_BLOCK) {
            const size_t m = nt - b < VQ_KQ_BLOCK ? nt - b : VQ_KQ_BLOCK, np = (m + 1) / 2;
            const uint8_t *blk = codes + b * rstride;
            __m256i live[4];
            vq_wq_live(m, live);
            __m256 W[Q8_MAXQ][4];
            vq_wq_load(w, wstride, j0, nq, b, m, W);
            __m256 S[Q8_MAXB][4], Smax[4];
            for (size_t g = 0; g < nb; g++)
                _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++)
                    S[g][k] = scales8(blk + g * bb, rstride, 8 * (size_t)k, m);
            _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++) { /* max_g |d_ig| (0 past the block) */
                Smax[k] = _mm256_setzero_ps();
                for (size_t g = 0; g < nb; g++)
                    Smax[k] = _mm256_max_ps(Smax[k], _mm256_and_ps(S[g][k], abs));
            }
            for (int j = 0; j < nq; j++) {
                /* A_j = max_i |w_ji| max_g |d_ig| (= max |w_ji d_ig|: rounding is monotonic), s_j = A_j / 127,
                 * q = (w_ji * d_ig) * inv_j rounded (qaxpy.h) */
                float iv;
                const float A = vq_wq_row_scale(W[j], Smax, &iv);
                st.s[j] = A / 127.0f;
                for (size_t g = 0; g < nb; g++) {
                    __m256 a[4];
                    _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++)
                        a[k] = _mm256_mul_ps(W[j][k], S[g][k]);
                    const int32_t sum = vq_wq_quantize32(a, iv, live, st.q[j][g], BITS == 8 ? st.q16[j][g] : NULL);
                    st.off[j][g] = BITS == 4 ? 8 * sum : 0;
                }
            }
            /* pair p: rows 2p and 2p + 1 (row 2p again, with weight 0, past the block) */
            const uint8_t *pa[Q8_PAIRS], *pb[Q8_PAIRS];
            for (size_t p = 0; p < np; p++) {
                pa[p] = blk + 2 * p * rstride;
                pb[p] = 2 * p + 1 < m ? pa[p] + rstride : pa[p];
            }
            block_passes(BITS, pa, pb, np, nb, &st, nq, &F[0][0], 32 * Q8_MAXB);
        }
        for (int j = 0; j < nq; j++) {
            float *a = acc + (size_t)(j0 + j) * astride;
            for (size_t e = 0; e < D; e += 8)
                _mm256_storeu_ps(a + e, _mm256_add_ps(_mm256_loadu_ps(a + e), _mm256_loadu_ps(&F[j][e])));
        }
    }
}

void vq_qaxpy8_avx2(int bits, const uint8_t *codes, size_t rstride, size_t nt, size_t D, const float *w,
                    size_t wstride, int n_q, float *acc, size_t astride)
{
    if ((bits != 4 && bits != 8) || D % 32 || D > 32 * Q8_MAXB) {
        vq_qaxpy8_ref(bits, codes, rstride, nt, D, w, wstride, n_q, acc, astride);
        return;
    }
    if (bits == 4)
        qaxpy8_bits(4, codes, rstride, nt, D, w, wstride, n_q, acc, astride);
    else
        qaxpy8_bits(8, codes, rstride, nt, D, w, wstride, n_q, acc, astride);
}
