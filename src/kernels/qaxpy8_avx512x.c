/* qaxpy8_avx512x.c -- AVX-512 VNNI + VBMI twin of vq_qaxpy8
 * (kernels/qaxpy.h): the reference's bits.
 *
 * Per block of 32 rows the rows' block scales are gathered into columns,
 * and the int8 weights of every (weight row, column block) made at once.
 * Then per column block and quad of rows, the quad's 16 code bytes (q4_0;
 * q8_0: two runs of 16) are transposed by one VPERMB so that 32-bit lane b
 * holds byte b of rows 0..3: q4_0's low and high nibbles are then values b
 * and 16 + b, q8_0's bytes (flipped to unsigned, +128) values b and
 * 16 + b; VPDPBUSD against the quad's four weights (one broadcast word)
 * adds the exact sums, and the offset (8 or 128 times the weights' sum)
 * comes off once per block before the float fold. */
#include "kernels/qaxpy.h"

#include <immintrin.h>
#include <string.h>

#include "kernels/kivi_qaxpy.h"
#include "kernels/rows16_avx512.h"
#include "kernels/wq_avx512x.h"

#define Q8_MAXQ 4  /* weight rows per pass */
#define Q8_MAXB 16 /* column blocks: D <= 512 */

/* column block g of a block of m rows: the NQ weight rows' integer sums,
 * folded into F[j][g] */
static inline __attribute__((always_inline)) void
block_column(const int BITS, const int NQ, const uint8_t *blk, size_t rstride, size_t m, size_t g, __m512i tidx,
             int8_t qw[Q8_MAXQ][Q8_MAXB][VQ_KQ_BLOCK], const float sc[Q8_MAXQ][Q8_MAXB],
             const int32_t sq[Q8_MAXQ][Q8_MAXB], __m512 F[Q8_MAXQ][Q8_MAXB][2], vq_pf_share *pf)
{
    const size_t off = g * (BITS == 8 ? 34 : 18) + 2;
    __m512i I[Q8_MAXQ][2];
    _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++) I[j][0] = I[j][1] = _mm512_setzero_si512();
    for (size_t u = 0; 4 * u < m; u++) {
        vq_pf_step(pf);
        const uint8_t *p[4];
        vq_quad_rows(blk, rstride, off, u, m, p);
        __m512i P0, P1;
        if (BITS == 4) {
            const __m512i T = vq_quad_bytes(p, 0, tidx), lo = _mm512_set1_epi8(0x0f);
            P0 = _mm512_and_si512(T, lo);
            P1 = _mm512_and_si512(_mm512_srli_epi16(T, 4), lo);
        } else {
            const __m512i flip = _mm512_set1_epi8((char)0x80);
            P0 = _mm512_xor_si512(vq_quad_bytes(p, 0, tidx), flip);
            P1 = _mm512_xor_si512(vq_quad_bytes(p, 16, tidx), flip);
        }
        _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++)
        {
            int32_t wd;
            memcpy(&wd, &qw[j][g][4 * u], sizeof wd);
            const __m512i Wq = _mm512_set1_epi32(wd);
            I[j][0] = _mm512_dpbusd_epi32(I[j][0], P0, Wq);
            I[j][1] = _mm512_dpbusd_epi32(I[j][1], P1, Wq);
        }
    }
    _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++)
    {
        const __m512i corr = _mm512_set1_epi32((BITS == 8 ? 128 : 8) * sq[j][g]);
        const __m512 s = _mm512_set1_ps(sc[j][g]);
        for (int h = 0; h < 2; h++)
            F[j][g][h] = _mm512_fmadd_ps(s, _mm512_cvtepi32_ps(_mm512_sub_epi32(I[j][h], corr)), F[j][g][h]);
    }
}

