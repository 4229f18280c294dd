/* lut_qaxpy.h -- weighted sums of rows of code levels (TurboQuant's values
 * in the rotated domain, kernels.h lut_axpy) with the weights and the
 * levels both int8, so that they meet in integer dot products (VNNI).
 *
 * vq_lut_qaxpy(codes, stride, nt, D, bits, lev, step, f, ftab, foff, w,
 * wstride, n_q, acc, astride): row i holds D codes c_ie of `bits` bits (1,
 * 2 or 4), packed LSB first at codes + i*stride, standing for the values
 * f_i * step * lev[c_ie] (lev: 2^bits levels in [-127, 127]; a codec
 * rounds its float levels L_c to lev_c = round(L_c / step) with step =
 * max |L| / 127). The rows' factors f_i: f[i], or with f NULL
 * ftab[codes[i*stride + foff]] (a byte code per row, 256 floats; foff may
 * be negative: a field before the codes, 4 bytes of the row readable
 * there). For each weight row j
 * (w_ji = w[j*wstride + i]) and channel e it adds F_je to acc[j*astride +
 * e] (one add), where:
 *   the rows form blocks of VQ_KQ_BLOCK (kivi_qaxpy.h) from the first (the
 *   last may be short); per block and j: a_i = w_ji * f_i (one multiply),
 *   A = max |a_i|, s = (A / 127) * step (two roundings), q_i = a_i * (127 /
 *   A) rounded to nearest even and held to [-127, 127] (all 0 when A is
 *   0), I_e = sum_i q_i lev[c_ie] (exact), F_je = fmaf(s, (float)I_e,
 *   F_je) block after block from 0.
 * Every variant returns the reference's bits (for finite inputs). Against
 * the float sum sum_i w_ji f_i L[c_ie], the weights' rounding adds at most
 * A / 254 * |lev| * step per row and the levels' at most |a_i| * step / 2.
 * D is a multiple of 16. */
#ifndef VQ_KERNELS_LUT_QAXPY_H
#define VQ_KERNELS_LUT_QAXPY_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

typedef void vq_lut_qaxpy_fn(const uint8_t *codes, size_t stride, size_t nt, size_t D, int bits, const int8_t *lev,
                             float step, const float *f, const float *ftab, ptrdiff_t foff, const float *w,
                             size_t wstride, int n_q, float *acc, size_t astride);

/* a codec's n float levels L as lev and step above: step = max |L| / 127
 * (1 when every level is 0, so that lev is 0 and finite), lev[c] =
 * round(L[c] / step) (lrintf) */
static inline void vq_lut_qaxpy_levels(const float *L, int n, int8_t *lev, float *step)
{
    float lmax = 0.0f;
    for (int i = 0; i < n; i++)
        lmax = fmaxf(lmax, fabsf(L[i]));
    *step = lmax > 0.0f ? lmax / 127.0f : 1.0f;
    for (int i = 0; i < n; i++)
        lev[i] = (int8_t)lrintf(L[i] / *step);
}

/* 1: rows of D codes of `bits` bits that both SIMD twins below take (the
 * AVX-512 one's rule, the narrower: bits 1, 2 or 4, D a multiple of 16 up
 * to 512, D * bits / 8 code bytes a multiple of 16 or exactly 8); 0: the
 * reference only. Codecs choose their int8 defaults by it (never by the
 * machine's instruction set, so a spec means the same sums everywhere). */
static inline int vq_lut_qaxpy_simd_shape(size_t D, int bits)
{
    const size_t cb = D * (size_t)(bits > 0 ? bits : 0) / 8;
    return (bits == 1 || bits == 2 || bits == 4) && D % 16 == 0 && D <= 512 && (cb % 16 == 0 || cb == 8);
}

vq_lut_qaxpy_fn vq_lut_qaxpy_ref;
/* AVX2 + FMA: the integer sums taken exactly in float FMAs (every partial
 * sum an integer below 2^24); D a multiple of 16 (else the reference) */
vq_lut_qaxpy_fn vq_lut_qaxpy_avx2;
/* VNNI + VBMI: per quad of rows the code bytes transposed by one VPERMB
 * (32-bit lane b: byte b of the four rows; rows of 8 code bytes: eight
 * rows, lanes alternating between the two quads), each code position
 * shifted down and turned into its level + 128 by a VPERMB table, VPDPBUSD
 * against the quad's weights; the 128 * sum q_i off once per block. The
 * rows' code bytes D * bits / 8 a multiple of 16 or 8, D <= 512 (else the
 * reference). */
vq_lut_qaxpy_fn vq_lut_qaxpy_avx512x;

#endif
