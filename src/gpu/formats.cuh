/* formats.cuh -- device-side readers of the packed codec layouts
 * (the files of src/codec/ are the definitions; docs/codecs.md the byte tables).
 *
 * The attention kernels give each token to D/8 consecutive lanes; lane
 * chunk j (0 <= j < D/8) reads 8 values of the token, in the codec's
 * accumulation domain (the rotated domain R x for rotated codecs, with the
 * token's scale/norm applied), and chan(f, j, e) says which channel value e
 * is. Every multi-byte field is little-endian and at least 2-byte aligned
 * (fp16 fields), so loads are 2-byte loads unless a layout guarantees more. */
#ifndef VQ_GPU_FORMATS_CUH
#define VQ_GPU_FORMATS_CUH

#include <cuda_fp16.h>
#include <stdint.h>

#include "veloxquant_cuda.h"

namespace vqg {

__device__ __forceinline__ float h2f(uint16_t h) { return __half2float(__ushort_as_half(h)); }
__device__ __forceinline__ uint16_t ld16(const uint8_t *p) { return *(const uint16_t *)p; }
__device__ __forceinline__ uint32_t ld32a2(const uint8_t *p)
{
    return (uint32_t)ld16(p) | (uint32_t)ld16(p + 2) << 16;
}

/* exact float of an unsigned integer below 2^23, without the quarter-rate
 * int-to-float unit: the integer is the mantissa of 2^23 + x */
__device__ __forceinline__ float u2f(uint32_t x) { return __int_as_float(0x4B000000u | x) - 8388608.0f; }

/* bytes of token t (in its page) of a block_tokens == 1 codec */
__device__ __forceinline__ const uint8_t *row1(const uint8_t *page, const vq_cuda_format &f, int t)
{
    return page + (size_t)t * f.block_bytes;
}

/* channel of value e (0..7) of lane chunk j */
__device__ __forceinline__ int chan(const vq_cuda_format &f, int j, int e)
{
    if (f.method == VQ_CUDA_Q4_0) { /* byte i of a block: value i (low), i + 16 (high) */
        int b = j >> 2, k = j & 3;
        return e < 4 ? 32 * b + 4 * k + e : 32 * b + 16 + 4 * k + (e - 4);
    }
    return 8 * j + e;
}

/* Compile-time format codes: method * 16 + bits (bits 0 where the method has
 * none); FMT_ANY reads the method and bits from the descriptor at run time. */
enum {
    FMT_ANY = 0,
    FMT_FP16 = VQ_CUDA_FP16 * 16,
    FMT_Q8 = VQ_CUDA_Q8_0 * 16,
    FMT_Q4 = VQ_CUDA_Q4_0 * 16,
    FMT_KIVI2 = VQ_CUDA_KIVI * 16 + 2,
    FMT_KIVI4 = VQ_CUDA_KIVI * 16 + 4,
    FMT_RVQ1 = VQ_CUDA_TQ_RVQ * 16 + 1,
    FMT_RVQ2 = VQ_CUDA_TQ_RVQ * 16 + 2,
    FMT_RVQ4 = VQ_CUDA_TQ_RVQ * 16 + 4,
    FMT_RABITQ1 = VQ_CUDA_RABITQ * 16 + 1
};

/* the code of a descriptor */
__host__ __device__ inline int fmt_code(const vq_cuda_format &f)
{
    switch (f.method) {
    case VQ_CUDA_FP16: return FMT_FP16;
    case VQ_CUDA_Q8_0: return FMT_Q8;
    case VQ_CUDA_Q4_0: return FMT_Q4;
    case VQ_CUDA_KIVI: return f.bits == 2 ? FMT_KIVI2 : FMT_KIVI4;
    case VQ_CUDA_TQ_RVQ: return f.bits == 1 ? FMT_RVQ1 : f.bits == 2 ? FMT_RVQ2 : FMT_RVQ4;
    default: return FMT_RABITQ1;
    }
}

template <int M>
__device__ __forceinline__ void load8m(const vq_cuda_format &f, const uint8_t *page, int t, int j,
                                       const float *tab1, const float *tab2, float v[8]);

/* the 8 values of lane chunk j of token t of a page (rvq tables in smem) */
template <int M>
__device__ __forceinline__ void load8m(const vq_cuda_format &f, const uint8_t *page, int t, int j,
                                       const float *tab1, const float *tab2, float v[8])
{
    constexpr int METH = M >> 4, B = M & 15;
    const int D = f.head_dim;
    if constexpr (M == FMT_ANY) {
        switch (fmt_code(f)) {
        case FMT_FP16: load8m<FMT_FP16>(f, page, t, j, tab1, tab2, v); break;
        case FMT_Q8: load8m<FMT_Q8>(f, page, t, j, tab1, tab2, v); break;
        case FMT_Q4: load8m<FMT_Q4>(f, page, t, j, tab1, tab2, v); break;
        case FMT_KIVI2: load8m<FMT_KIVI2>(f, page, t, j, tab1, tab2, v); break;
        case FMT_KIVI4: load8m<FMT_KIVI4>(f, page, t, j, tab1, tab2, v); break;
        case FMT_RVQ1: load8m<FMT_RVQ1>(f, page, t, j, tab1, tab2, v); break;
        case FMT_RVQ2: load8m<FMT_RVQ2>(f, page, t, j, tab1, tab2, v); break;
        case FMT_RVQ4: load8m<FMT_RVQ4>(f, page, t, j, tab1, tab2, v); break;
        default: load8m<FMT_RABITQ1>(f, page, t, j, tab1, tab2, v); break;
        }
    } else if constexpr (METH == VQ_CUDA_FP16) {
        uint4 w = *(const uint4 *)(row1(page, f, t) + 16 * j);
        const __half2 *h = (const __half2 *)&w;
#pragma unroll
        for (int i = 0; i < 4; i++) {
            float2 x = __half22float2(h[i]);
            v[2 * i] = x.x;
            v[2 * i + 1] = x.y;
        }
    } else if constexpr (METH == VQ_CUDA_Q8_0) {
        const uint8_t *b = row1(page, f, t) + 34 * (j >> 2);
        float d = h2f(ld16(b));
        const uint8_t *q = b + 2 + 8 * (j & 3);
        uint32_t lo = ld32a2(q), hi = ld32a2(q + 4);
#pragma unroll
        for (int i = 0; i < 4; i++) {
            /* signed byte b: (b ^ 0x80) - 128, exact */
            v[i] = d * (__int_as_float(0x4B000000u | (((lo >> (8 * i)) & 255u) ^ 128u)) - 8388736.0f);
            v[4 + i] = d * (__int_as_float(0x4B000000u | (((hi >> (8 * i)) & 255u) ^ 128u)) - 8388736.0f);
        }
    } else if constexpr (METH == VQ_CUDA_Q4_0) {
        const uint8_t *b = row1(page, f, t) + 18 * (j >> 2);
        float d = h2f(ld16(b));
        uint32_t w = ld32a2(b + 2 + 4 * (j & 3));
#pragma unroll
        for (int i = 0; i < 4; i++) {
            v[i] = d * (__int_as_float(0x4B000000u | ((w >> (8 * i)) & 15u)) - 8388616.0f);
            v[4 + i] = d * (__int_as_float(0x4B000000u | ((w >> (8 * i + 4)) & 15u)) - 8388616.0f);
        }
    } else if constexpr (METH == VQ_CUDA_KIVI) {
        if (f.role == VQ_ROLE_KEY) { /* per channel over a block of group tokens (a power of two) */
            const int lg = __ffs(f.group) - 1;
            const uint8_t *blk = page + (size_t)(t >> lg) * f.block_bytes;
            const int tt = t & (f.group - 1);
            uint4 sw = *(const uint4 *)(blk + 16 * j); /* block_bytes = 4D + G*B*D/8: 16-aligned */
            uint4 mw = *(const uint4 *)(blk + 2 * D + 16 * j);
            const uint8_t *row = blk + 4 * D + (size_t)tt * (B * D / 8);
            uint32_t c = B == 2 ? (uint32_t)ld16(row + 2 * j) : ld32a2(row + 4 * j);
            const __half2 *sh = (const __half2 *)&sw, *mh = (const __half2 *)&mw;
#pragma unroll
            for (int i = 0; i < 4; i++) {
                float2 s = __half22float2(sh[i]), m = __half22float2(mh[i]);
                v[2 * i] = s.x * u2f((c >> (2 * i * B)) & ((1u << B) - 1)) + m.x;
                v[2 * i + 1] = s.y * u2f((c >> ((2 * i + 1) * B)) & ((1u << B) - 1)) + m.y;
            }
        } else { /* per token over groups of channels */
            const int lg = __ffs(f.group) - 1; /* group: a power of two */
            const int ng = D >> lg;
            const uint8_t *row = row1(page, f, t);
            const int g = (8 * j) >> lg;
            float s = h2f(ld16(row + 2 * g)), m = h2f(ld16(row + 2 * ng + 2 * g));
            const uint8_t *cr = row + 4 * ng;
            uint32_t c = B == 2 ? (uint32_t)ld16(cr + 2 * j) : ld32a2(cr + 4 * j);
#pragma unroll
            for (int i = 0; i < 8; i++)
                v[i] = s * u2f((c >> (i * B)) & ((1u << B) - 1)) + m;
        }
    } else if constexpr (METH == VQ_CUDA_TQ_RVQ) {
        const uint8_t *row = row1(page, f, t);
        float n = h2f(ld16(row));
        const uint8_t *p1 = row + 2 + j * B, *p2 = row + 2 + B * D / 8 + j * B;
        uint32_t a, b;
        if constexpr (B == 1) {
            a = p1[0];
            b = p2[0];
        } else if constexpr (B == 2) {
            a = ld16(p1);
            b = ld16(p2);
        } else {
            a = ld32a2(p1);
            b = ld32a2(p2);
        }
        constexpr uint32_t mask = (1u << B) - 1;
        if constexpr (B == 1) {
            const float c10 = tab1[0], c11 = tab1[1], c20 = tab2[0], c21 = tab2[1];
#pragma unroll
            for (int i = 0; i < 8; i++)
                v[i] = ((a >> i & 1) ? c11 : c10) + ((b >> i & 1) ? c21 : c20);
#pragma unroll
            for (int i = 0; i < 8; i++)
                v[i] *= n;
        } else {
#pragma unroll
            for (int i = 0; i < 8; i++)
                v[i] = (tab1[(a >> (i * B)) & mask] + tab2[(b >> (i * B)) & mask]) * n;
        }
    } else { /* rabitq, 1 bit */
        const uint8_t *row = row1(page, f, t);
        float fac = h2f(ld16(row)) / (h2f(ld16(row + 2)) * sqrtf((float)D));
        uint32_t z = row[4 + j];
#pragma unroll
        for (int i = 0; i < 8; i++)
            v[i] = (z >> i & 1) ? fac : -fac;
    }
}

} // namespace vqg

#endif
