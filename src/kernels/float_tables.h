/* float_tables.h -- per-query float tables that score packed codes a
 * nibble at a time (kernels.h ftab_score: the float form of the nibble
 * tables' "fast scan"), for the codecs whose query stays in floats
 * (turboquant at 1 and 2 bits, qjl).
 *
 * A set of codes is read as nibbles, nibble p being bits 4p..4p+3 (LSB
 * first); a query has one table of 16 floats per nibble, table p at floats
 * 16p..16p+15, and scores a set by
 *   A = sum_p table_p[nibble p]   (from 0.0f, p = 0, 1, ... in order).
 * Two kinds of tables, each written by one builder (kernels.h sign_tables,
 * level_tables) and read by ftab_score:
 *   sign tables (1-bit codes, bit set = +1, clear = -1) of y[0..m), m a
 *     multiple of 4: table p, entry e = ((s0 y[4p] + s1 y[4p+1]) + s2
 *     y[4p+2]) + s3 y[4p+3], s_k = +1 where bit k of e is set, else -1;
 *     A = <y, s(z)> up to rounding.
 *   level tables (b-bit codes c_d, b = 1, 2 or 4, with levels L_d[c]: the
 *     codebook lut_lo for d < n_lo, lut for the others) of y[0..D), D*b a
 *     multiple of 4: table p covers the k = 4/b coordinates d = pk ..
 *     pk+k-1, entry e = the products y[d] * L_d[code of d in e] added in
 *     order of d (each product and sum rounded on its own);
 *     A = sum_d y[d] L_d[c_d] up to rounding.
 * Every sum is rounded on its own in the order given, so every variant
 * (kernels.h sign_tables, level_tables: the _ref functions of ftab_score_ref.c, AVX2 and
 * AVX-512 twins with 16 entries of a table across their lanes) writes the
 * same bits. */
#ifndef VQ_KERNELS_FLOAT_TABLES_H
#define VQ_KERNELS_FLOAT_TABLES_H

#include <stddef.h>

/* floats of the tables of a set of `bits` bits (bits/4 tables of 16) */
static inline size_t vq_float_tables_floats(size_t bits) { return 4 * bits; }

/* the sign tables of y[0..m) into tab[0 .. 4m) (m a multiple of 4) */
typedef void vq_sign_tables_fn(const float *y, size_t m, float *tab);

/* the level tables of y[0..D) for b-bit codes (b = 1, 2 or 4; 2^b levels
 * at lut, and at lut_lo for the coordinates below n_lo) into
 * tab[0 .. 4Db) (D*b a multiple of 4) */
typedef void vq_level_tables_fn(const float *y, size_t D, int b, const float *lut, const float *lut_lo, size_t n_lo,
                                float *tab);

vq_sign_tables_fn vq_sign_tables_ref, vq_sign_tables_avx2, vq_sign_tables_avx512;
vq_level_tables_fn vq_level_tables_ref, vq_level_tables_avx2, vq_level_tables_avx512;

/* the lane patterns of the SIMD twins: for slot j (0 <= j < 4/b) of a
 * level table, entry e's level of codebook w (0: lut, 1: lut_lo) at
 * v[(2j + w)*16 + e] = (w ? lut_lo : lut)[(e >> jb) & (2^b - 1)] */
static inline void vq_level_lanes(int b, const float *lut, const float *lut_lo, float *v)
{
    const unsigned L = 1u << b;
    for (unsigned j = 0; j < 4u / (unsigned)b; j++)
        for (unsigned w = 0; w < 2; w++)
            for (unsigned e = 0; e < 16; e++)
                v[(2 * j + w) * 16 + e] = (w ? lut_lo : lut)[(e >> (j * (unsigned)b)) & (L - 1)];
}

#endif
