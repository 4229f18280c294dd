/* lut_qaxpy_ref.c -- the scalar reference of vq_lut_qaxpy
 * (kernels/lut_qaxpy.h). */
#include "kernels/lut_qaxpy.h"

#include <math.h>

#include "core/bitstream.h"
#include "kernels/kivi_qaxpy.h"

/* the int8 weights q[0..m) of weight row wj over the block's factors f;
 * returns s = (A / 127) * step */
static float block_weights(const float *wj, const float f[], size_t m, float step, int q[])
{
    float a[VQ_KQ_BLOCK], A = 0.0f;
    for (size_t i = 0; i < m; i++) {
        a[i] = wj[i] * f[i];
        A = fmaxf(A, fabsf(a[i]));
    }
    const float inv = A > 0.0f ? 127.0f / A : 0.0f;
    for (size_t i = 0; i < m; i++) {
        long r = lrintf(a[i] * inv);
        q[i] = (int)(r > 127 ? 127 : r < -127 ? -127 : r);
    }
    const float d = A / 127.0f;
    return d * step;
}

void vq_lut_qaxpy_ref(const uint8_t *codes, size_t stride, size_t nt, size_t D, int bits, const int8_t *lev,
                      float step, const float *f, const float *ftab, ptrdiff_t foff, const float *w, size_t wstride,
                      int n_q, float *acc, size_t astride)
{
    for (int j = 0; j < n_q; j++) {
        const float *wj = w + (size_t)j * wstride;
        for (size_t e0 = 0; e0 < D; e0 += 16) {
            float F[16] = { 0 };
            for (size_t b = 0; b < nt; b += VQ_KQ_BLOCK) {
                const size_t m = nt - b < VQ_KQ_BLOCK ? nt - b : VQ_KQ_BLOCK;
                int q[VQ_KQ_BLOCK];
                float fb[VQ_KQ_BLOCK];
                for (size_t i = 0; i < m; i++)
                    fb[i] = f ? f[b + i] : ftab[codes[(b + i) * stride + foff]];
                const float s = block_weights(wj + b, fb, m, step, q);
                for (size_t e = 0; e < 16; e++) {
                    int32_t I = 0;
                    for (size_t i = 0; i < m; i++)
                        I += q[i] * lev[vq_bits_get(codes + (b + i) * stride, e0 + e, bits)];
                    F[e] = fmaf(s, (float)I, F[e]);
                }
            }
            for (size_t e = 0; e < 16; e++)
                acc[(size_t)j * astride + e0 + e] += F[e];
        }
    }
}
