/* rope.h -- the RoPE turn of one vector by a table row (prerope scoring,
 * cache/prerope.c; the forward pass's queries and keys, model/ops.c).
 *
 * rope_pairs(x, cs, half, neox, sgn): x holds 2*half floats; pair i is
 * (x[i], x[i + half]) when neox, else (x[2i], x[2i + 1]); cs holds the
 * row's half cosines, then its half sines. Each pair (a, b) becomes
 *   (a*c - b*s, a*s + b*c)  with c = cs[i], s = sgn * cs[half + i],
 * sgn = 1 (forward) or -1 (backward), in that order of operations (two
 * products, then one subtraction or addition; no fused multiply-add), so
 * every variant has the reference's bits. half is a multiple of 16 (the
 * reference alone takes any half). */
#ifndef VQ_KERNELS_ROPE_H
#define VQ_KERNELS_ROPE_H

#include <stddef.h>
#include <stdint.h>

void vq_rope_pairs_ref(float *x, const float *cs, size_t half, int neox, float sgn);
void vq_rope_pairs_avx2(float *x, const float *cs, size_t half, int neox, float sgn);
void vq_rope_pairs_avx512(float *x, const float *cs, size_t half, int neox, float sgn);

/* Keys stored before RoPE as per-channel affine integer codes (kivix keys,
 * cache/prerope.h), scored without a decoded block:
 *
 * rope_codes_dot(k, q, qstride, n_q, out, ostride): for token i < k->n,
 *   v_i[e] = fmaf(s[e], code_i[e], m[e])
 * with code_i[e] the e-th of the D codes of `bits` bits (1..8) packed LSB
 * first from codes + i*D*bits/8 (D*bits a multiple of 8); then patches:
 * v_i[pch[p]] = pval[p] for p in [pstart[i], pstart[i+1]) in order
 * (pstart NULL: none); then v_i turned forward by the table row
 * tab + rows[i]*D with rope_pairs' pairing, but each pair (a, b) with
 * (c, s) = (cs[i], cs[half + i]) becoming
 *   (fmaf(a, c, -(b*s)), fmaf(b, c, a*s))
 * (one product rounded, then one fused multiply-add: an AVX-512
 * fmaddsub on adjacent pairs); then
 *   out[j*ostride + i] = sum_e q[j*qstride + e] * v_i[e]
 * as dense_dot of the same table on the turned rows (the reference: the
 * scalar dense_dot). So every variant's v_i has the reference's bits and
 * the scores agree to float rounding (v_i differs from rope_pairs applied
 * to the decoded key by float rounding only). D a multiple of 32 up to
 * 512, n_q >= 1; no allocation. */
typedef struct vq_rope_keys {
    const uint8_t *codes;
    int bits;
    size_t D, n;
    const float *s, *m;     /* D scales, D offsets */
    const uint32_t *pstart; /* n + 1 patch starts, or NULL */
    const uint16_t *pch;    /* patched channel (< D) */
    const float *pval;      /* patched value */
    const float *tab;       /* RoPE rows: D/2 cosines, then D/2 sines */
    const int32_t *rows;    /* row of each token */
    int neox;               /* pairing as rope_pairs */
} vq_rope_keys;

void vq_rope_codes_dot_ref(const vq_rope_keys *k, const float *q, size_t qstride, int n_q, float *out,
                           size_t ostride);
/* AVX2 + FMA, and VBMI (byte permutes, multishifts); D not a multiple of
 * 64 goes to the reference */
void vq_rope_codes_dot_avx2(const vq_rope_keys *k, const float *q, size_t qstride, int n_q, float *out,
                            size_t ostride);
void vq_rope_codes_dot_avx512x(const vq_rope_keys *k, const float *q, size_t qstride, int n_q, float *out,
                               size_t ostride);

#endif
