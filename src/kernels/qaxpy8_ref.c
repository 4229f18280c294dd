/* qaxpy8_ref.c -- the scalar reference of vq_qaxpy8 (kernels/qaxpy.h). */
#include "kernels/qaxpy.h"

#include <math.h>

#include "core/fp16.h"
#include "kernels/kivi_qaxpy.h"

static float scale_at(const uint8_t *blk)
{
    return vq_fp16_to_fp32((vq_fp16)(blk[0] | blk[1] << 8));
}

/* signed code e (0..31) of a block */
static int code_of(int bits, const uint8_t *blk, int e)
{
    if (bits == 8)
        return (int8_t)blk[2 + e];
    return (e < 16 ? blk[2 + e] & 15 : blk[2 + e - 16] >> 4) - 8;
}

void vq_qaxpy8_ref(int bits, const uint8_t *codes, size_t rstride, size_t nt, size_t D, const float *w, size_t wstride,
                   int n_q, float *acc, size_t astride)
{
    const size_t bb = bits == 8 ? 34 : 18, nb = D / 32;
    for (int j = 0; j < n_q; j++) {
        const float *wj = w + (size_t)j * wstride;
        float *aj = acc + (size_t)j * astride;
        for (size_t g = 0; g < nb; g++) {
            float F[32] = {0};
            for (size_t b = 0; b < nt; b += VQ_KQ_BLOCK) {
                const size_t m = nt - b < VQ_KQ_BLOCK ? nt - b : VQ_KQ_BLOCK;
                /* the weight row's scale over the block's rows and every column block */
                float A = 0.0f;
                for (size_t i = 0; i < m; i++)
                    for (size_t c = 0; c < nb; c++)
                        A = fmaxf(A, fabsf(wj[b + i] * scale_at(codes + (b + i) * rstride + c * bb)));
                const float inv = A > 0.0f ? 127.0f / A : 0.0f, s = A / 127.0f;
                int q[VQ_KQ_BLOCK];
                for (size_t i = 0; i < m; i++) {
                    long r = lrintf(wj[b + i] * scale_at(codes + (b + i) * rstride + g * bb) * inv);
                    q[i] = (int)(r > 127 ? 127 : r < -127 ? -127 : r);
                }
                for (int e = 0; e < 32; e++) {
                    int32_t I = 0;
                    for (size_t i = 0; i < m; i++)
                        I += q[i] * code_of(bits, codes + (b + i) * rstride + g * bb, e);
                    F[e] = fmaf(s, (float)I, F[e]);
                }
            }
            for (int e = 0; e < 32; e++)
                aj[g * 32 + (size_t)e] += F[e];
        }
    }
}
