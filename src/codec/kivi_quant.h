/* kivi_quant.h -- KIVI's quantization of one group, one definition for the
 * CPU codec (codec/kivi.c) and the GPU quantizer (src/gpu/quantize.cu), so
 * that both write the same bytes.
 *
 * kivi_range: fp16 scale s = (max - m)/(2^bits - 1) and min m of n values at
 * stride, both rounded to fp16 (inputs beyond the fp16 range saturate to
 * +-65504; a constant or NaN group gets s = 0). kivi_code: the code of x
 * against the rounded s and m, round half up, in [0, maxc]; NaN gives 0.
 *
 * Compiled by a C compiler the functions are plain static inline C; by nvcc
 * they are __host__ __device__ (VQ_HOST_DEVICE). Device code relies on
 * nvcc's default IEEE division and no fused multiply-add (there is no
 * multiply): do not build it with --use_fast_math. */
#ifndef VQ_CODEC_KIVI_QUANT_H
#define VQ_CODEC_KIVI_QUANT_H

#include <stddef.h>

#include "core/fp16.h"

#ifdef __CUDACC__
#include <cuda_fp16.h>
#define VQ_HOST_DEVICE __host__ __device__
#else
#define VQ_HOST_DEVICE
#endif

#define KIVI_FP16_MAX 65504.0f

/* f rounded to the nearest fp16 (ties to even), as a float */
VQ_HOST_DEVICE static inline float kivi_rt16(float f)
{
#ifdef __CUDA_ARCH__
    return __half2float(__float2half_rn(f));
#else
    return vq_fp16_to_fp32(vq_fp32_to_fp16(f));
#endif
}

VQ_HOST_DEVICE static inline float kivi_clamp16(float f)
{
    return f > KIVI_FP16_MAX ? KIVI_FP16_MAX : (f < -KIVI_FP16_MAX ? -KIVI_FP16_MAX : f);
}

/* code of x for fp16-rounded scale s and min m; NaN-safe */
VQ_HOST_DEVICE static inline unsigned kivi_code(float x, float s, float m, unsigned maxc)
{
    if (!(s > 0.0f))
        return 0;
    float t = (x - m) / s + 0.5f;
    if (t >= (float)maxc)
        return maxc;
    return t > 0.0f ? (unsigned)t : 0u;
}

/* fp16 scale/min of n values at stride, returned rounded */
VQ_HOST_DEVICE static inline void kivi_range(const float *x, size_t n, size_t stride, int bits, float *s, float *m)
{
    float lo = x[0], hi = x[0];
    for (size_t i = 1; i < n; i++) {
        float v = x[i * stride];
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
    }
    lo = kivi_clamp16(lo);
    hi = kivi_clamp16(hi);
    float m16 = kivi_rt16(lo);
    float scale = (hi - m16) / (float)((1 << bits) - 1);
    if (!(scale > 0.0f)) /* constant group, or NaN */
        scale = 0.0f;
    *s = kivi_rt16(kivi_clamp16(scale));
    *m = m16;
}

#endif
