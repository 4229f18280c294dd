/* mma_ops.cuh -- the tensor-core operations that the tensor-core kernel
 * (attention_mma.cu) and the vecinfer kernel (attention_vecinfer.cu) share:
 * the m16n8k16 fp16 product with float32 accumulators and the hi/lo fp16
 * split of float pairs. */
#ifndef VQ_GPU_MMA_OPS_CUH
#define VQ_GPU_MMA_OPS_CUH

#include <cuda_fp16.h>
#include <stdint.h>

namespace vqg {

/* c += a b, m16n8k16, fp16 operands (a: 16 x 16 row-major fragment, b:
 * 16 x 8 column-major fragment), float32 accumulators */
__device__ __forceinline__ void mma16816(float c[4], const uint4 &a, uint32_t b0, uint32_t b1)
{
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t h2u(__half2 h) { return *(uint32_t *)&h; }

/* x0, x1 -> hi = fp16(x), lo = fp16(x - hi), as half2 pairs */
__device__ __forceinline__ void split2(float x0, float x1, uint32_t &hi, uint32_t &lo)
{
    const __half2 h = __floats2half2_rn(x0, x1);
    const float2 f = __half22float2(h);
    hi = h2u(h);
    lo = h2u(__floats2half2_rn(x0 - f.x, x1 - f.y));
}

} // namespace vqg

#endif
