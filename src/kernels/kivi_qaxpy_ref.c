/* kivi_qaxpy_ref.c -- the scalar reference of vq_kivi_qaxpy
 * (kernels/kivi_qaxpy.h). */
#include "kernels/kivi_qaxpy.h"

#include <math.h>

#include "core/bitstream.h"
#include "core/fp16.h"
#include "core/vexp.h"

static inline float half_at(const uint8_t *p, size_t i)
{
    return vq_fp16_to_fp32((vq_fp16)(p[2 * i] | (p[2 * i + 1] << 8)));
}

static inline int code_at(const uint8_t *src, size_t i, int bits) { return (int)vq_bits_get(src, i, bits); }

/* the block's scale d_j = A / 127 of weight row wj (m rows), A = max over
 * its rows i and the ng groups g of |w_i s_ig|, and inv = 127 / A (0 when
 * A is 0) */
static float block_scale(const uint8_t *rows, size_t rstride, size_t m, size_t ng, const float *wj, float *inv)
{
    float A = 0.0f;
    for (size_t i = 0; i < m; i++)
        for (size_t g = 0; g < ng; g++)
            A = fmaxf(A, fabsf(wj[i] * half_at(rows + i * rstride, g)));
    *inv = A > 0.0f ? 127.0f / A : 0.0f;
    return A / 127.0f;
}

/* q = (w * s) * inv rounded to nearest even, held to [-127, 127] */
static int weight_q(float w, float inv, float s)
{
    const long r = lrintf(w * s * inv);
    return (int)(r > 127 ? 127 : r < -127 ? -127 : r);
}

void vq_kivi_qaxpy_ref(const uint8_t *rows, size_t rstride, int bits, size_t nt, size_t D, size_t group, const float *w,
                       size_t wstride, int n_q, float *acc, size_t astride)
{
    const size_t ng = D / group;
    const float h = (float)(1 << (bits - 1)); /* v = s (c - h) + (m + h s): centred codes */
    for (int j = 0; j < n_q; j++) {
        const float *wj = w + (size_t)j * wstride;
        for (size_t g = 0; g < ng; g++) {
            float lanes[16] = {0};
            for (size_t i = 0; i < nt; i++)
                lanes[i % 16] = fmaf(wj[i], fmaf(h, half_at(rows + i * rstride, g), half_at(rows + i * rstride + 2 * ng, g)),
                                     lanes[i % 16]);
            const float M = vq_sum16_lanes(lanes);
            for (size_t e0 = g * group; e0 < (g + 1) * group; e0 += 16) {
                float F[16] = {0};
                for (size_t b = 0; b < nt; b += VQ_KQ_BLOCK) {
                    const size_t m = nt - b < VQ_KQ_BLOCK ? nt - b : VQ_KQ_BLOCK;
                    const uint8_t *blk = rows + b * rstride;
                    float inv;
                    const float d = block_scale(blk, rstride, m, ng, wj + b, &inv);
                    int q[VQ_KQ_BLOCK];
                    for (size_t i = 0; i < m; i++)
                        q[i] = weight_q(wj[b + i], inv, half_at(blk + i * rstride, g));
                    for (size_t e = 0; e < 16; e++) {
                        int32_t I = 0;
                        for (size_t i = 0; i < m; i++)
                            I += q[i] * (code_at(blk + i * rstride + 4 * ng, e0 + e, bits) - (1 << (bits - 1)));
                        F[e] = fmaf(d, (float)I, F[e]);
                    }
                }
                for (size_t e = 0; e < 16; e++)
                    acc[(size_t)j * astride + e0 + e] += F[e] + M;
            }
        }
    }
}