static inline __attribute__((always_inline)) void qaxpy8_bits(const int BITS, const uint8_t *codes, size_t rstride,
                                                              size_t nt, size_t D, const float *w, size_t wstride,
                                                              int n_q, float *acc, size_t astride)
{
    const size_t nb = D / 32, bb = BITS == 8 ? 34 : 18;
    const __m512i tidx = vq_quad_index();
    /* row r's offset in a half block (gathers) */
    const __m512i rix = vq_rows16_index(rstride);
    for (int j0 = 0; j0 < n_q; j0 += Q8_MAXQ) {
        const int nq = n_q - j0 < Q8_MAXQ ? n_q - j0 : Q8_MAXQ;
        __m512 F[Q8_MAXQ][Q8_MAXB][2];
        for (int j = 0; j < nq; j++)
            for (size_t g = 0; g < nb; g++)
                F[j][g][0] = F[j][g][1] = _mm512_setzero_ps();
        vq_pf_share pf = vq_block_fetch(codes, rstride, nt, nb, j0 == 0); /* the first pass streams the rows */
        for (size_t b = 0; b < nt; b += VQ_KQ_BLOCK) {
            __mmask16 vm[2];
            const size_t m = vq_block_start(b, nt, vm);
            const uint8_t *blk = codes + b * rstride;
            /* the rows' block scales as columns (rows past m: 0): one
             * gather of 16 rows' words per column block and half */
            const __mmask16 v0 = vm[0], v1 = vm[1];
            __m512 W[Q8_MAXQ][2], V[Q8_MAXQ * Q8_MAXB + 3], Dv[Q8_MAXB][2];
            for (size_t g = 0; g < nb; g++)
                for (int h = 0; h < 2; h++) {
                    const uint8_t *at = blk + 16 * (size_t)h * rstride + g * bb;
                    Dv[g][h] = vq_low_halves16(vq_rows16_words(at, rix, vm[h]));
                }
            for (int j = 0; j < nq; j++) {
                const float *wj = w + (size_t)(j0 + j) * wstride + b;
                W[j][0] = _mm512_maskz_loadu_ps(v0, wj), W[j][1] = _mm512_maskz_loadu_ps(v1, wj + 16);
                for (size_t g = 0; g < nb; g++)
                    V[(size_t)j * nb + g] = /* max(|a0|, |a1|), sign cleared */
                        _mm512_range_ps(_mm512_mul_ps(W[j][0], Dv[g][0]), _mm512_mul_ps(W[j][1], Dv[g][1]), 0x0B);
            }
            /* the scales, then the int8 weights and their sums (kernels/wq_avx512x.h) */
            const size_t np = (size_t)nq * nb;
            float Am[Q8_MAXQ * Q8_MAXB + 3], inv[Q8_MAXQ * Q8_MAXB + 3];
            vq_weight_scales(V, np, Am, inv);
            int8_t qw[Q8_MAXQ][Q8_MAXB][VQ_KQ_BLOCK];
            float sc[Q8_MAXQ][Q8_MAXB];
            int32_t sq[Q8_MAXQ][Q8_MAXB];
            for (int j = 0; j < nq; j++)
                for (size_t g = 0; g < nb; g++) {
                    const size_t k = (size_t)j * nb + g;
                    sc[j][g] = Am[k];
                    sq[j][g] = vq_round_weights(_mm512_mul_ps(W[j][0], Dv[g][0]), _mm512_mul_ps(W[j][1], Dv[g][1]),
                                                inv[k], vm, qw[j][g]);
                }
            for (size_t g = 0; g < nb; g++)
                switch (nq) { /* a constant count: the sums stay in registers */
                case 4: block_column(BITS, 4, blk, rstride, m, g, tidx, qw, sc, sq, F, &pf); break;
                case 3: block_column(BITS, 3, blk, rstride, m, g, tidx, qw, sc, sq, F, &pf); break;
                case 2: block_column(BITS, 2, blk, rstride, m, g, tidx, qw, sc, sq, F, &pf); break;
                default: block_column(BITS, 1, blk, rstride, m, g, tidx, qw, sc, sq, F, &pf); break;
                }
        }
        for (int j = 0; j < nq; j++) {
            float *a = acc + (size_t)(j0 + j) * astride;
            for (size_t g = 0; g < nb; g++)
                for (int h = 0; h < 2; h++) {
                    float *e = a + 32 * g + 16 * (size_t)h;
                    _mm512_storeu_ps(e, _mm512_add_ps(_mm512_loadu_ps(e), F[j][g][h]));
                }
        }
    }
}

void vq_qaxpy8_avx512x(int bits, const uint8_t *codes, size_t rstride, size_t nt, size_t D, const float *w,
                       size_t wstride, int n_q, float *acc, size_t astride)
{
    if ((bits != 4 && bits != 8) || D % 32 || D > 32 * Q8_MAXB || rstride > (1u << 26)) {
        vq_qaxpy8_ref(bits, codes, rstride, nt, D, w, wstride, n_q, acc, astride);
        return;
    }
    if (bits == 4)
        qaxpy8_bits(4, codes, rstride, nt, D, w, wstride, n_q, acc, astride);
    else
        qaxpy8_bits(8, codes, rstride, nt, D, w, wstride, n_q, acc, astride);
}
