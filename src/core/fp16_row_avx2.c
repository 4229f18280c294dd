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

void vq_fp16_from_row_f16c(const float *src, uint8_t *dst, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 x = _mm256_loadu_ps(src + i);
        if (_mm256_movemask_ps(_mm256_cmp_ps(x, x, _CMP_UNORD_Q))) { /* a NaN: the reference's canonical one */
            vq_fp16_from_row_ref(src + i, dst + 2 * i, 8);
            continue;
        }
        _mm_storeu_si128((__m128i *)(void *)(dst + 2 * i), _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT));
    }
    if (i < n)
        vq_fp16_from_row_ref(src + i, dst + 2 * i, n - i);
}
