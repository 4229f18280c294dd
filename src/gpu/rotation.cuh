/* rotation.cuh -- the codecs' randomized Hadamard rotation on the GPU, for
 * head_dim a power of two (rotation.h: R = H_D * diag(sigma), H_D the
 * normalised Walsh-Hadamard transform). Applied in shared memory to `rows`
 * vectors of D floats by all `nthreads` threads of the CTA (each must call:
 * there are barriers inside). The butterflies are those of core/hadamard.c
 * (stage h = 1, 2, ..., D/2: x[j], x[j+h] <- x[j]+x[j+h], x[j]-x[j+h]; then
 * one multiply by 1/sqrtf(D)), so results are bit-identical to the CPU's. */
#ifndef VQ_GPU_ROTATION_CUH
#define VQ_GPU_ROTATION_CUH

#include <stdint.h>

namespace vqg {

template <int D, int ROWS>
__device__ __forceinline__ void fwht_smem(float *x, int tid, int nthreads)
{
    for (int h = 1; h < D; h <<= 1) {
        for (int i = tid; i < ROWS * D / 2; i += nthreads) {
            int r = i / (D / 2), k = i % (D / 2);
            int jj = (k / h) * 2 * h + k % h; /* first of the pair */
            float *v = x + r * D;
            float a = v[jj], b = v[jj + h];
            v[jj] = a + b;
            v[jj + h] = a - b;
        }
        __syncthreads();
    }
    const float s = 1.0f / sqrtf((float)D);
    for (int i = tid; i < ROWS * D; i += nthreads)
        x[i] *= s;
    __syncthreads();
}

template <int D, int ROWS>
__device__ __forceinline__ void apply_signs_smem(float *x, const uint8_t *sign, int tid, int nthreads)
{
    for (int i = tid; i < ROWS * D; i += nthreads) {
        int c = i % D;
        if (sign[c >> 3] >> (c & 7) & 1)
            x[i] = -x[i];
    }
    __syncthreads();
}

/* x <- R x */
template <int D, int ROWS>
__device__ __forceinline__ void rot_forward_smem(float *x, const uint8_t *sign, int tid, int nthreads)
{
    apply_signs_smem<D, ROWS>(x, sign, tid, nthreads);
    fwht_smem<D, ROWS>(x, tid, nthreads);
}

/* x <- R^T x */
template <int D, int ROWS>
__device__ __forceinline__ void rot_inverse_smem(float *x, const uint8_t *sign, int tid, int nthreads)
{
    fwht_smem<D, ROWS>(x, tid, nthreads);
    apply_signs_smem<D, ROWS>(x, sign, tid, nthreads);
}

/* x <- R x for one row of D floats in shared memory by one warp (no
 * block barrier; the caller synchronises before other warps read the row),
 * then x <- x * post: lane l holds elements l + 32 j; the butterflies of
 * stages h < 32 pair lanes l, l ^ h by shuffles, the others lie inside a
 * lane. The same butterflies in the same stage order and the same two
 * multiplies as rot_forward_smem followed by a multiply by post, so the
 * same bits (Round gpu22 in docs/gpu.md: 9 block barriers fewer in the
 * tensor-core kernel's query setup). */
template <int D>
__device__ __forceinline__ void rot_forward_warp(float *x, const uint8_t *sign, int lane, float post)
{
    static_assert(D % 32 == 0 && (D & (D - 1)) == 0, "D: a power of two, at least 32");
    constexpr int J = D / 32;
    float v[J];
#pragma unroll
    for (int j = 0; j < J; j++) {
        const int c = lane + 32 * j;
        v[j] = x[c];
        if (sign[c >> 3] >> (c & 7) & 1)
            v[j] = -v[j];
    }
#pragma unroll
    for (int h = 1; h < 32; h <<= 1) {
        const bool hi = lane & h; /* this lane holds x[jj + h] of its pairs */
#pragma unroll
        for (int j = 0; j < J; j++) {
            const float o = __shfl_xor_sync(0xffffffffu, v[j], h);
            v[j] = hi ? o - v[j] : v[j] + o;
        }
    }
#pragma unroll
    for (int h = 1; h < J; h <<= 1) /* stages 32 h */
#pragma unroll
        for (int j = 0; j < J; j++)
            if (!(j & h)) {
                const float a = v[j], b = v[j + h];
                v[j] = a + b;
                v[j + h] = a - b;
            }
    const float s = 1.0f / sqrtf((float)D);
#pragma unroll
    for (int j = 0; j < J; j++)
        x[lane + 32 * j] = (v[j] * s) * post;
}

} // namespace vqg

#endif
