/* gpu_host_util.h -- host helpers shared by the GPU test (tests/gpu/test_gpu.cu)
 * and the GPU benchmark (bench/gpu/bench_gpu.cu): a CUDA-status check that
 * prints and exits (these are programs, not the library), and a seeded
 * xorshift64 generator with uniform and Gaussian draws (random data, never
 * zeros). One copy per program (static). */
#ifndef VQ_GPU_HOST_UTIL_H
#define VQ_GPU_HOST_UTIL_H

#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define CK(x)                                                                                    \
    do {                                                                                         \
        cudaError_t e_ = (x);                                                                    \
        if (e_ != cudaSuccess) {                                                                 \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(2);                                                                             \
        }                                                                                        \
    } while (0)

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static inline uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* uniform in [0, 1) */
static inline double unif(void) { return (double)(rnd() >> 11) / 9007199254740992.0; }

/* standard normal (Box-Muller) */
static inline float gauss(void)
{
    const double u = unif() + 1e-12, v = unif();
    return (float)(sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v));
}

#endif
