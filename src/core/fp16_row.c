/* fp16_row.c -- scalar reference of fp16_row.h and its dispatch. */
#include "core/fp16_row.h"
#include "core/cpu.h"
#include "core/fp16.h"

void vq_fp16_row_ref(const uint8_t *src, float *dst, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = vq_fp16_to_fp32((vq_fp16)(src[2 * i] | src[2 * i + 1] << 8));
}

void vq_fp16_from_row_ref(const float *src, uint8_t *dst, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const vq_fp16 h = vq_fp32_to_fp16(src[i]);
        dst[2 * i] = (uint8_t)h;
        dst[2 * i + 1] = (uint8_t)(h >> 8);
    }
}

void vq_fp16_row(const uint8_t *src, float *dst, size_t n)
{
    if (vq_cpu_features() & VQ_CPU_AVX2) /* AVX2 implies F16C here (cpu.h) */
        vq_fp16_row_f16c(src, dst, n);
    else
        vq_fp16_row_ref(src, dst, n);
}
