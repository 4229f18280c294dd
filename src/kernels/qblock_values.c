/* qblock_values.c -- scalar references of qblock_values.h. */
#include "kernels/qblock_values.h"

#include "core/fp16.h"

static float scale_of(const uint8_t *b) { return vq_fp16_to_fp32((vq_fp16)(b[0] | b[1] << 8)); }

void vq_q8_0_values_ref(const uint8_t *blk, size_t nblk, float *out)
{
    for (size_t k = 0; k < nblk; k++, blk += 34, out += 32) {
        float d = scale_of(blk);
        for (int i = 0; i < 32; i++)
            out[i] = d * (float)(int8_t)blk[2 + i];
    }
}

void vq_q4_0_values_ref(const uint8_t *blk, size_t nblk, float *out)
{
    for (size_t k = 0; k < nblk; k++, blk += 18, out += 32) {
        float d = scale_of(blk);
        for (int j = 0; j < 16; j++) {
            out[j] = d * (float)((blk[2 + j] & 15) - 8);
            out[j + 16] = d * (float)((blk[2 + j] >> 4) - 8);
        }
    }
}
