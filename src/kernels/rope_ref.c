/* rope_ref.c -- scalar references of rope.h's turn and of its scoring of
 * pre-RoPE integer keys. */
#include <math.h>

#include "core/bitstream.h"
#include "kernels/dense.h"
#include "kernels/rope.h"

void vq_rope_pairs_ref(float *x, const float *cs, size_t half, int neox, float sgn)
{
    for (size_t i = 0; i < half; i++) {
        const size_t i0 = neox ? i : 2 * i, i1 = neox ? i + half : 2 * i + 1;
        const float a = x[i0], b = x[i1], c = cs[i], s = sgn * cs[half + i];
        const float ac = a * c, bs = b * s, as = a * s, bc = b * c;
        x[i0] = ac - bs;
        x[i1] = as + bc;
    }
}

void vq_rope_codes_dot_ref(const vq_rope_keys *k, const float *q, size_t qstride, int n_q, float *out, size_t ostride)
{
    const size_t D = k->D;
    float v[512];
    for (size_t i = 0; i < k->n; i++) {
        const uint8_t *c = k->codes + i * D * (size_t)k->bits / 8;
        for (size_t e = 0; e < D; e++)
            v[e] = fmaf(k->s[e], (float)vq_bits_get(c, e, k->bits), k->m[e]);
        if (k->pstart)
            for (uint32_t p = k->pstart[i]; p < k->pstart[i + 1]; p++)
                v[k->pch[p]] = k->pval[p];
        const float *cs = k->tab + (size_t)k->rows[i] * D;
        const size_t half = D / 2;
        for (size_t e = 0; e < half; e++) { /* rope.h: one product, then one fused multiply-add */
            const size_t i0 = k->neox ? e : 2 * e, i1 = k->neox ? e + half : 2 * e + 1;
            const float a = v[i0], b = v[i1], co = cs[e], si = cs[half + e];
            v[i0] = fmaf(a, co, -(b * si));
            v[i1] = fmaf(b, co, a * si);
        }
        vq_dense_dot_ref(q, qstride, n_q, v, VQ_ELEM_F32, 1, D, out + i, ostride);
    }
}
