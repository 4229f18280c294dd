/* qdot_ref.c -- int8 query preparation and the scalar reference of
 * vq_qdot (kernels/qdot.h). */
#include "kernels/qdot.h"

#include <math.h>
#include <string.h>

#include "core/fp16.h"

size_t vq_qdot_query_bytes(size_t D) { return D / 32 * (sizeof(float) + sizeof(int32_t)) + D; }

void vq_qdot_prepare(const float *x, size_t D, uint8_t *dst)
{
    size_t nb = D / 32;
    uint8_t *dp = dst, *sp = dst + nb * sizeof(float);
    int8_t *q = (int8_t *)(void *)(dst + nb * (sizeof(float) + sizeof(int32_t)));
    for (size_t b = 0; b < nb; b++) {
        const float *xb = x + b * 32;
        float amax = 0.0f;
        for (int e = 0; e < 32; e++)
            amax = fmaxf(amax, fabsf(xb[e]));
        float d = amax / 127.0f, inv = amax > 0.0f ? 127.0f / amax : 0.0f;
        int32_t sum = 0;
        for (int e = 0; e < 32; e++) {
            long v = lrintf(xb[e] * inv);
            v = v > 127 ? 127 : v < -127 ? -127 : v;
            q[b * 32 + (size_t)e] = (int8_t)v;
            sum += (int32_t)v;
        }
        memcpy(dp + b * sizeof(float), &d, sizeof d);
        memcpy(sp + b * sizeof(int32_t), &sum, sizeof sum);
    }
}

static int32_t block_isum_ref(int bits, const uint8_t *blk, const int8_t *qb, int32_t sq)
{
    int32_t isum = 0;
    if (bits == 8) {
        for (int e = 0; e < 32; e++)
            isum += (int32_t)(uint8_t)(blk[2 + e] ^ 0x80u) * qb[e];
        return isum - 128 * sq;
    }
    for (int e = 0; e < 16; e++)
        isum += (int32_t)(blk[2 + e] & 0x0f) * qb[e] + (int32_t)(blk[2 + e] >> 4) * qb[e + 16];
    return isum - 8 * sq;
}

void vq_qdot_ref(int bits, const uint8_t *codes, size_t rstride, size_t nt, size_t D, const uint8_t *qbuf,
                 size_t qstride, int n_q, float *s, size_t sstride)
{
    vq_qdot_blocks(block_isum_ref, bits, codes, rstride, nt, D, qbuf, qstride, n_q, s, sstride);
}
