/* fp16_row_avx2.c -- F16C twin of vq_fp16_row_ref (compiled with -mf16c;
 * called only after dispatch). Little-endian host: the bytes are halves. */
#include <immintrin.h>
#include <string.h>

#include "core/fp16_row.h"

void vq_fp16_row_f16c(const uint8_t *src, float *dst, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(src + 2 * i))));
    if (i < n) {
        uint16_t h[8] = { 0 };
        memcpy(h, src + 2 * i, 2 * (n - i));
        float f[8];
        _mm256_storeu_ps(f, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)h)));
        memcpy(dst + i, f, sizeof(float) * (n - i));
    }
}
