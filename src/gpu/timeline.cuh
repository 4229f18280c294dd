/* timeline.cuh -- diagnostic only (compile time -DVQ_TIMELINE, never in the
 * library's normal build): %globaltimer stamps at fixed points of the split
 * and reduce kernels, for finding where a call's fixed time goes (Round
 * gpu22 in docs/gpu.md). Each translation unit that stamps has its own
 * array (a __device__ variable per unit); vq_timeline_read_mma /
 * vq_timeline_read_red copy them out. Stamp s of CTA i (linear block
 * index, at most VQ_TL_CTAS) is written by one thread; a later call
 * overwrites the earlier one's. */
#ifndef VQ_GPU_TIMELINE_CUH
#define VQ_GPU_TIMELINE_CUH
#ifdef VQ_TIMELINE
#include <stddef.h>
#include <stdint.h>

#define VQ_TL_CTAS 4096
#define VQ_TL_STAMPS 8

__device__ __forceinline__ uint64_t vq_globaltimer()
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
__device__ __forceinline__ unsigned vq_cta_linear()
{
    return blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
}
#define VQ_TL_STAMP(arr, s)                                 \
    do {                                                    \
        const unsigned ci_ = vq_cta_linear();               \
        if (ci_ < VQ_TL_CTAS)                               \
            arr[ci_][s] = vq_globaltimer();                 \
    } while (0)

/* copies min(n, VQ_TL_CTAS) CTAs' stamps (VQ_TL_STAMPS each) to host */
extern "C" int vq_timeline_read_mma(uint64_t *host, size_t n);
extern "C" int vq_timeline_read_red(uint64_t *host, size_t n);

/* In the one translation unit that stamps into `arr`: the array and its
 * reader `read` (one of the two above). */
#define VQ_TL_DEFINE(arr, read)                                                                      \
    __device__ uint64_t arr[VQ_TL_CTAS][VQ_TL_STAMPS];                                               \
    extern "C" int read(uint64_t *host, size_t n)                                                    \
    {                                                                                                \
        if (n > VQ_TL_CTAS)                                                                          \
            n = VQ_TL_CTAS;                                                                          \
        return cudaMemcpyFromSymbol(host, arr, n * VQ_TL_STAMPS * sizeof(uint64_t)) == cudaSuccess ? 0 \
                                                                                                  : -1; \
    }

/* stamp s of this CTA, by its thread 0 */
#define VQ_TL_STAMP0(arr, s)                                \
    do {                                                    \
        if (threadIdx.x == 0)                               \
            VQ_TL_STAMP(arr, s);                            \
    } while (0)
#endif
#endif
