/* vexp_poly.h -- the exp of the SIMD twins of vexp.h (vexp_avx2.c,
 * vexp_avx512.c), written once for both register widths: W is 256 or 512,
 * and the macros name the intrinsics _mm<W>_*, which the two instruction
 * sets spell alike. Include only from those files and vexp_avx512.h.
 *
 * exp(t) = 2^k * exp(r), k = round(t / ln 2), r = t - k ln 2 (ln 2 split
 * in two parts so r is exact enough), exp(r) by the minimax polynomial
 * used by Cephes' expf on |r| <= ln(2)/2. VQ_EXP_DEFINE puts it together
 * for the AVX2 twin, which passes its rounding, clamps t to >= VQ_EXP_LO
 * (so 2^k stays normal) and flushes arguments below it to 0; the AVX-512
 * twin uses the reduction and the polynomial and applies 2^k by VSCALEFPS,
 * with the same bits. */
#ifndef VQ_CORE_VEXP_POLY_H
#define VQ_CORE_VEXP_POLY_H

#define VQ_EXP_LO (-87.3f)
#define VQ_EXP_LOG2E 1.44269504088896341f

#define VQ_EXP_OP(W, op) _mm##W##_##op
#define VQ_EXP_C(W, c) VQ_EXP_OP(W, set1_ps)(c)

/* r = t - k ln 2 */
#define VQ_EXP_REDUCE(W, k, t)                                                                                \
    VQ_EXP_OP(W, fnmadd_ps)(k, VQ_EXP_C(W, -2.12194440e-4f), VQ_EXP_OP(W, fnmadd_ps)(k, VQ_EXP_C(W, 0.693359375f), t))

/* exp(r) = 1 + r + r^2 (c5 + r (c4 + r (... + r c0))) */
#define VQ_EXP_POLY(W, r)                                                                                     \
    VQ_EXP_OP(W, fmadd_ps)(                                                                                   \
        VQ_EXP_OP(W, fmadd_ps)(                                                                               \
            VQ_EXP_OP(W, fmadd_ps)(                                                                           \
                VQ_EXP_OP(W, fmadd_ps)(                                                                       \
                    VQ_EXP_OP(W, fmadd_ps)(VQ_EXP_OP(W, fmadd_ps)(VQ_EXP_C(W, 1.9875691500e-4f), r,           \
                                                                  VQ_EXP_C(W, 1.3981999507e-3f)),             \
                                           r, VQ_EXP_C(W, 8.3334519073e-3f)),                                 \
                    r, VQ_EXP_C(W, 4.1665795894e-2f)),                                                        \
                r, VQ_EXP_C(W, 1.6666665459e-1f)),                                                            \
            r, VQ_EXP_C(W, 5.0000001201e-1f)),                                                                \
        VQ_EXP_OP(W, mul_ps)(r, r), VQ_EXP_OP(W, add_ps)(r, VQ_EXP_C(W, 1.0f)))

/* p * 2^k (k holds integers) */
#define VQ_EXP_SCALE(W, k, p)                                                                                 \
    VQ_EXP_OP(W, mul_ps)(p, _mm##W##_castsi##W##_ps(VQ_EXP_OP(W, slli_epi32)(                                 \
                                VQ_EXP_OP(W, add_epi32)(VQ_EXP_OP(W, cvtps_epi32)(k), VQ_EXP_OP(W, set1_epi32)(127)), 23)))

/* static inline __m<W> NAME(__m<W> t): exp(t) for t in [VQ_EXP_LO, 0];
 * ROUND(x) rounds x to the nearest integer */
#define VQ_EXP_DEFINE(NAME, W, ROUND)                                                                         \
    static inline __m##W NAME(__m##W t)                                                                       \
    {                                                                                                         \
        __m##W k = ROUND(VQ_EXP_OP(W, mul_ps)(t, VQ_EXP_C(W, VQ_EXP_LOG2E)));                                 \
        __m##W r = VQ_EXP_REDUCE(W, k, t);                                                                    \
        return VQ_EXP_SCALE(W, k, VQ_EXP_POLY(W, r));                                                         \
    }

#endif
