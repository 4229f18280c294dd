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

} // namespace vqg

#endif
