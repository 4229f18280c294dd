/* outlier_pieces.h -- the adds pass shared by kernels.h outlier_adds' SIMD
 * twins (outlier_adds_avx2.c, outlier_adds_avx512.c): the table is taken
 * in pieces of VQ_OA_PIECE entries; a piece's tokens and each query's
 * products are made in registers, then added to the scores here, up to
 * VQ_OA_QS queries in one scalar pass. Only each token's order matters
 * (the adds of different tokens are independent), and a pass in entry order
 * keeps it; a scatter would not where two entries share a token. */
#ifndef VQ_KERNELS_OUTLIER_PIECES_H
#define VQ_KERNELS_OUTLIER_PIECES_H

#include <stddef.h>
#include <stdint.h>

#define VQ_OA_PIECE 64 /* entries prepared before their adds */
#define VQ_OA_QS 4     /* queries whose adds share one pass over a piece */

/* s_j[tok[i]] += prod[j][i] for i < cnt in order, j < NJ (rows sstride apart) */
static inline __attribute__((always_inline)) void vq_oa_adds(const int NJ, const uint32_t *tok, int cnt,
                                                             const float (*prod)[VQ_OA_PIECE], float *s,
                                                             size_t sstride)
{
    float *s0 = s, *s1 = s + sstride, *s2 = s + 2 * sstride, *s3 = s + 3 * sstride;
    for (int i = 0; i < cnt; i++) {
        const uint32_t t = tok[i];
        s0[t] += prod[0][i];
        if (NJ > 1)
            s1[t] += prod[1][i];
        if (NJ > 2)
            s2[t] += prod[2][i];
        if (NJ > 3)
            s3[t] += prod[3][i];
    }
}

/* the adds of nj (1..VQ_OA_QS) queries from row s on */
static inline void vq_oa_adds_n(int nj, const uint32_t *tok, int cnt, const float (*prod)[VQ_OA_PIECE], float *s,
                                size_t sstride)
{
    switch (nj) {
    case 4: vq_oa_adds(4, tok, cnt, prod, s, sstride); break;
    case 3: vq_oa_adds(3, tok, cnt, prod, s, sstride); break;
    case 2: vq_oa_adds(2, tok, cnt, prod, s, sstride); break;
    default: vq_oa_adds(1, tok, cnt, prod, s, sstride); break;
    }
}

#endif
