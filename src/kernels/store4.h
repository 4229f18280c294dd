/* store4.h -- the last, partial store of four float lanes, shared by the
 * SIMD kernels that write scores four tokens at a time (SSE only, so any
 * x86 SIMD file may include it). */
#ifndef VQ_KERNELS_STORE4_H
#define VQ_KERNELS_STORE4_H

#include <immintrin.h>
#include <stddef.h>

/* the first min(4, nt - i) lanes of r into s[i..] */
static inline void vq_store4_upto(float *s, size_t i, size_t nt, __m128 r)
{
    if (i + 4 <= nt) {
        _mm_storeu_ps(s + i, r);
        return;
    }
    float t[4];
    _mm_storeu_ps(t, r);
    for (size_t k = 0; i + k < nt; k++)
        s[i + k] = t[k];
}

#endif
